"""autograd Functions for the differentiable collectives, with the gradients Horovod defines:

  allreduce      grad = allreduce(grad, same op and scales)
  allgather      grad = this rank's rows of allreduce(grad, Average)
  broadcast      grad = allreduce(grad, Average) on the root, zero elsewhere
  alltoall       grad = alltoall(grad) sent back with the received splits
  reducescatter  grad = allgather(grad * size for Sum, times the pre- and postscale factors)
  grouped forms  the same per tensor.
"""

from __future__ import annotations

import torch

from korovod.common import _lib
from korovod.common import basics
from korovod.torch import _collectives as ops
from korovod.torch import _native


def _sync(handle):
    return _native.synchronize(handle)


def _allreduce(tensor, op, prescale, postscale, ps_id):
    return _sync(ops.allreduce_start(tensor, False, None, op, prescale, postscale, ps_id))


def _grouped_allreduce(tensors, op, prescale, postscale, ps_id):
    return _sync(ops.grouped_allreduce_start(tensors, False, None, op, prescale, postscale, ps_id))


def _rows_of_this_rank(reduced, dim0s_of_ranks, set_rank, own_dim0):
    offset = int(dim0s_of_ranks[:set_rank].sum()) if set_rank > 0 else 0
    return reduced.narrow(0, offset, own_dim0)


class AllreduceFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, name, op, prescale, postscale, process_set):
        ctx.args = (op, prescale, postscale, ops.process_set_id(process_set))
        return _sync(ops.allreduce_start(tensor, False, name, op, prescale, postscale, ctx.args[3]))

    @staticmethod
    def backward(ctx, grad_output):
        return (_allreduce(grad_output, *ctx.args), None, None, None, None, None)


class GroupedAllreduceFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, name, op, prescale, postscale, process_set, *tensors):
        ctx.args = (op, prescale, postscale, ops.process_set_id(process_set))
        return tuple(_sync(ops.grouped_allreduce_start(list(tensors), False, name, op, prescale, postscale,
                                                       ctx.args[3])))

    @staticmethod
    def backward(ctx, *grad_outputs):
        return (None, None, None, None, None, *_grouped_allreduce(list(grad_outputs), *ctx.args))


class AllgatherFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, name, process_set):
        ctx.dim0 = tensor.shape[0] if tensor.dim() > 0 else 0
        ctx.process_set = process_set
        return _sync(ops.allgather_start(tensor, name, ops.process_set_id(process_set)))

    @staticmethod
    def backward(ctx, grad_output):
        ps = ctx.process_set
        ps_id = ops.process_set_id(ps)
        reduced = _allreduce(grad_output, _lib.AVERAGE, 1.0, 1.0, ps_id)
        dim0s = _sync(ops.allgather_start(torch.tensor([ctx.dim0], dtype=torch.int64), None, ps_id))
        return _rows_of_this_rank(reduced, dim0s, ps.rank(), ctx.dim0), None, None


class GroupedAllgatherFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, name, process_set, *tensors):
        ctx.dim0s = [t.shape[0] for t in tensors]
        ctx.process_set = process_set
        return tuple(_sync(ops.grouped_allgather_start(list(tensors), name, ops.process_set_id(process_set))))

    @staticmethod
    def backward(ctx, *grad_outputs):
        ps = ctx.process_set
        ps_id = ops.process_set_id(ps)
        reduced = _grouped_allreduce(list(grad_outputs), _lib.AVERAGE, 1.0, 1.0, ps_id)
        # One allgather of every tensor's dim 0: row r holds rank r's dims.
        dim0s = _sync(ops.allgather_start(torch.tensor([ctx.dim0s], dtype=torch.int64), None, ps_id))
        set_rank = ps.rank()
        grads = [_rows_of_this_rank(r, dim0s[:, i], set_rank, ctx.dim0s[i]) for i, r in enumerate(reduced)]
        return (None, None, *grads)


class BroadcastFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, root_rank, name, process_set):
        ctx.root_rank = root_rank
        ctx.ps_id = ops.process_set_id(process_set)
        return _sync(ops.broadcast_start(tensor, root_rank, False, name, ctx.ps_id))

    @staticmethod
    def backward(ctx, grad_output):
        reduced = _allreduce(grad_output, _lib.AVERAGE, 1.0, 1.0, ctx.ps_id)
        if basics.rank() != ctx.root_rank:
            reduced.mul_(0)  # as Horovod: only the root's input reached the output
        return reduced, None, None, None


class AlltoallFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, splits, name, process_set):
        ctx.ps_id = ops.process_set_id(process_set)
        output, received = _sync(ops.alltoall_start(tensor, splits, name, ctx.ps_id))
        ctx.received_splits = received
        if splits is None:
            return output
        ctx.mark_non_differentiable(received)
        return output, received

    @staticmethod
    def backward(ctx, grad_output, *unused_received_splits_grad):
        grad, _ = _sync(ops.alltoall_start(grad_output, ctx.received_splits, None, ctx.ps_id))
        return grad, None, None, None


def _reducescatter_grad_scale(op, process_set, prescale, postscale) -> float:
    scale = float(process_set.size()) if op == _lib.SUM else 1.0
    return scale * prescale * postscale


class ReducescatterFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, name, op, process_set, prescale, postscale):
        ctx.args = (op, process_set, prescale, postscale)
        return _sync(ops.reducescatter_start(tensor, name, op, prescale, postscale, ops.process_set_id(process_set)))

    @staticmethod
    def backward(ctx, grad_output):
        op, process_set, prescale, postscale = ctx.args
        scale = _reducescatter_grad_scale(op, process_set, prescale, postscale)
        grad = grad_output * scale if scale != 1.0 else grad_output
        return _sync(ops.allgather_start(grad, None, ops.process_set_id(process_set))), None, None, None, None, None


class GroupedReducescatterFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, name, op, process_set, prescale, postscale, *tensors):
        ctx.args = (op, process_set, prescale, postscale)
        return tuple(_sync(ops.grouped_reducescatter_start(list(tensors), name, op, prescale, postscale,
                                                           ops.process_set_id(process_set))))

    @staticmethod
    def backward(ctx, *grad_outputs):
        op, process_set, prescale, postscale = ctx.args
        scale = _reducescatter_grad_scale(op, process_set, prescale, postscale)
        grads = [g * scale if scale != 1.0 else g for g in grad_outputs]
        gathered = _sync(ops.grouped_allgather_start(grads, None, ops.process_set_id(process_set)))
        return (None, None, None, None, None, *gathered)
