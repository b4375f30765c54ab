"""Gradient compression for korovod.keras, on any Keras 3 backend (keras.ops.cast): none, fp16
(Horovod's) and bf16 (korovod's). Floating-point tensors travel as 16-bit and are cast back."""

import keras


class Compressor:
    """Interface: compress(tensor) -> (tensor, ctx); decompress(tensor, ctx) -> tensor."""

    @staticmethod
    def compress(tensor):
        raise NotImplementedError

    @staticmethod
    def decompress(tensor, ctx):
        raise NotImplementedError


class NoneCompressor(Compressor):
    """No compression (the default)."""

    @staticmethod
    def compress(tensor):
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor


def _is_float(dtype_name: str) -> bool:
    return "float" in dtype_name


class _CastCompressor(Compressor):
    wire_dtype = None

    @classmethod
    def compress(cls, tensor):
        dtype = keras.backend.standardize_dtype(tensor.dtype)
        if _is_float(dtype) and dtype != cls.wire_dtype:
            return keras.ops.cast(tensor, cls.wire_dtype), dtype
        return tensor, dtype

    @staticmethod
    def decompress(tensor, ctx):
        if _is_float(ctx) and keras.backend.standardize_dtype(tensor.dtype) != ctx:
            return keras.ops.cast(tensor, ctx)
        return tensor


class FP16Compressor(_CastCompressor):
    """Sends floating-point tensors as float16."""

    wire_dtype = "float16"


class BF16Compressor(_CastCompressor):
    """Sends floating-point tensors as bfloat16."""

    wire_dtype = "bfloat16"


class Compression:
    """The available compressors: Compression.none, Compression.fp16, Compression.bf16."""

    none = NoneCompressor
    fp16 = FP16Compressor
    bf16 = BF16Compressor
