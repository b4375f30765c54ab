"""TensorFlow tensors across libkorovod's C ABI, without copies.

In: a tensor's buffer address comes from its DLPack export (tf.experimental.dlpack.to_dlpack,
read through ctypes; the capsule keeps the buffer alive while the runtime reads it).
Out: allreduce/broadcast write into a buffer allocated here (numpy on the CPU, an uninitialised
TF tensor on a GPU) that becomes a tf.Tensor through DLPack; outputs the runtime allocates
itself (allgather, alltoall, reducescatter) move into TensorFlow by korovod_handle_take_dlpack ->
tf.experimental.dlpack.from_dlpack. Nothing is compiled against TensorFlow.
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf

from korovod.common import _lib
from korovod.common import native_ops
from korovod.common.native_ops import DL_BFLOAT, DL_BOOL, DL_FLOAT, DL_INT, DL_UINT, Buffer

_to_dlpack = tf.experimental.dlpack.to_dlpack
_from_dlpack = tf.experimental.dlpack.from_dlpack

# tf dtype -> (korovod dtype code, DLPack type code, bits)
_TYPES = {
    tf.uint8: (_lib.UINT8, DL_UINT, 8),
    tf.int8: (_lib.INT8, DL_INT, 8),
    tf.uint16: (_lib.UINT16, DL_UINT, 16),
    tf.int16: (_lib.INT16, DL_INT, 16),
    tf.int32: (_lib.INT32, DL_INT, 32),
    tf.int64: (_lib.INT64, DL_INT, 64),
    tf.float16: (_lib.FLOAT16, DL_FLOAT, 16),
    tf.bfloat16: (_lib.BFLOAT16, DL_BFLOAT, 16),
    tf.float32: (_lib.FLOAT32, DL_FLOAT, 32),
    tf.float64: (_lib.FLOAT64, DL_FLOAT, 64),
    tf.bool: (_lib.BOOL, DL_BOOL, 8),
}

SUPPORTED_DTYPES = tuple(_TYPES)


def dtype_code(dtype: tf.DType) -> int:
    try:
        return _TYPES[dtype][0]
    except KeyError:
        raise ValueError(f"Tensor type {dtype.name} is not supported by korovod "
                         f"(supported: {', '.join(d.name for d in _TYPES)})") from None


class Operand:
    """An eager tensor pinned for the runtime: its Buffer and the DLPack capsule that keeps its
    memory alive until the operation ends."""

    __slots__ = ("tensor", "buffer", "capsule")

    def __init__(self, tensor: tf.Tensor):
        code = dtype_code(tensor.dtype)
        self.tensor = tensor
        self.capsule = _to_dlpack(tensor)
        address, device = native_ops.dlpack_address(self.capsule)
        self.buffer = Buffer(address, code, tensor.shape, device)


def _numpy_dtype(dtype: tf.DType):
    # bfloat16 crosses as uint16 bits: numpy exports no DLPack type for ml_dtypes' bfloat16.
    return np.uint16 if dtype == tf.bfloat16 else dtype.as_numpy_dtype


# TensorFlow's kernels require EIGEN_MAX_ALIGN_BYTES (64) alignment of every CPU buffer they read
# (a CHECK that aborts the process otherwise); numpy only guarantees 16.
_TF_ALIGNMENT = 64


def aligned_empty(shape, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    count = int(np.prod(shape, dtype=np.int64))
    raw = np.empty(count * dtype.itemsize + _TF_ALIGNMENT, dtype=np.uint8)
    offset = (-raw.ctypes.data) % _TF_ALIGNMENT
    return raw[offset:offset + count * dtype.itemsize].view(dtype).reshape(shape)


class Output:
    """A buffer the runtime writes an allreduce/broadcast result into, of the input's dtype,
    shape and device; result() makes it a tf.Tensor without copying."""

    __slots__ = ("array", "gpu_tensor", "capsule", "address", "dtype")

    def __init__(self, like: Operand):
        tensor = like.tensor
        self.dtype = tensor.dtype
        self.gpu_tensor = None
        self.capsule = None
        if like.buffer.device < 0:
            self.array = aligned_empty(like.buffer.shape, _numpy_dtype(tensor.dtype))
            self.address = self.array.ctypes.data
        else:
            self.array = None
            with tf.device(tensor.device):
                self.gpu_tensor = tf.raw_ops.Empty(shape=like.buffer.shape, dtype=tensor.dtype, init=False)
            self.capsule = _to_dlpack(self.gpu_tensor)
            self.address, _ = native_ops.dlpack_address(self.capsule)

    def result(self) -> tf.Tensor:
        if self.gpu_tensor is not None:
            return self.gpu_tensor
        result = _from_dlpack(self.array.__dlpack__())
        return tf.bitcast(result, tf.bfloat16) if self.dtype == tf.bfloat16 else result


def take_output(rt, handle: int, dtype: tf.DType) -> tf.Tensor:
    """The runtime-allocated output of `handle` as a tf.Tensor that owns that memory."""
    _, dl_code, dl_bits = _TYPES[dtype]
    return native_ops.take_output(rt, handle, dl_code, dl_bits, _from_dlpack)


def operands(tensors: Sequence[tf.Tensor]) -> List[Operand]:
    return [Operand(t) for t in tensors]


def wait_for_gpu_inputs(inputs: Sequence[Operand]) -> None:
    """GPU tensors: TensorFlow computes them asynchronously on streams Python cannot reach (so no
    korovod ready event can be recorded on them); wait for the devices before the runtime reads.
    CPU tensors are complete once they exist."""
    if any(x.buffer.device >= 0 for x in inputs):
        tf.test.experimental.sync_devices()


def encode(name: Optional[str]) -> Optional[bytes]:
    return None if name is None else name.encode()


def names_for_group(name: Optional[str], count: int) -> List[Optional[bytes]]:
    """Horovod's names for the members of a grouped op: <name>_<i>of<n>."""
    if name is None:
        return [None] * count
    return [f"{name}_{i + 1}of{count}".encode() for i in range(count)]


def splits_list(splits) -> Optional[Tuple[int, ...]]:
    if splits is None:
        return None
    values = np.asarray(splits.numpy() if hasattr(splits, "numpy") else splits)
    if values.dtype.kind not in "iu":
        raise ValueError(f"alltoall splits must contain integers, not {values.dtype}")
    if values.ndim != 1:
        raise ValueError(f"alltoall splits must be a 1-D tensor, not {values.ndim}-D")
    return tuple(int(v) for v in values)
