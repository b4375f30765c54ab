"""Gradient compression for korovod.tensorflow (hvd.Compression): none, fp16 (Horovod's) and bf16
(korovod's), over korovod.common.compression with TensorFlow's dtypes and tf.cast."""

import tensorflow as tf

from korovod.common.compression import Compressor, NoneCompressor, TensorCast, compression_for

_TF_CAST = TensorCast(dtype_of=lambda tensor: tensor.dtype, is_float=lambda dtype: dtype.is_floating,
                      cast=tf.cast)

Compression = compression_for(__name__, _TF_CAST, tf.float16, tf.bfloat16)
FP16Compressor = Compression.fp16
BF16Compressor = Compression.bf16

__all__ = ["Compressor", "NoneCompressor", "FP16Compressor", "BF16Compressor", "Compression"]
