"""Gradient compression for korovod.keras (hvd.Compression), on any Keras 3 backend: none, fp16
(Horovod's) and bf16 (korovod's), over korovod.common.compression with Keras's dtype names and
keras.ops.cast."""

import keras

from korovod.common.compression import Compressor, NoneCompressor, TensorCast, compression_for

_KERAS_CAST = TensorCast(dtype_of=lambda tensor: keras.backend.standardize_dtype(tensor.dtype),
                         is_float=lambda dtype: "float" in dtype, cast=keras.ops.cast)

# Named after the public module (korovod.keras.compression re-exports these): reprs and pickles.
Compression = compression_for("korovod.keras.compression", _KERAS_CAST, "float16", "bfloat16")
FP16Compressor = Compression.fp16
BF16Compressor = Compression.bf16

__all__ = ["Compressor", "NoneCompressor", "FP16Compressor", "BF16Compressor", "Compression"]
