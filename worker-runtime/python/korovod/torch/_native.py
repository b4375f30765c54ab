"""torch tensors across libkorovod's C ABI, on the framework-neutral glue in
korovod.common.native_ops: what torch adds is its dtype codes, the ready event of a CUDA tensor,
DLPack outputs as torch tensors, and the asynchronous handles of Horovod's torch API
(poll/synchronize). The synchronous allreduce of a training step inlines its three C calls in
_collectives.allreduce_now.
"""

from __future__ import annotations

from typing import Callable, List, Optional, Sequence

import torch
import torch.utils.dlpack

from korovod.common import _lib
from korovod.common._state import NativeRuntime, last_error, state  # noqa: F401 (last_error: re-exported)
from korovod.common.native_ops import (  # noqa: F401 (re-exported for the torch modules)
    DL_BFLOAT, DL_FLOAT, DL_INT, DL_UINT, enqueue_control, enqueue_group_raw, enqueue_raw, last_joined_rank,
    release, runtime, shape_array, wait)
from korovod.common import native_ops

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
_DLPACK_TYPES = {
    torch.uint8: (DL_UINT, 8),
    torch.int8: (DL_INT, 8),
    torch.int16: (DL_INT, 16),
    torch.int32: (DL_INT, 32),
    torch.int64: (DL_INT, 64),
    torch.float16: (DL_FLOAT, 16),
    torch.bfloat16: (DL_BFLOAT, 16),
    torch.float32: (DL_FLOAT, 32),
    torch.float64: (DL_FLOAT, 64),
    torch.bool: (DL_UINT, 8),
}
if hasattr(torch, "uint16"):
    _DLPACK_TYPES[torch.uint16] = (DL_UINT, 16)


def dtype_code(tensor: torch.Tensor) -> int:
    try:
        return DTYPE_CODES[tensor.dtype]
    except KeyError:
        raise ValueError(f"Tensor type {tensor.dtype} is not supported.") from None


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
    """Queues one collective; returns its handle. `tensor` (and `output`) must be contiguous;
    `splits`: an int32 tensor of alltoall's rows per rank, or None."""
    code = dtype_code(tensor)
    device, event = device_and_event(rt, tensor) if tensor.is_cuda else (-1, None)
    splits_address, num_splits = (None, 0) if splits is None else (splits.data_ptr(), splits.numel())
    return enqueue_raw(rt, op_type, name, tensor.data_ptr(), output.data_ptr() if output is not None else None,
                       code, tensor.shape, device, op, prescale, postscale, root_rank, splits_address,
                       num_splits, process_set_id, event)


def enqueue_group(rt: NativeRuntime, op_type: int, names: Sequence[Optional[bytes]],
                  tensors: Sequence[torch.Tensor], outputs: Optional[Sequence[torch.Tensor]],
                  op: int = _lib.AVERAGE, prescale: float = 1.0, postscale: float = 1.0,
                  process_set_id: int = 0) -> List[int]:
    """Queues the ops of a group all or none, in one step (they negotiate and fuse together)."""
    operands = []
    for i, tensor in enumerate(tensors):
        code = dtype_code(tensor)  # before the CUDA event: an unsupported dtype records none
        device, event = device_and_event(rt, tensor)
        operands.append((tensor.data_ptr(), outputs[i].data_ptr() if outputs is not None else None, code,
                         tensor.shape, device, event))
    return enqueue_group_raw(rt, op_type, names, operands, op, prescale, postscale, process_set_id)


def take_output(rt: NativeRuntime, handle: int, dtype: torch.dtype) -> torch.Tensor:
    """The output the runtime allocated for `handle`, as a torch tensor owning that memory."""
    dl_code, dl_bits = _DLPACK_TYPES[dtype]
    tensor = native_ops.take_output(rt, handle, dl_code, dl_bits, torch.utils.dlpack.from_dlpack)
    return tensor.view(torch.bool) if dtype is torch.bool else tensor


def received_splits(rt: NativeRuntime, handle: int, count: int) -> torch.Tensor:
    return torch.tensor(native_ops.received_splits(rt, handle, count), dtype=torch.int32)


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
