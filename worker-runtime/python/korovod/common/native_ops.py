"""Collectives on raw buffers over libkorovod's C ABI, for bindings that pass addresses.

Framework-neutral: a binding turns its tensors into (address, dtype code, shape, device) and
back; this module queues the operations, waits for them (GIL released, in slices so Ctrl-C gets
through), and hands runtime-allocated outputs over as DLPack capsules. Every binding uses it:
korovod.tensorflow, korovod.keras (JAX backend) and korovod.torch (torch/_native.py adds only
torch's dtypes, CUDA ready events and asynchronous handles; its synchronous allreduce inlines the
three C calls, _collectives.allreduce_now). The per-call work stays at dictionary lookups and the
C calls: no ctypes objects are built per call, shapes are cached as int64 arrays by tuple.
"""

from __future__ import annotations

import ctypes
from typing import List, Optional, Sequence, Tuple

from korovod.common import _lib
from korovod.common._state import NativeRuntime, error_for, last_error, state

_WAIT_SLICE_SECONDS = _lib.WAIT_SLICE_SECONDS
_IN_PROGRESS = _lib.ERR_IN_PROGRESS
_SHAPE_CACHE_LIMIT = 4096
_shape_arrays = state.shape_arrays  # the holder's cache: tuple(shape) -> int64 array

# DLPack type codes (dlpack.h DLDataTypeCode).
DL_INT, DL_UINT, DL_FLOAT, DL_BFLOAT, DL_BOOL = 0, 1, 2, 4, 6

_DLTENSOR_NAME = b"dltensor"  # must outlive every capsule made with it: a module constant
_capsule_new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)(
    ("PyCapsule_New", ctypes.pythonapi))
_capsule_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_IsValid", ctypes.pythonapi))
_capsule_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    """The head of a DLManagedTensor (DLPack 0.x ABI): what a "dltensor" capsule points to."""

    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


KDL_CPU, KDL_CUDA = 1, 2


def dlpack_address(capsule) -> Tuple[int, int]:
    """(data address, device) of an unconsumed "dltensor" capsule: device -1 for CPU memory, the
    CUDA ordinal for GPU memory. The capsule keeps the memory alive; it must be dense row-major."""
    tensor = DLTensor.from_address(_capsule_get_pointer(capsule, _DLTENSOR_NAME))
    kind = tensor.device.device_type
    if kind == KDL_CPU:
        device = -1
    elif kind == KDL_CUDA:
        device = tensor.device.device_id
    else:
        raise ValueError(f"korovod takes CPU and CUDA tensors, not DLPack device type {kind}")
    return (tensor.data or 0) + tensor.byte_offset, device


def runtime() -> NativeRuntime:
    return state.require()


def shape_array(shape: Tuple[int, ...]):
    """An int64 array holding `shape`, a tuple (torch.Size is one), cached by shape; passed to C
    as its address."""
    array = _shape_arrays.get(shape)
    if array is None:
        array = (ctypes.c_int64 * max(len(shape), 1))(*shape)
        if len(_shape_arrays) < _SHAPE_CACHE_LIMIT:
            _shape_arrays[tuple(shape)] = array
    return array


class Buffer:
    """One operand: its address, korovod dtype code, shape and device (-1 = CPU)."""

    __slots__ = ("address", "dtype", "shape", "device")

    def __init__(self, address: int, dtype: int, shape: Sequence[int], device: int = -1):
        self.address = address
        self.dtype = dtype
        self.shape = tuple(int(d) for d in shape)
        self.device = device


def enqueue_raw(rt: NativeRuntime, op_type: int, name: Optional[bytes], address: int,
                output_address: Optional[int], dtype: int, shape: Tuple[int, ...], device: int = -1,
                op: int = _lib.AVERAGE, prescale: float = 1.0, postscale: float = 1.0, root_rank: int = 0,
                splits_address: Optional[int] = None, num_splits: int = 0, process_set_id: int = 0,
                event=None) -> int:
    """Queues one collective on an operand given by address; returns its handle. `event`: a CUDA
    ready event the runtime waits for before it reads the input (None on CPU)."""
    handle = rt.lib.korovod_enqueue(
        rt.ptr, op_type, name, address or None, output_address or None, dtype, len(shape),
        shape_array(shape), device, op, prescale, postscale, root_rank, splits_address or None, num_splits,
        process_set_id, event)
    if handle < 0:
        raise last_error(rt, handle)
    return handle


def enqueue(rt: NativeRuntime, op_type: int, name: Optional[bytes], source: Buffer,
            output_address: Optional[int] = None, op: int = _lib.AVERAGE, prescale: float = 1.0,
            postscale: float = 1.0, root_rank: int = 0, splits=None, process_set_id: int = 0) -> int:
    """Queues one collective; returns its handle. `splits`: alltoall's rows per rank, or None
    (the runtime copies them at once)."""
    if splits is None:
        return enqueue_raw(rt, op_type, name, source.address, output_address, source.dtype, source.shape,
                           source.device, op, prescale, postscale, root_rank, None, 0, process_set_id)
    splits_array = int32_array(splits)
    return enqueue_raw(rt, op_type, name, source.address, output_address, source.dtype, source.shape,
                       source.device, op, prescale, postscale, root_rank, ctypes.addressof(splits_array),
                       len(splits), process_set_id)


def enqueue_control(rt: NativeRuntime, op_type: int, device: int = -1, process_set_id: int = 0) -> int:
    """Queues a join or barrier (no tensor)."""
    handle = rt.lib.korovod_enqueue(rt.ptr, op_type, None, None, None, _lib.UINT8, 0, None, device,
                                    _lib.AVERAGE, 1.0, 1.0, 0, None, 0, process_set_id, None)
    if handle < 0:
        raise last_error(rt, handle)
    return handle


# One operand of a group: (input address, output address or None, dtype code, shape, device,
# CUDA ready event or None).
Operand = Tuple[int, Optional[int], int, Tuple[int, ...], int, object]


def enqueue_group_raw(rt: NativeRuntime, op_type: int, names: Sequence[Optional[bytes]],
                      operands: Sequence[Operand], op: int = _lib.AVERAGE, prescale: float = 1.0,
                      postscale: float = 1.0, process_set_id: int = 0) -> List[int]:
    """Queues the ops of a group all or none, in one step (they negotiate and fuse together)."""
    lib = rt.lib
    count = len(operands)
    group = lib.korovod_group_new()
    if not group:
        raise MemoryError("korovod_group_new failed")
    try:
        for i, (address, output, dtype, shape, device, event) in enumerate(operands):
            # A refused op is remembered by the group; korovod_group_enqueue reports it with its text.
            lib.korovod_group_add(group, op_type, names[i], address or None, output or None, dtype, len(shape),
                                  shape_array(shape), device, op, prescale, postscale, 0, None, 0,
                                  process_set_id, event)
        handles = (ctypes.c_int64 * max(count, 1))()
        code = lib.korovod_group_enqueue(rt.ptr, group, handles, count)
        if code < 0:
            raise last_error(rt, code)
        return list(handles)[:count]
    finally:
        lib.korovod_group_free(group)


def enqueue_group(rt: NativeRuntime, op_type: int, names: Sequence[Optional[bytes]], sources: Sequence[Buffer],
                  output_addresses: Optional[Sequence[int]] = None, op: int = _lib.AVERAGE,
                  prescale: float = 1.0, postscale: float = 1.0, process_set_id: int = 0) -> List[int]:
    """enqueue_group_raw on Buffers."""
    operands = [(s.address, output_addresses[i] if output_addresses is not None else None, s.dtype, s.shape,
                 s.device, None) for i, s in enumerate(sources)]
    return enqueue_group_raw(rt, op_type, names, operands, op, prescale, postscale, process_set_id)


def wait(rt: NativeRuntime, handle: int, keep_alive) -> None:
    """Blocks until the op ends; on error releases the handle and raises the mapped exception.
    If the wait is interrupted, the op's buffers stay referenced for good: the runtime may still
    write them."""
    lib = rt.lib
    ptr = rt.ptr
    try:
        code = lib.korovod_wait_for(ptr, handle, _WAIT_SLICE_SECONDS)
        while code == _IN_PROGRESS:
            code = lib.korovod_wait_for(ptr, handle, _WAIT_SLICE_SECONDS)
    except BaseException:
        state.abandoned.append((rt, handle, keep_alive))
        raise
    if code:
        text = _lib.decode(lib.korovod_handle_error(ptr, handle))
        lib.korovod_release(ptr, handle)
        raise error_for(code, text)


def wait_all(rt: NativeRuntime, handles: Sequence[int], keep_alive) -> None:
    """Waits for every handle (also after one failed, so no op is left running on buffers the
    caller is about to drop). On success the caller owns the handles (takes their outputs and
    releases them); on failure all are released and the first error is raised."""
    error = None
    succeeded = []
    for index, handle in enumerate(handles):
        try:
            wait(rt, handle, keep_alive)  # releases `handle` itself when it failed
            succeeded.append(handle)
        except (ValueError, RuntimeError) as e:
            error = error or e
        except BaseException:
            state.abandoned.append((rt, list(handles[index + 1:]), keep_alive))
            raise
    if error is not None:
        release_all(rt, succeeded)
        raise error


def release(rt: NativeRuntime, handle: int) -> None:
    rt.lib.korovod_release(rt.ptr, handle)


def release_all(rt: NativeRuntime, handles: Sequence[int]) -> None:
    for handle in handles:
        rt.lib.korovod_release(rt.ptr, handle)


def take_output(rt: NativeRuntime, handle: int, dl_code: int, dl_bits: int, from_dlpack):
    """The output the runtime allocated for `handle`, moved without a copy into the framework
    tensor that `from_dlpack(capsule)` makes (the capsule's deleter frees it)."""
    managed = rt.lib.korovod_handle_take_dlpack(rt.ptr, handle, dl_code, dl_bits)
    if not managed:
        raise last_error(rt, _lib.ERR_UNKNOWN)
    capsule = None
    try:
        capsule = _capsule_new(managed, _DLTENSOR_NAME, None)
        return from_dlpack(capsule)
    except BaseException:
        # Not consumed (from_dlpack renames the capsule once it owns the memory): free it here.
        if capsule is None or _capsule_is_valid(capsule, _DLTENSOR_NAME):
            rt.lib.korovod_dlpack_delete(managed)
        raise


def received_splits(rt: NativeRuntime, handle: int, count: int) -> List[int]:
    splits = (ctypes.c_int32 * max(count, 1))()
    n = rt.lib.korovod_handle_received_splits(rt.ptr, handle, splits, count)
    if n < 0:
        raise last_error(rt, n)
    return list(splits)[:n]


def last_joined_rank(rt: NativeRuntime, handle: int) -> int:
    value = rt.lib.korovod_handle_last_joined_rank(rt.ptr, handle)
    if value < -1:
        raise last_error(rt, value)
    return value


def int32_array(values: Sequence[int]):
    return (ctypes.c_int32 * max(len(values), 1))(*[int(v) for v in values])


def barrier(process_set_id: int = 0) -> None:
    """Blocks until every rank of the process set reached the barrier (no framework needed)."""
    rt = runtime()
    handle = enqueue_control(rt, _lib.OP_BARRIER, process_set_id=process_set_id)
    wait(rt, handle, None)
    release(rt, handle)


def join(device: int = -1) -> int:
    """Horovod's join: returns the rank that joined last (the same on every rank)."""
    rt = runtime()
    handle = enqueue_control(rt, _lib.OP_JOIN, device=device)
    wait(rt, handle, None)
    try:
        return last_joined_rank(rt, handle)
    finally:
        release(rt, handle)
