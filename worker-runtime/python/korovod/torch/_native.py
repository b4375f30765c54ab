"""torch tensors across libkorovod's C ABI: dtype codes, shapes, ready events, enqueue/wait, and
runtime-allocated outputs handed back as zero-copy DLPack tensors.

The synchronous allreduce goes through here on every training step, so the per-call work is kept
to dictionary lookups and three C calls (enqueue, wait, release): no ctypes objects are built per
call, shapes are cached as int64 arrays by tuple.
"""

from __future__ import annotations

import ctypes
from typing import Callable, List, Optional, Sequence

import torch
import torch.utils.dlpack

from korovod.common import _lib
from korovod.common._state import NativeRuntime, error_for, last_error, state  # noqa: F401 (last_error: re-exported)

_WAIT_SLICE_SECONDS = _lib.WAIT_SLICE_SECONDS
_IN_PROGRESS = _lib.ERR_IN_PROGRESS

DTYPE_CODES = {
    torch.uint8: _lib.UINT8,
    torch.int8: _lib.INT8,
    torch.int16: _lib.INT16,
    torch.int32: _lib.INT32,
    torch.int64: _lib.INT64,
    torch.float16: _lib.FLOAT16,
    torch.bfloat16: _lib.BFLOAT16,
    torch.float32: _lib.FLOAT32,
    torch.float64: _lib.FLOAT64,
    torch.bool: _lib.BOOL,
}
if hasattr(torch, "uint16"):  # torch >= 2.3
    DTYPE_CODES[torch.uint16] = _lib.UINT16

# DLPack (type code, bits) of outputs the runtime allocates. bool crosses as uint8 and is viewed
# back: torch 1.13's from_dlpack does not know kDLBool. kDLBfloat (4) is accepted since 1.10.
_DL_INT, _DL_UINT, _DL_FLOAT, _DL_BFLOAT = 0, 1, 2, 4
_DLPACK_TYPES = {
    torch.uint8: (_DL_UINT, 8),
    torch.int8: (_DL_INT, 8),
    torch.int16: (_DL_INT, 16),
    torch.int32: (_DL_INT, 32),
    torch.int64: (_DL_INT, 64),
    torch.float16: (_DL_FLOAT, 16),
    torch.bfloat16: (_DL_BFLOAT, 16),
    torch.float32: (_DL_FLOAT, 32),
    torch.float64: (_DL_FLOAT, 64),
    torch.bool: (_DL_UINT, 8),
}
if hasattr(torch, "uint16"):
    _DLPACK_TYPES[torch.uint16] = (_DL_UINT, 16)

_DLTENSOR_NAME = b"dltensor"  # must outlive every capsule made with it: a module constant
_capsule_new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)(
    ("PyCapsule_New", ctypes.pythonapi))
_capsule_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_IsValid", ctypes.pythonapi))

_SHAPE_CACHE_LIMIT = 4096
_shape_arrays = state.shape_arrays  # the holder's cache: tuple(shape) -> int64 array


def runtime() -> NativeRuntime:
    return state.require()


def dtype_code(tensor: torch.Tensor) -> int:
    try:
        return DTYPE_CODES[tensor.dtype]
    except KeyError:
        raise ValueError(f"Tensor type {tensor.dtype} is not supported.") from None


def shape_array(shape):
    """An int64 array holding `shape` (cached by shape; passed to C as its address)."""
    array = _shape_arrays.get(shape)
    if array is None:
        array = (ctypes.c_int64 * max(len(shape), 1))(*shape)
        if len(_shape_arrays) < _SHAPE_CACHE_LIMIT:
            _shape_arrays[tuple(shape)] = array
    return array


def device_and_event(rt: NativeRuntime, tensor: torch.Tensor):
    """(-1, None) for a CPU tensor; for a CUDA tensor its device and a ready event recorded on
    torch's current stream, so the collective reads the data only once that stream produced it."""
    if not tensor.is_cuda:
        return -1, None
    device = tensor.get_device()
    stream = torch.cuda.current_stream(device).cuda_stream
    err = _lib.error_buffer()
    event = rt.lib.korovod_cuda_event_record(device, stream, err, len(err))
    if not event:
        raise RuntimeError(f"korovod cannot take CUDA tensors on device {device}: {_lib.decode(err.value)}")
    return device, event


def enqueue(rt: NativeRuntime, op_type: int, name: Optional[bytes], tensor: torch.Tensor,
            output: Optional[torch.Tensor], op: int = _lib.AVERAGE, prescale: float = 1.0,
            postscale: float = 1.0, root_rank: int = 0, splits=None, process_set_id: int = 0) -> int:
    """Queues one collective; returns its handle. `tensor` (and `output`) must be contiguous."""
    code = dtype_code(tensor)
    shape = tensor.shape
    device, event = device_and_event(rt, tensor) if tensor.is_cuda else (-1, None)
    splits_address, num_splits = (0, 0) if splits is None else (splits.data_ptr(), splits.numel())
    handle = rt.lib.korovod_enqueue(
        rt.ptr, op_type, name, tensor.data_ptr(), output.data_ptr() if output is not None else None, code,
        len(shape), shape_array(shape), device, op, prescale, postscale, root_rank,
        splits_address or None, num_splits, process_set_id, event)
    if handle < 0:
        raise last_error(rt, handle)
    return handle


def enqueue_control(rt: NativeRuntime, op_type: int, device: int = -1, process_set_id: int = 0) -> int:
    """Queues a join or barrier (no tensor)."""
    handle = rt.lib.korovod_enqueue(rt.ptr, op_type, None, None, None, _lib.UINT8, 0, None, device,
                                    _lib.AVERAGE, 1.0, 1.0, 0, None, 0, process_set_id, None)
    if handle < 0:
        raise last_error(rt, handle)
    return handle


def enqueue_group(rt: NativeRuntime, op_type: int, names: Sequence[Optional[bytes]],
                  tensors: Sequence[torch.Tensor], outputs: Optional[Sequence[torch.Tensor]],
                  op: int = _lib.AVERAGE, prescale: float = 1.0, postscale: float = 1.0,
                  process_set_id: int = 0) -> List[int]:
    """Queues the ops of a group all or none, in one step (they negotiate and fuse together)."""
    lib = rt.lib
    count = len(tensors)
    group = lib.korovod_group_new()
    if not group:
        raise MemoryError("korovod_group_new failed")
    try:
        for i, tensor in enumerate(tensors):
            code = dtype_code(tensor)
            device, event = device_and_event(rt, tensor)
            shape = tensor.shape
            # A refused op is remembered by the group; korovod_group_enqueue reports it with its text.
            lib.korovod_group_add(
                group, op_type, names[i], tensor.data_ptr(), outputs[i].data_ptr() if outputs is not None else None,
                code, len(shape), shape_array(shape), device, op, prescale, postscale, 0, None, 0,
                process_set_id, event)
        handles = (ctypes.c_int64 * count)()
        code = lib.korovod_group_enqueue(rt.ptr, group, handles, count)
        if code < 0:
            raise last_error(rt, code)
        return list(handles)
    finally:
        lib.korovod_group_free(group)


def wait(rt: NativeRuntime, handle: int, keep_alive) -> None:
    """Blocks until the op ends (GIL released, in one-second slices so Ctrl-C gets through);
    releases the handle on error and raises the mapped exception. If the wait is interrupted, the
    op's tensors stay referenced for good: the runtime may still write them."""
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


def release(rt: NativeRuntime, handle: int) -> None:
    rt.lib.korovod_release(rt.ptr, handle)


def take_output(rt: NativeRuntime, handle: int, dtype: torch.dtype) -> torch.Tensor:
    """The output the runtime allocated for `handle`, as a torch tensor owning that memory."""
    dl_code, dl_bits = _DLPACK_TYPES[dtype]
    managed = rt.lib.korovod_handle_take_dlpack(rt.ptr, handle, dl_code, dl_bits)
    if not managed:
        raise last_error(rt, _lib.ERR_UNKNOWN)
    capsule = None
    try:
        capsule = _capsule_new(managed, _DLTENSOR_NAME, None)
        tensor = torch.utils.dlpack.from_dlpack(capsule)
    except BaseException:
        # Not consumed (from_dlpack renames the capsule once it owns the memory): free it here.
        if capsule is None or _capsule_is_valid(capsule, _DLTENSOR_NAME):
            rt.lib.korovod_dlpack_delete(managed)
        raise
    return tensor.view(torch.bool) if dtype is torch.bool else tensor


def received_splits(rt: NativeRuntime, handle: int, count: int) -> torch.Tensor:
    splits = torch.empty(count, dtype=torch.int32)
    n = rt.lib.korovod_handle_received_splits(rt.ptr, handle, splits.data_ptr(), count)
    if n < 0:
        raise last_error(rt, n)
    return splits[:n]


def last_joined_rank(rt: NativeRuntime, handle: int) -> int:
    value = rt.lib.korovod_handle_last_joined_rank(rt.ptr, handle)
    if value < -1:
        raise last_error(rt, value)
    return value


# ---------------------------------------------------------------- asynchronous handles

Finisher = Callable[[NativeRuntime, List[int]], object]


class Pending:
    """An asynchronous operation until synchronize(): its native handles, what it must keep alive,
    and how to build its result."""

    __slots__ = ("rt", "handles", "finish", "keep_alive")

    def __init__(self, rt: NativeRuntime, handles: List[int], finish: Finisher, keep_alive):
        self.rt = rt
        self.handles = handles
        self.finish = finish
        self.keep_alive = keep_alive


def register(rt: NativeRuntime, handles: List[int], finish: Finisher, keep_alive) -> int:
    """Returns the Python handle (the first native handle: unique while the runtime lives)."""
    key = handles[0]
    state.pending[key] = Pending(rt, handles, finish, keep_alive)
    return key


def poll(handle: int) -> bool:
    entry = state.pending.get(handle)
    if entry is None:
        raise ValueError(f"Handle {handle} was not created or has been cleared.")
    rt = entry.rt
    for native in entry.handles:
        done = rt.lib.korovod_poll(rt.ptr, native)
        if done < 0:
            raise last_error(rt, done)
        if not done:
            return False
    return True


def synchronize(handle: int):
    """Waits for an asynchronous operation and returns its result (None for an unknown handle, as
    Horovod). Every op of a group is waited for before the first error is raised."""
    entry = state.pending.pop(handle, None)
    if entry is None:
        return None
    rt = entry.rt
    error = None
    succeeded = []
    for native in entry.handles:
        try:
            wait(rt, native, entry.keep_alive)  # releases `native` itself when it failed
            succeeded.append(native)
        except (ValueError, RuntimeError) as e:
            error = error or e
        except BaseException:
            state.pending[handle] = entry  # interrupted: may be synchronized again
            raise
    try:
        if error is not None:
            raise error
        return entry.finish(rt, entry.handles)
    finally:
        for native in succeeded:
            release(rt, native)
