"""Horovod's torch collectives (horovod.torch.mpi_ops) over libkorovod's C ABI.

Every op takes CPU tensors of uint8, int8, int16, int32, int64, float16, bfloat16, float32,
float64 and bool (and CUDA tensors when libkorovod was built with CUDA). `*_async` variants return
a handle for poll()/synchronize(); trailing-underscore variants work in place. Ops on tensors that
require grad are differentiable (see _autograd.py for the gradients).
"""

from __future__ import annotations

import warnings
from typing import List

import torch

from korovod.common.basics import (Adasum, Average, Max, Min, Product, Sum, ccl_built, cross_rank, cross_size,
                                   cuda_built, ddl_built, gloo_built, gloo_enabled, init, is_homogeneous,
                                   is_initialized, local_rank, local_size, mpi_built, mpi_enabled,
                                   mpi_threads_supported, nccl_built, rank, rocm_built, shutdown, size,
                                   start_timeline, stop_timeline)
from korovod.common.exceptions import HorovodInternalError
from korovod.common.process_sets import (ProcessSet, RuntimeBasics, add_process_set, global_process_set,
                                         remove_process_set)
from korovod.torch import _autograd
from korovod.torch import _collectives as _ops
from korovod.torch import _native
from korovod.torch.compression import Compression, NoneCompressor

# Horovod's module-level HorovodBasics; its process-set tests call _basics._get_process_set_ids_and_ranks().
_basics = RuntimeBasics()

__all__ = [
    "Average", "Sum", "Adasum", "Min", "Max", "Product", "HorovodInternalError", "ProcessSet",
    "global_process_set", "add_process_set", "remove_process_set", "init", "shutdown", "is_initialized",
    "start_timeline", "stop_timeline", "size", "local_size", "cross_size", "rank", "local_rank", "cross_rank",
    "is_homogeneous", "mpi_threads_supported", "mpi_enabled", "mpi_built", "gloo_enabled", "gloo_built",
    "nccl_built", "ddl_built", "ccl_built", "cuda_built", "rocm_built",
    "allreduce", "allreduce_", "allreduce_async", "allreduce_async_", "grouped_allreduce", "grouped_allreduce_",
    "grouped_allreduce_async", "grouped_allreduce_async_", "sparse_allreduce_async", "allgather",
    "allgather_async", "grouped_allgather", "grouped_allgather_async", "broadcast", "broadcast_",
    "broadcast_async", "broadcast_async_", "alltoall", "alltoall_async", "reducescatter", "reducescatter_async",
    "grouped_reducescatter", "grouped_reducescatter_async", "join", "barrier", "poll", "synchronize",
]


def _resolve_op(op, average):
    """Horovod's handling of the deprecated `average` argument."""
    if op is not None:
        if average is not None:
            raise ValueError("The op parameter supersedes average. Please provide only one of them.")
        return op
    if average is not None:
        warnings.warn("Parameter `average` has been replaced with `op` and will be removed in v1.0",
                      DeprecationWarning)
        return Average if average else Sum
    return Average


_grad_enabled = torch.is_grad_enabled
# torch >= 2.0 warns unless told whether to validate a new sparse tensor; like Horovod, do not.
_UNCHECKED_SPARSE = {"check_invariants": False} if hasattr(torch.sparse, "check_sparse_tensor_invariants") else {}


def _needs_grad(tensor) -> bool:
    return tensor.requires_grad and _grad_enabled()


def _any_needs_grad(tensors) -> bool:
    return torch.is_grad_enabled() and any(t.requires_grad for t in tensors)


# ---------------------------------------------------------------- allreduce


def allreduce_async(tensor, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                    process_set=global_process_set) -> int:
    """Starts reducing `tensor` over the process set (op: Average (default), Sum, Min, Max, Product;
    scaled by prescale_factor before and postscale_factor after). The input is not modified.
    Returns a handle for poll()/synchronize(), whose result is the reduced tensor."""
    op = _resolve_op(op, average)
    return _ops.allreduce_start(tensor, False, name, op, prescale_factor, postscale_factor,
                                _ops.process_set_id(process_set))


def allreduce_async_(tensor, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                     process_set=global_process_set) -> int:
    """allreduce_async writing the result into `tensor`."""
    op = _resolve_op(op, average)
    return _ops.allreduce_start(tensor, True, name, op, prescale_factor, postscale_factor,
                                _ops.process_set_id(process_set))


def allreduce(tensor, average=None, name=None, compression=Compression.none, op=None, prescale_factor=1.0,
              postscale_factor=1.0, process_set=global_process_set) -> torch.Tensor:
    """Returns `tensor` reduced over the process set (Average by default); differentiable.
    `name` keys the operation across ranks (tensor shape and dtype must match per name)."""
    if op is None and average is None:  # the common call: no function call for it
        op = Average
    elif average is not None:
        op = _resolve_op(op, average)
    if compression is NoneCompressor:
        if tensor.requires_grad and _grad_enabled():
            return _autograd.AllreduceFunction.apply(tensor, name, op, prescale_factor, postscale_factor,
                                                     process_set)
        return _ops.allreduce_now(tensor, name, op, prescale_factor, postscale_factor, process_set)
    compressed, ctx = compression.compress(tensor)
    if _needs_grad(compressed):
        reduced = _autograd.AllreduceFunction.apply(compressed, name, op, prescale_factor, postscale_factor,
                                                    process_set)
    else:
        reduced = _ops.allreduce_now(compressed, name, op, prescale_factor, postscale_factor, process_set)
    return compression.decompress(reduced, ctx)


def allreduce_(tensor, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
               process_set=global_process_set) -> torch.Tensor:
    """allreduce writing the result into `tensor`, which it returns."""
    return synchronize(allreduce_async_(tensor, average, name, op, prescale_factor, postscale_factor, process_set))


def grouped_allreduce_async(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                            postscale_factor=1.0, process_set=global_process_set) -> int:
    """Starts allreducing a list of tensors as one group (negotiated and fused together). One handle;
    its result is the list of reduced tensors."""
    op = _resolve_op(op, average)
    return _ops.grouped_allreduce_start(list(tensors), False, name, op, prescale_factor, postscale_factor,
                                        _ops.process_set_id(process_set))


def grouped_allreduce_async_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                             postscale_factor=1.0, process_set=global_process_set) -> int:
    """grouped_allreduce_async writing each result into its input tensor."""
    op = _resolve_op(op, average)
    return _ops.grouped_allreduce_start(list(tensors), True, name, op, prescale_factor, postscale_factor,
                                        _ops.process_set_id(process_set))


def grouped_allreduce(tensors, average=None, name=None, compression=Compression.none, op=None,
                      prescale_factor=1.0, postscale_factor=1.0, process_set=global_process_set) -> List[torch.Tensor]:
    """Returns the list of `tensors` reduced as one group; differentiable."""
    op = _resolve_op(op, average)
    ps_id = _ops.process_set_id(process_set)
    pairs = [compression.compress(t) for t in tensors]
    compressed = [c for c, _ in pairs]
    if _any_needs_grad(compressed):
        reduced = _autograd.GroupedAllreduceFunction.apply(name, op, prescale_factor, postscale_factor,
                                                           process_set, *compressed)
    else:
        reduced = synchronize(_ops.grouped_allreduce_start(compressed, False, name, op, prescale_factor,
                                                           postscale_factor, ps_id))
    return [compression.decompress(r, ctx) for r, (_, ctx) in zip(reduced, pairs)]


def grouped_allreduce_(tensors, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                       process_set=global_process_set) -> List[torch.Tensor]:
    """grouped_allreduce writing each result into its input tensor."""
    return synchronize(grouped_allreduce_async_(tensors, average, name, op, prescale_factor, postscale_factor,
                                                process_set))


def sparse_allreduce_async(tensor, name, op, process_set=global_process_set):
    """Reduces a sparse COO tensor by allgathering its indices and values. Returns a callable that
    waits and returns the reduced sparse tensor (as Horovod)."""
    indices_handle = allgather_async(tensor._indices().transpose(0, 1).contiguous(), name=f"{name}.indices",
                                     process_set=process_set)
    values_handle = allgather_async(tensor._values(), name=f"{name}.values", process_set=process_set)

    def handle():
        values = synchronize(values_handle)
        indices = synchronize(indices_handle)
        if op == Average:
            values = values / process_set.size()
        return torch.sparse_coo_tensor(indices.transpose(0, 1), values, tensor.size(), **_UNCHECKED_SPARSE)

    return handle


# ---------------------------------------------------------------- allgather


def allgather_async(tensor, name=None, process_set=global_process_set) -> int:
    """Starts concatenating `tensor` from every rank of the set along dim 0 (dim 0 may differ per
    rank; the other dims must match). Handle result: the concatenated tensor."""
    return _ops.allgather_start(tensor, name, _ops.process_set_id(process_set))


def allgather(tensor, name=None, process_set=global_process_set) -> torch.Tensor:
    """Returns the concatenation of `tensor` from every rank of the set, in rank order; differentiable."""
    if _needs_grad(tensor):
        return _autograd.AllgatherFunction.apply(tensor, name, process_set)
    return synchronize(allgather_async(tensor, name, process_set))


def grouped_allgather_async(tensors, name=None, process_set=global_process_set) -> int:
    """Starts allgathering a list of tensors as one group. Handle result: the list of outputs."""
    return _ops.grouped_allgather_start(list(tensors), name, _ops.process_set_id(process_set))


def grouped_allgather(tensors, name=None, process_set=global_process_set) -> List[torch.Tensor]:
    """Returns the allgather of each tensor, done as one group; differentiable."""
    tensors = list(tensors)
    if _any_needs_grad(tensors):
        return list(_autograd.GroupedAllgatherFunction.apply(name, process_set, *tensors))
    return synchronize(grouped_allgather_async(tensors, name, process_set))


# ---------------------------------------------------------------- broadcast


def broadcast_async(tensor, root_rank, name=None, process_set=global_process_set) -> int:
    """Starts broadcasting `tensor` from root_rank (a global rank) to the set. The input is not
    modified; the handle's result is the broadcast tensor."""
    return _ops.broadcast_start(tensor, root_rank, False, name, _ops.process_set_id(process_set))


def broadcast_async_(tensor, root_rank, name=None, process_set=global_process_set) -> int:
    """broadcast_async writing the result into `tensor`."""
    return _ops.broadcast_start(tensor, root_rank, True, name, _ops.process_set_id(process_set))


def broadcast(tensor, root_rank, name=None, process_set=global_process_set) -> torch.Tensor:
    """Returns root_rank's `tensor` on every rank of the set; differentiable."""
    if _needs_grad(tensor):
        return _autograd.BroadcastFunction.apply(tensor, root_rank, name, process_set)
    return synchronize(broadcast_async(tensor, root_rank, name, process_set))


def broadcast_(tensor, root_rank, name=None, process_set=global_process_set) -> torch.Tensor:
    """broadcast writing root_rank's values into `tensor`, which it returns."""
    return synchronize(broadcast_async_(tensor, root_rank, name, process_set))


# ---------------------------------------------------------------- alltoall


def alltoall_async(tensor, splits=None, name=None, process_set=global_process_set) -> int:
    """Starts an alltoall: rows of `tensor` go to the set's ranks in order, splits[i] rows to rank i
    (splits: 1-D int32 of the set's size, sum <= dim 0; None = an even split). Handle result:
    (output, received_splits)."""
    return _ops.alltoall_start(tensor, splits, name, _ops.process_set_id(process_set))


def alltoall(tensor, splits=None, name=None, process_set=global_process_set):
    """Returns the rows every rank sent to this one, in rank order; with `splits` given, returns
    (output, received_splits) as Horovod 0.28.1. Differentiable."""
    if _needs_grad(tensor):
        return _autograd.AlltoallFunction.apply(tensor, splits, name, process_set)
    output, received = synchronize(alltoall_async(tensor, splits, name, process_set))
    return output if splits is None else (output, received)


# ---------------------------------------------------------------- reducescatter


def reducescatter_async(tensor, name=None, op=Average, process_set=global_process_set, prescale_factor=1.0,
                        postscale_factor=1.0) -> int:
    """Starts reducing `tensor` over the set (Average or Sum) and scattering dim 0: rank i gets
    block i, ranks below dim0 % size one extra row. Handle result: this rank's block."""
    return _ops.reducescatter_start(tensor, name, Average if op is None else op, prescale_factor,
                                    postscale_factor, _ops.process_set_id(process_set))


def reducescatter(tensor, name=None, compression=Compression.none, op=Average, process_set=global_process_set,
                  prescale_factor=1.0, postscale_factor=1.0) -> torch.Tensor:
    """Returns this rank's block of `tensor` reduced over the set; differentiable."""
    op = Average if op is None else op
    compressed, ctx = compression.compress(tensor)
    if _needs_grad(compressed):
        reduced = _autograd.ReducescatterFunction.apply(compressed, name, op, process_set, prescale_factor,
                                                        postscale_factor)
    else:
        reduced = synchronize(reducescatter_async(compressed, name, op, process_set, prescale_factor,
                                                  postscale_factor))
    return compression.decompress(reduced, ctx)


def grouped_reducescatter_async(tensors, name=None, op=Average, process_set=global_process_set,
                                prescale_factor=1.0, postscale_factor=1.0) -> int:
    """Starts reducescattering a list of tensors as one group. Handle result: the list of blocks."""
    return _ops.grouped_reducescatter_start(list(tensors), name, Average if op is None else op, prescale_factor,
                                            postscale_factor, _ops.process_set_id(process_set))


def grouped_reducescatter(tensors, name=None, compression=Compression.none, op=Average,
                          process_set=global_process_set, prescale_factor=1.0,
                          postscale_factor=1.0) -> List[torch.Tensor]:
    """Returns this rank's block of each tensor, reduced as one group; differentiable."""
    op = Average if op is None else op
    pairs = [compression.compress(t) for t in tensors]
    compressed = [c for c, _ in pairs]
    if _any_needs_grad(compressed):
        reduced = _autograd.GroupedReducescatterFunction.apply(name, op, process_set, prescale_factor,
                                                               postscale_factor, *compressed)
    else:
        reduced = synchronize(grouped_reducescatter_async(compressed, name, op, process_set, prescale_factor,
                                                          postscale_factor))
    return [compression.decompress(r, ctx) for r, (_, ctx) in zip(reduced, pairs)]


# ---------------------------------------------------------------- handles, join, barrier


def poll(handle: int) -> bool:
    """True once the operation behind `handle` ended (synchronize then returns at once)."""
    return _native.poll(handle)


def synchronize(handle: int):
    """Waits for the operation behind `handle` and returns its result (None for a handle already
    synchronized). Raises ValueError / RuntimeError / HorovodInternalError for a failed op."""
    return _native.synchronize(handle)


def join(device: int = -1) -> int:
    """Marks this rank done with its data: until every rank joined, it contributes zeros to the
    others' allreduces (Average still divides by the full size). Blocks until all ranks joined and
    returns the rank that joined last (the same on every rank)."""
    return _ops.join(device)


def barrier(process_set=global_process_set) -> None:
    """Blocks until every rank of the process set reached the barrier."""
    _ops.barrier(_ops.process_set_id(process_set))

