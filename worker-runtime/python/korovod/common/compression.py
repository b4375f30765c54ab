"""Gradient compression for allreduce/reducescatter, shared by korovod.torch, korovod.tensorflow and
korovod.keras: none, fp16 (Horovod's) and bf16 (korovod's).

A cast compressor casts floating-point tensors to a 16-bit type before the collective and back to
the original dtype after it; other tensors pass through unchanged. Only the dtype checks and the
cast differ between frameworks: each framework's compression module passes its TensorCast to
compression_for() and gets its Compression (Horovod's hvd.Compression) back.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple


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


class TensorCast(NamedTuple):
    """How one framework reads a tensor's dtype, tells a floating-point dtype and casts."""

    dtype_of: Callable[[Any], Any]
    is_float: Callable[[Any], bool]
    cast: Callable[[Any, Any], Any]


class CastCompressor(Compressor):
    """Casts floating-point tensors to `wire_dtype` with `tensor_cast`; ctx is the original dtype.
    A framework's subclass sets both."""

    tensor_cast: TensorCast
    wire_dtype: Any = None

    @classmethod
    def compress(cls, tensor):
        dtype = cls.tensor_cast.dtype_of(tensor)
        if cls.tensor_cast.is_float(dtype) and dtype != cls.wire_dtype:
            return cls.tensor_cast.cast(tensor, cls.wire_dtype), dtype
        return tensor, dtype

    @classmethod
    def decompress(cls, tensor, ctx):
        if cls.tensor_cast.is_float(ctx) and cls.tensor_cast.dtype_of(tensor) != ctx:
            return cls.tensor_cast.cast(tensor, ctx)
        return tensor


def _cast_compressor(module: str, name: str, doc: str, tensor_cast: TensorCast, wire_dtype) -> type:
    # Named as if defined in `module`, which exports it under `name` (so it pickles and prints there).
    return type(name, (CastCompressor,), {"__module__": module, "__qualname__": name, "__doc__": doc,
                                          "tensor_cast": tensor_cast, "wire_dtype": wire_dtype})


def compression_for(module: str, tensor_cast: TensorCast, float16, bfloat16) -> type:
    """The Compression class of the framework module `module`: Compression.none, .fp16 (sends
    floating-point tensors as `float16`) and .bf16 (as `bfloat16`), cast with `tensor_cast`."""
    fp16 = _cast_compressor(module, "FP16Compressor", "Sends floating-point tensors as float16.", tensor_cast,
                            float16)
    bf16 = _cast_compressor(module, "BF16Compressor",
                            "Sends floating-point tensors as bfloat16 (float32's range, fewer mantissa bits).",
                            tensor_cast, bfloat16)
    return type("Compression", (), {
        "__module__": module, "__qualname__": "Compression",
        "__doc__": "The available compressors: Compression.none, Compression.fp16, Compression.bf16.",
        "none": NoneCompressor, "fp16": fp16, "bf16": bf16})
