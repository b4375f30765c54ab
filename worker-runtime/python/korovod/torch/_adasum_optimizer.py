"""DistributedOptimizer(op=Adasum): Horovod's delta optimizer (horovod/torch/optimizer.py,
_DistributedAdasumOptimizer, 0.28.1).

Adasum combines model *updates*, not gradients: once a parameter's gradient is accumulated, the
wrapped optimizer steps that one parameter, the change it made (delta = new - old) is reduced
with op=Adasum across ranks, and ``step()`` sets the parameter to old + the combined delta. The
parameter's own storage carries the delta while the allreduce runs, as in Horovod, so the
model must not be read between ``loss.backward()`` and ``optimizer.step()``.

As Horovod: ``synchronize()`` does nothing, ``skip_synchronize()`` raises, the learning rate
needs no scaling by the number of ranks, and one rank (``size() == 1``) gets the plain
DistributedOptimizer. The process set's size must be a power of 2, as in Horovod; beyond Horovod,
it may be any process set, not only the global one.
"""

from contextlib import contextmanager
from typing import Dict

import torch

from korovod.common._state import state as runtime_state
from korovod.common.progress import OPTIMIZER
from korovod.torch._optimizer_hooks import (TOO_MANY_PASSES, ZERO_GRAD_PENDING, hook_ready_gradient,
                                            name_parameters, remove_hooks_with)
from korovod.torch.mpi_ops import Adasum, allreduce_async_, global_process_set
from korovod.torch.mpi_ops import synchronize as synchronize_handle


class _DistributedAdasumOptimizer(torch.optim.Optimizer):
    """Mixed in front of the wrapped optimizer's class, as optimizer.py's _DistributedOptimizer is."""

    def __init__(self, params, named_parameters, compression, backward_passes_per_step=1,
                 process_set=global_process_set):
        super().__init__(params)
        self._compression = compression
        self._parameter_names = name_parameters(self.param_groups, named_parameters)
        self.backward_passes_per_step = backward_passes_per_step
        self.process_set = process_set
        self._delay: Dict[torch.Tensor, int] = {}
        self._handles: Dict[torch.Tensor, tuple] = {}  # parameter -> (handle or None, ctx)
        self._starting_models: Dict[torch.Tensor, torch.Tensor] = {}
        self._requires_update = []
        self._grad_accs = []
        self._hook_handles = []
        self._register_hooks()

    def _register_hooks(self) -> None:
        for group in self.param_groups:
            for p in group['params']:
                if not p.requires_grad or p in self._delay:
                    continue
                if p.grad is None:
                    p.grad = torch.zeros_like(p)
                self._delay[p] = self.backward_passes_per_step
                self._starting_models[p] = torch.zeros_like(p, requires_grad=False)
                self._requires_update.append(p)
                hook_ready_gradient(self, p, p)
        remove_hooks_with(self)

    def set_backward_passes_per_step(self, passes: int) -> None:
        self.backward_passes_per_step = passes
        for p in self._delay:
            self._delay[p] = passes

    def _grad_ready(self, p: torch.Tensor) -> None:
        if self._delay[p] <= 0:
            raise AssertionError(TOO_MANY_PASSES)
        self._delay[p] -= 1
        self._handles[p] = self._allreduce_delta_async(p) if self._delay[p] == 0 else (None, None)

    def _allreduce_delta_async(self, p: torch.Tensor):
        """Steps the wrapped optimizer on ``p`` alone and starts the Adasum allreduce of the
        change, in p's own storage."""
        start = self._starting_models[p]
        stashed = [group['params'] for group in self.param_groups]
        for group in self.param_groups:
            group['params'] = [p] if any(p is q for q in group['params']) else []
        try:
            start.copy_(p.detach())
            super().step()
        finally:
            for group, params in zip(self.param_groups, stashed):
                group['params'] = params
        with torch.no_grad():
            p.sub_(start)
        compressed, ctx = self._compression.compress(p.detach())
        handle = allreduce_async_(compressed, name=self._parameter_names.get(p), op=Adasum,
                                  process_set=self.process_set)
        return handle, ctx

    def synchronize(self) -> None:
        pass

    def _local_step(self, closure=None):
        """The wrapped optimizer's own step, without allreduces (broadcast_optimizer_state)."""
        return super().step(closure)

    @contextmanager
    def skip_synchronize(self):
        raise AssertionError('Skipping synchronization is not supported when using Adasum optimizer.')
        yield  # pragma: no cover  (makes this a generator, as contextmanager needs)

    def step(self, closure=None):
        loss = closure() if closure is not None else None
        for p in self._requires_update:
            if self._handles.get(p, (None, None))[0] is None:
                # No gradient this step, or fewer passes than backward_passes_per_step: every
                # rank must still submit, so step on what p.grad holds now.
                self._handles[p] = self._allreduce_delta_async(p)
        try:
            for p in self._requires_update:
                handle, ctx = self._handles[p]
                delta = self._compression.decompress(synchronize_handle(handle), ctx)
                start = self._starting_models[p]
                with torch.no_grad():
                    start.add_(delta.to(start.dtype))
                    p.copy_(start)
        finally:
            self._handles.clear()
            for p in self._delay:
                self._delay[p] = self.backward_passes_per_step
        progress = runtime_state.progress
        if progress.active:  # rank 0's progress lines count the step (docs/progress.md)
            progress.count(OPTIMIZER)
        return loss

    def zero_grad(self, *args, **kwargs):
        if self._handles:
            raise AssertionError(ZERO_GRAD_PENDING)
        return super().zero_grad(*args, **kwargs)
