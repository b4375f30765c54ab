"""Gradient compression for allreduce/reducescatter: none, fp16 (Horovod's) and bf16 (korovod's).

A compressor casts floating-point tensors to a 16-bit type before the collective and back to the
original dtype after it; other tensors pass through unchanged.
"""

import tensorflow as tf


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


class _CastCompressor(Compressor):
    """Casts floating-point tensors to `wire_dtype`; ctx is the original dtype."""

    wire_dtype = None

    @classmethod
    def compress(cls, tensor):
        if tensor.dtype.is_floating and tensor.dtype != cls.wire_dtype:
            return tf.cast(tensor, cls.wire_dtype), tensor.dtype
        return tensor, tensor.dtype

    @staticmethod
    def decompress(tensor, ctx):
        if ctx.is_floating and tensor.dtype != ctx:
            return tf.cast(tensor, ctx)
        return tensor


class FP16Compressor(_CastCompressor):
    """Sends floating-point tensors as float16."""

    wire_dtype = tf.float16


class BF16Compressor(_CastCompressor):
    """Sends floating-point tensors as bfloat16 (float32's range, fewer mantissa bits)."""

    wire_dtype = tf.bfloat16


class Compression:
    """The available compressors: Compression.none, Compression.fp16, Compression.bf16."""

    none = NoneCompressor
    fp16 = FP16Compressor
    bf16 = BF16Compressor
