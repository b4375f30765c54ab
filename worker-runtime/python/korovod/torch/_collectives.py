"""The collectives on plain tensors: no autograd, no compression (mpi_ops.py adds those).

`*_start` functions queue an operation and return a handle for poll()/synchronize(); the handle
keeps the operation's tensors alive until then. Names follow Horovod: "allreduce.<name>", or the
runtime's "allreduce.noname.<n>" when none is given (n counts the process set's unnamed ops;
Horovod uses the handle, which differs between ranks once some ran ops on other sets); grouped ops are
"grouped_allreduce.<name>_<i>of<n>".
"""

from __future__ import annotations

import ctypes
from typing import List, Optional, Sequence

import torch

from korovod.common import _lib
from korovod.common.basics import check_reduce_op, state
from korovod.torch import _native


def process_set_id(process_set) -> int:
    ps_id = process_set.process_set_id
    if ps_id is None:
        raise ValueError(f"{process_set} is not registered with korovod (never added, or removed)")
    return ps_id


def _name(prefix: str, name: Optional[str]) -> Optional[bytes]:
    return None if name is None else f"{prefix}.{name}".encode()


def _group_names(prefix: str, name: Optional[str], count: int) -> List[Optional[bytes]]:
    if name is None:
        return [None] * count
    return [f"{prefix}.{name}_{i + 1}of{count}".encode() for i in range(count)]


def _contiguous(tensor: torch.Tensor) -> torch.Tensor:
    return tensor if tensor.is_contiguous() else tensor.contiguous()


def _non_empty(tensors: Sequence[torch.Tensor], what: str) -> List[torch.Tensor]:
    tensors = [_contiguous(t) for t in tensors]
    if not tensors:
        raise ValueError(f"{what} needs at least one tensor")
    return tensors


def _finish_output(output):
    return lambda rt, handles: output


def _finish_copy_back(target, work):
    # An in-place op on a non-contiguous tensor ran on a contiguous copy: write the result back.
    return lambda rt, handles: target.copy_(work)


# ---------------------------------------------------------------- allreduce


_AVERAGE, _SUM = _lib.AVERAGE, _lib.SUM
_ONE = ctypes.c_double(1.0)
_void_p = ctypes.c_void_p
_double = ctypes.c_double
_DTYPE_CODES = _native.DTYPE_CODES
_shape_arrays = state.shape_arrays


def allreduce_now(tensor, name, op, prescale, postscale, process_set) -> torch.Tensor:
    """Synchronous out-of-place allreduce: the training loop's hot path. A contiguous CPU tensor
    with Average or Sum takes three C calls and one allocation, written out in one function
    (no handle map, no helper calls); everything else goes through the general path."""
    rt = state.runtime
    ps_id = process_set.process_set_id
    if (rt is None or ps_id is None or (op != _AVERAGE and op != _SUM) or tensor.is_cuda
            or not tensor.is_contiguous()):
        return _native.synchronize(allreduce_start(tensor, False, name, op, prescale, postscale,
                                                   process_set_id(process_set)))
    code = _DTYPE_CODES.get(tensor.dtype)
    if code is None:
        raise ValueError(f"Tensor type {tensor.dtype} is not supported.")
    shape = tensor.shape
    shape_array = _shape_arrays.get(shape)
    if shape_array is None:
        shape_array = _native.shape_array(shape)
    output = torch.empty_like(tensor)
    handle = rt.lib.korovod_enqueue_unchecked(
        rt.ptr_arg, _lib.OP_ALLREDUCE, None if name is None else b"allreduce." + name.encode(),
        _void_p(tensor.data_ptr()), _void_p(output.data_ptr()), code, len(shape), shape_array, -1, op,
        _ONE if prescale == 1.0 else _double(prescale), _ONE if postscale == 1.0 else _double(postscale), 0, None,
        0, ps_id, None)
    if handle < 0:
        raise _native.last_error(rt, handle)
    _native.wait(rt, handle, (tensor, output))
    rt.lib.korovod_release(rt.ptr, handle)
    return output


def allreduce_start(tensor, inplace, name, op, prescale, postscale, ps_id) -> int:
    check_reduce_op(op)
    rt = _native.runtime()
    work = _contiguous(tensor)
    output = work if inplace else torch.empty_like(work)
    handle = _native.enqueue(rt, _lib.OP_ALLREDUCE, _name("allreduce", name), work, output, op, prescale,
                             postscale, 0, None, ps_id)
    finish = _finish_copy_back(tensor, work) if inplace and work is not tensor else _finish_output(output)
    return _native.register(rt, [handle], finish, (tensor, work, output))


def grouped_allreduce_start(tensors, inplace, name, op, prescale, postscale, ps_id) -> int:
    check_reduce_op(op)
    rt = _native.runtime()
    works = _non_empty(tensors, "grouped_allreduce")
    outputs = works if inplace else [torch.empty_like(w) for w in works]
    handles = _native.enqueue_group(rt, _lib.OP_ALLREDUCE, _group_names("grouped_allreduce", name, len(works)),
                                    works, outputs, op, prescale, postscale, ps_id)

    def finish(rt, handles):
        if inplace:
            return [t if w is t else t.copy_(w) for t, w in zip(tensors, works)]
        return outputs

    return _native.register(rt, handles, finish, (list(tensors), works, outputs))


# ---------------------------------------------------------------- allgather / reducescatter


def _finish_taken(dtype):
    return lambda rt, handles: _native.take_output(rt, handles[0], dtype)


def _finish_taken_list(dtypes):
    return lambda rt, handles: [_native.take_output(rt, h, d) for h, d in zip(handles, dtypes)]


def allgather_start(tensor, name, ps_id) -> int:
    rt = _native.runtime()
    work = _contiguous(tensor)
    handle = _native.enqueue(rt, _lib.OP_ALLGATHER, _name("allgather", name), work, None,
                             process_set_id=ps_id)
    return _native.register(rt, [handle], _finish_taken(work.dtype), work)


def grouped_allgather_start(tensors, name, ps_id) -> int:
    rt = _native.runtime()
    works = _non_empty(tensors, "grouped_allgather")
    handles = _native.enqueue_group(rt, _lib.OP_ALLGATHER, _group_names("grouped_allgather", name, len(works)),
                                    works, None, process_set_id=ps_id)
    return _native.register(rt, handles, _finish_taken_list([w.dtype for w in works]), works)


def reducescatter_start(tensor, name, op, prescale, postscale, ps_id) -> int:
    check_reduce_op(op)
    rt = _native.runtime()
    work = _contiguous(tensor)
    handle = _native.enqueue(rt, _lib.OP_REDUCESCATTER, _name("reducescatter", name), work, None, op, prescale,
                             postscale, 0, None, ps_id)
    return _native.register(rt, [handle], _finish_taken(work.dtype), work)


def grouped_reducescatter_start(tensors, name, op, prescale, postscale, ps_id) -> int:
    check_reduce_op(op)
    rt = _native.runtime()
    works = _non_empty(tensors, "grouped_reducescatter")
    handles = _native.enqueue_group(rt, _lib.OP_REDUCESCATTER,
                                    _group_names("grouped_reducescatter", name, len(works)), works, None, op,
                                    prescale, postscale, ps_id)
    return _native.register(rt, handles, _finish_taken_list([w.dtype for w in works]), works)


# ---------------------------------------------------------------- broadcast / alltoall


def broadcast_start(tensor, root_rank, inplace, name, ps_id) -> int:
    rt = _native.runtime()
    work = _contiguous(tensor)
    output = work if inplace else torch.empty_like(work)
    handle = _native.enqueue(rt, _lib.OP_BROADCAST, _name("broadcast", name), work, output,
                             root_rank=int(root_rank), process_set_id=ps_id)
    finish = _finish_copy_back(tensor, work) if inplace and work is not tensor else _finish_output(output)
    return _native.register(rt, [handle], finish, (tensor, work, output))


def _splits_tensor(splits) -> Optional[torch.Tensor]:
    if splits is None:
        return None
    if isinstance(splits, torch.Tensor):
        if splits.dtype.is_floating_point or splits.dtype.is_complex or splits.dtype is torch.bool:
            raise ValueError(f"alltoall splits must contain 32-bit integers, not {splits.dtype}")
        if splits.dim() != 1:
            raise ValueError(f"alltoall splits must be a 1-D tensor, not {splits.dim()}-D")
        return splits.to(device="cpu", dtype=torch.int32).contiguous()
    return torch.tensor([int(s) for s in splits], dtype=torch.int32)


def alltoall_start(tensor, splits, name, ps_id) -> int:
    """Result on synchronize: (output, received_splits)."""
    rt = _native.runtime()
    work = _contiguous(tensor)
    splits_t = _splits_tensor(splits)
    handle = _native.enqueue(rt, _lib.OP_ALLTOALL, _name("alltoall", name), work, None, splits=splits_t,
                             process_set_id=ps_id)
    dtype = work.dtype

    def finish(rt, handles):
        output = _native.take_output(rt, handles[0], dtype)
        count = rt.lib.korovod_size(rt.ptr)
        return output, _native.received_splits(rt, handles[0], count)

    return _native.register(rt, [handle], finish, (work, splits_t))


# ---------------------------------------------------------------- join / barrier


def join(device: int = -1) -> int:
    rt = _native.runtime()
    if device >= 0 and not (rt.lib.korovod_cuda_built() and torch.cuda.is_available()):
        device = -1  # Horovod scripts pass local_rank() on CPU-only hosts too
    handle = _native.enqueue_control(rt, _lib.OP_JOIN, device=device)
    _native.wait(rt, handle, None)
    try:
        return _native.last_joined_rank(rt, handle)
    finally:
        _native.release(rt, handle)


def barrier(ps_id: int) -> None:
    rt = _native.runtime()
    handle = _native.enqueue_control(rt, _lib.OP_BARRIER, process_set_id=ps_id)
    _native.wait(rt, handle, None)
    _native.release(rt, handle)
