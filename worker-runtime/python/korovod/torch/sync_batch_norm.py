"""SyncBatchNorm: batch normalization over the batch of all ranks together.

Horovod's algorithm (horovod/torch/sync_batch_norm.py): forward allgathers every rank's element
count, mean and inverse standard deviation per channel and combines them; backward allreduces
(Sum) the per-channel sums of dy and dy * (x - mean). Where the torch build has the fused kernels
(torch.batch_norm_stats and friends: CUDA builds; the CPU in some newer versions) they do the
arithmetic; elsewhere (Debian's torch 1.13 CPU build) plain tensor operations do the same.
"""

import functools

import torch
import torch.nn.functional as F
from torch.autograd.function import Function
from torch.nn.modules.batchnorm import _BatchNorm

from korovod.torch.mpi_ops import Sum, allgather_async, allreduce_async, size, synchronize


@functools.lru_cache(maxsize=None)
def _native_kernels(device_type: str) -> bool:
    """Whether this torch build runs batch_norm_stats & co. on this kind of device."""
    if not hasattr(torch, 'batch_norm_gather_stats_with_counts'):
        return False
    try:
        torch.batch_norm_stats(torch.ones(2, 1, device=device_type), 1e-5)
    except (RuntimeError, NotImplementedError):
        return False
    return True


def _channel_view(t: torch.Tensor, ndim: int) -> torch.Tensor:
    """A per-channel vector shaped to broadcast against an (N, C, ...) tensor."""
    return t.view([1, -1] + [1] * (ndim - 2))


def _stats_dtype(input: torch.Tensor) -> torch.dtype:
    return torch.promote_types(input.dtype, torch.float32)  # half inputs: statistics in float32


def _local_stats(input: torch.Tensor, eps: float):
    channels = input.transpose(0, 1).reshape(input.size(1), -1).to(_stats_dtype(input))
    mean = channels.mean(dim=1)
    var = channels.var(dim=1, unbiased=False)
    return mean, torch.rsqrt(var + eps)


def _combine_stats(mean_all, invstd_all, counts, running_mean, running_var, momentum, eps):
    """Global mean and invstd from per-rank ones; updates the running statistics (unbiased
    variance), as torch.batch_norm_gather_stats_with_counts does."""
    counts = counts.to(mean_all.dtype).view(-1, 1)
    total = counts.sum()
    mean = (mean_all * counts).sum(dim=0) / total
    var_all = invstd_all.pow(-2) - eps
    var = ((var_all + (mean_all - mean).pow(2)) * counts).sum(dim=0) / total
    if running_mean is not None:
        running_mean.mul_(1 - momentum).add_(mean.to(running_mean.dtype), alpha=momentum)
    if running_var is not None:
        unbiased = var * (total / (total - 1)) if total > 1 else var
        running_var.mul_(1 - momentum).add_(unbiased.to(running_var.dtype), alpha=momentum)
    return mean, torch.rsqrt(var + eps)


class SyncBatchNorm(_BatchNorm):
    """Batch normalization whose batch statistics are those of all ranks' inputs together.

    Same arguments as torch.nn.BatchNorm1d/2d/3d (it takes (N, C, ...) inputs of any rank >= 2).
    With one rank, or in eval mode with running statistics, it is plain batch normalization.
    Weight and bias gradients stay local: DistributedOptimizer averages them with the others.
    """

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, device=None, dtype=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats,
                         device=device, dtype=dtype)

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError('expected at least 2D input (got {}D input)'.format(input.dim()))

    def forward(self, input):
        self._check_input_dim(input)
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # cumulative moving average
                momentum = 1.0 / float(self.num_batches_tracked)
        # Without track_running_stats the running buffers are None: batch statistics always.
        use_batch_stats = self.training or not self.track_running_stats
        if not use_batch_stats or size() == 1:
            return F.batch_norm(input, self.running_mean, self.running_var, self.weight,
                                self.bias, use_batch_stats, momentum, self.eps)
        return _SyncBatchNormFunction.apply(input, self.weight, self.bias, self.running_mean,
                                            self.running_var, self.eps, momentum)


class _SyncBatchNormFunction(Function):
    @staticmethod
    def forward(ctx, input, weight, bias, running_mean, running_var, eps, momentum):
        input = input.contiguous()
        native = _native_kernels(input.device.type)
        count = input.numel() // input.size(1)
        if count == 0:  # contributes nothing, but must take part in the allgathers
            mean = torch.zeros(input.size(1), dtype=_stats_dtype(input), device=input.device)
            invstd = torch.zeros_like(mean)
        elif native:
            mean, invstd = torch.batch_norm_stats(input, eps)
        else:
            mean, invstd = _local_stats(input, eps)

        count_handle = allgather_async(torch.tensor([[count]], dtype=torch.int64),
                                       name='sync_batch_norm.count')
        mean_handle = allgather_async(mean.unsqueeze(0), name='sync_batch_norm.mean')
        invstd_handle = allgather_async(invstd.unsqueeze(0), name='sync_batch_norm.invstd')
        counts = synchronize(count_handle).view(-1).to(input.device)
        mean_all = synchronize(mean_handle)
        invstd_all = synchronize(invstd_handle)

        present = counts > 0
        if not bool(present.all()):
            counts, mean_all, invstd_all = counts[present], mean_all[present], invstd_all[present]
        if native:
            mean, invstd = torch.batch_norm_gather_stats_with_counts(
                input, mean_all, invstd_all, running_mean, running_var, momentum, eps,
                counts.to(mean_all.dtype))
            output = torch.batch_norm_elemt(input, weight, bias, mean, invstd, eps)
        else:
            mean, invstd = _combine_stats(mean_all, invstd_all, counts, running_mean, running_var,
                                          momentum, eps)
            scale = invstd if weight is None else invstd * weight
            normalized = (input - _channel_view(mean, input.dim())) * _channel_view(scale, input.dim())
            if bias is not None:
                normalized = normalized + _channel_view(bias, input.dim())
            output = normalized.to(input.dtype)

        ctx.native = native
        ctx.save_for_backward(input, weight, mean, invstd, counts.to(torch.int32))
        return output

    @staticmethod
    def backward(ctx, grad_output):
        grad_output = grad_output.contiguous()
        input, weight, mean, invstd, counts = ctx.saved_tensors
        need_input, need_weight, need_bias = ctx.needs_input_grad[0:3]
        if ctx.native:
            sum_dy, sum_dy_xmu, grad_weight, grad_bias = torch.batch_norm_backward_reduce(
                grad_output, input, mean, invstd, weight, need_input, need_weight, need_bias)
        else:
            sum_dy, sum_dy_xmu, grad_weight, grad_bias = _backward_reduce(
                grad_output, input, mean, invstd, weight)

        grad_input = None
        if need_input:
            sum_dy_handle = allreduce_async(sum_dy, op=Sum, name='sync_batch_norm.sum_dy')
            sum_dy_xmu_handle = allreduce_async(sum_dy_xmu, op=Sum,
                                                name='sync_batch_norm.sum_dy_xmu')
            sum_dy = synchronize(sum_dy_handle)
            sum_dy_xmu = synchronize(sum_dy_xmu_handle)
            if ctx.native:
                grad_input = torch.batch_norm_backward_elemt(
                    grad_output, input, mean, invstd, weight, sum_dy, sum_dy_xmu, counts)
            else:
                grad_input = _backward_elemt(grad_output, input, mean, invstd, weight, sum_dy,
                                             sum_dy_xmu, counts)
        return (grad_input,
                grad_weight if weight is not None and need_weight else None,
                grad_bias if weight is not None and need_bias else None,
                None, None, None, None)


def _backward_reduce(grad_output, input, mean, invstd, weight):
    """Per-channel sum(dy), sum(dy * (x - mean)), and this rank's weight and bias gradients."""
    dtype = _stats_dtype(input)
    dims = [0] + list(range(2, input.dim()))
    dy = grad_output.to(dtype)
    xmu = input.to(dtype) - _channel_view(mean, input.dim())
    sum_dy = dy.sum(dim=dims)
    sum_dy_xmu = (dy * xmu).sum(dim=dims)
    grad_weight = grad_bias = None
    if weight is not None:
        grad_weight = (sum_dy_xmu * invstd).to(weight.dtype)
        grad_bias = sum_dy.to(weight.dtype)
    return sum_dy, sum_dy_xmu, grad_weight, grad_bias


def _backward_elemt(grad_output, input, mean, invstd, weight, sum_dy, sum_dy_xmu, counts):
    """dx = (dy - mean(dy) - (x - mean) * invstd^2 * mean(dy * (x - mean))) * invstd * weight,
    the means taken over the batch of all ranks."""
    ndim = input.dim()
    total = counts.sum().to(sum_dy.dtype)
    mean_dy = _channel_view(sum_dy / total, ndim)
    mean_dy_xmu = _channel_view(sum_dy_xmu / total, ndim)
    scale = invstd if weight is None else invstd * weight.to(invstd.dtype)
    xmu = input.to(invstd.dtype) - _channel_view(mean, ndim)
    grad_input = (grad_output.to(invstd.dtype) - mean_dy
                  - xmu * _channel_view(invstd.pow(2), ndim) * mean_dy_xmu)
    return (grad_input * _channel_view(scale, ndim)).to(input.dtype)
