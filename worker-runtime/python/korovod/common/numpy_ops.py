"""Collectives on numpy arrays: what korovod.keras uses where no framework binding applies (the
callbacks on every backend, the JAX backend's gradients), and every binding's object transport
(objects.py). Outputs the runtime allocates come back through DLPack without a copy."""

from __future__ import annotations

from typing import List, Optional, Sequence

import numpy as np

from korovod.common import _lib
from korovod.common import native_ops
from korovod.common.native_ops import DL_BOOL, DL_FLOAT, DL_INT, DL_UINT, Buffer

_CODES = {
    np.dtype(np.uint8): (_lib.UINT8, DL_UINT),
    np.dtype(np.int8): (_lib.INT8, DL_INT),
    np.dtype(np.uint16): (_lib.UINT16, DL_UINT),
    np.dtype(np.int16): (_lib.INT16, DL_INT),
    np.dtype(np.int32): (_lib.INT32, DL_INT),
    np.dtype(np.int64): (_lib.INT64, DL_INT),
    np.dtype(np.float16): (_lib.FLOAT16, DL_FLOAT),
    np.dtype(np.float32): (_lib.FLOAT32, DL_FLOAT),
    np.dtype(np.float64): (_lib.FLOAT64, DL_FLOAT),
    np.dtype(np.bool_): (_lib.BOOL, DL_BOOL),
}


def _buffer(array: np.ndarray) -> Buffer:
    try:
        code = _CODES[array.dtype][0]
    except KeyError:
        raise ValueError(f"Array type {array.dtype} is not supported by korovod") from None
    return Buffer(array.ctypes.data, code, array.shape)


def _contiguous(arrays: Sequence) -> List[np.ndarray]:
    # np.require keeps 0-d arrays 0-d (ascontiguousarray makes them 1-d).
    return [np.require(np.asarray(a), requirements="C") for a in arrays]


class _Capsule:
    """What np.from_dlpack takes: an object with __dlpack__ (the runtime's capsule) on the CPU."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, stream=None, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return (native_ops.KDL_CPU, 0)


def _from_dlpack(capsule):
    return np.from_dlpack(_Capsule(capsule))


def _names(prefix: Optional[str], count: int) -> List[Optional[bytes]]:
    if prefix is None:
        return [None] * count
    return [f"{prefix}.{i}".encode() for i in range(count)] if count > 1 else [prefix.encode()]


def allreduce(arrays: Sequence, name: Optional[str], op: int = _lib.AVERAGE, prescale: float = 1.0,
              postscale: float = 1.0, process_set_id: int = 0, names: Optional[Sequence[bytes]] = None
              ) -> List[np.ndarray]:
    """Each array reduced over the set (all queued before any is waited for)."""
    rt = native_ops.runtime()
    inputs = _contiguous(arrays)
    outputs = [np.empty_like(a) for a in inputs]
    names = list(names) if names is not None else _names(name, len(inputs))
    handles = [native_ops.enqueue(rt, _lib.OP_ALLREDUCE, n, _buffer(a), o.ctypes.data, op, prescale, postscale,
                                  process_set_id=process_set_id) for a, o, n in zip(inputs, outputs, names)]
    native_ops.wait_all(rt, handles, (inputs, outputs))
    native_ops.release_all(rt, handles)
    return outputs


def broadcast(arrays: Sequence, root_rank: int, name: Optional[str], process_set_id: int = 0) -> List[np.ndarray]:
    rt = native_ops.runtime()
    inputs = _contiguous(arrays)
    outputs = [np.empty_like(a) for a in inputs]
    handles = [native_ops.enqueue(rt, _lib.OP_BROADCAST, n, _buffer(a), o.ctypes.data, root_rank=int(root_rank),
                                  process_set_id=process_set_id)
               for a, o, n in zip(inputs, outputs, _names(name, len(inputs)))]
    native_ops.wait_all(rt, handles, (inputs, outputs))
    native_ops.release_all(rt, handles)
    return outputs


def _gathered(op_type: int, array, name: Optional[str], op: int, process_set_id: int) -> np.ndarray:
    rt = native_ops.runtime()
    source = np.ascontiguousarray(array)
    handle = native_ops.enqueue(rt, op_type, None if name is None else name.encode(), _buffer(source), None, op,
                                process_set_id=process_set_id)
    native_ops.wait(rt, handle, source)
    try:
        code = _CODES[source.dtype]
        return native_ops.take_output(rt, handle, code[1], source.dtype.itemsize * 8, _from_dlpack)
    finally:
        native_ops.release(rt, handle)


def allgather(array, name: Optional[str], process_set_id: int = 0) -> np.ndarray:
    return _gathered(_lib.OP_ALLGATHER, array, name, _lib.AVERAGE, process_set_id)


def reducescatter(array, name: Optional[str], op: int = _lib.AVERAGE, process_set_id: int = 0) -> np.ndarray:
    return _gathered(_lib.OP_REDUCESCATTER, array, name, op, process_set_id)
