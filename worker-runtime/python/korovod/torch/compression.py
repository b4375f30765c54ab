"""Gradient compression for korovod.torch (hvd.Compression): none, fp16 (Horovod's) and bf16
(korovod's), over korovod.common.compression with torch's dtypes and cast."""

import torch

from korovod.common.compression import Compressor, NoneCompressor, TensorCast, compression_for

_TORCH_CAST = TensorCast(dtype_of=lambda tensor: tensor.dtype, is_float=lambda dtype: dtype.is_floating_point,
                         cast=lambda tensor, dtype: tensor.to(dtype))

Compression = compression_for(__name__, _TORCH_CAST, torch.float16, torch.bfloat16)
FP16Compressor = Compression.fp16
BF16Compressor = Compression.bf16

__all__ = ["Compressor", "NoneCompressor", "FP16Compressor", "BF16Compressor", "Compression"]
