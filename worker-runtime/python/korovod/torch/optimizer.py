"""DistributedOptimizer: averages gradients across ranks while backward is still running.

Horovod's semantics (horovod/torch/optimizer.py, 0.28.1): every parameter's gradient gets an
asynchronous allreduce of its own once autograd has accumulated it, so communication overlaps the
rest of backward; ``step()`` waits for all of them (``synchronize()``) and then runs the wrapped
optimizer's update. Here the hooks hand ready gradients to the runtime in batches, one C call per
batch while backward runs, and synchronize() waits for them with one call (_hook_batch.py):
Horovod's per-gradient work was most of the cost of many small gradients.
"""

import warnings
from contextlib import contextmanager
from typing import Dict, List, Optional, Tuple

import torch

from korovod.common import settings
from korovod.common._state import state as runtime_state
from korovod.common.progress import OPTIMIZER
from korovod.torch._adasum_optimizer import _DistributedAdasumOptimizer
from korovod.torch._hook_batch import Batches, TensorFields, name_address
from korovod.torch._optimizer_hooks import (TOO_MANY_PASSES, ZERO_GRAD_PENDING, duplicates, hook_ready_gradient,
                                            name_parameters, remove_hooks_with)
from korovod.torch.compression import Compression
from korovod.torch.functions import broadcast_object
from korovod.torch.mpi_ops import (Adasum, Average, allreduce_async_, global_process_set,
                                   grouped_allreduce_async_, size, sparse_allreduce_async,
                                   synchronize as synchronize_handle)

_STEP_AFTER_SYNCHRONIZE = ('optimizer.step() called without optimizer.skip_synchronize() context '
                           'after optimizer.synchronize(). This can cause training slowdown. You may '
                           'want to consider using optimizer.skip_synchronize() context if you use '
                           'optimizer.synchronize() in your code.')

_NOT_REDUCED = (None, None)  # a hook fired, but the allreduce waits for more passes or its group


class _Slot:
    """A hooked parameter's state, which its hook reaches by attribute: a dict keyed by the
    parameter would call torch's Python-level Tensor.__hash__ several times per gradient."""

    __slots__ = ('param', 'delay', 'nbytes', 'wire_name', 'name_address', 'fields')

    def __init__(self, param: torch.Tensor, delay: int, name: Optional[str]):
        self.param = param
        self.delay = delay  # backward passes until its allreduce (Horovod's _allreduce_delay)
        self.nbytes = param.numel() * param.element_size()
        self.wire_name = None if name is None else b'allreduce.' + name.encode()  # as the runtime gets it
        self.name_address = name_address(self.wire_name)  # valid while wire_name lives
        # What the C call needs of its gradient besides the address: torch keeps p.grad's dtype,
        # shape and device those of p, so they are read once here rather than once per step.
        self.fields = TensorFields(param)


def _split_evenly(items: list, parts: int) -> List[list]:
    """``parts`` consecutive chunks whose sizes differ by at most one (the first ones larger)."""
    quotient, remainder = divmod(len(items), parts)
    chunks, start = [], 0
    for index in range(parts):
        end = start + quotient + (1 if index < remainder else 0)
        chunks.append(items[start:end])
        start = end
    return chunks


def _validate_groups(groups) -> None:
    if isinstance(groups, list):
        seen = set()
        for group in groups:
            for p in group:
                if not isinstance(p, torch.Tensor):
                    raise ValueError('groups must consist of torch.Tensor.')
                if id(p) in seen:
                    raise ValueError('A parameter can only appear once in groups.')
                seen.add(id(p))
    elif isinstance(groups, bool) or not isinstance(groups, int) or groups <= 0:
        raise ValueError('groups should be a non-negative integer or a list of list of '
                         'torch.Tensor.')


class _DistributedOptimizer(torch.optim.Optimizer):
    """Mixed in front of the wrapped optimizer's class by DistributedOptimizer().

    ``super()`` here resolves to the wrapped class, so its __init__/step/zero_grad/state_dict do
    the optimizer's own work and ``isinstance(opt, type(wrapped))`` holds.
    """

    def __init__(self, params, named_parameters, compression, backward_passes_per_step=1,
                 op=Average, gradient_predivide_factor=1.0, groups=None, sparse_as_dense=False,
                 process_set=global_process_set):
        super().__init__(params)
        self._compression = compression
        self._parameter_names = self._name_parameters(named_parameters)
        self.backward_passes_per_step = backward_passes_per_step
        self.op = op
        self.gradient_predivide_factor = gradient_predivide_factor
        self.sparse_as_dense = sparse_as_dense
        self.process_set = process_set

        # Allreduces outside the batches: key a parameter, or a tuple of parameters for a grouped
        # allreduce; value (handle, ctx). The batches (_hook_batch.py) hold the others.
        self._handles: Dict[object, tuple] = {}
        self._batches = Batches()
        self._slots: List[_Slot] = []  # one per hooked parameter, in _update_order
        self._grad_accs = []         # AccumulateGrad nodes: the hooks live as long as these do
        self._hook_handles = []
        self._requires_update = set()
        self._update_order: List[torch.Tensor] = []
        self._synchronized = False
        self._should_synchronize = True

        if groups is not None:
            _validate_groups(groups)
        self._groups = groups
        self._p_to_group: Dict[torch.Tensor, Tuple[torch.Tensor, ...]] = {}
        self._group_counts: Dict[Tuple[torch.Tensor, ...], int] = {}

        if self.process_set.included() and (size() > 1 or settings.current().elastic):
            self._register_hooks()

    def _name_parameters(self, named_parameters) -> Dict[torch.Tensor, str]:
        return name_parameters(self.param_groups, named_parameters)

    @staticmethod
    def find_duplicates(names) -> set:
        return duplicates(names)

    def load_state_dict(self, *args, **kwargs):
        self._reset_pending()
        self._synchronized = False
        self._should_synchronize = True
        return super().load_state_dict(*args, **kwargs)

    def set_backward_passes_per_step(self, passes: int) -> None:
        self.backward_passes_per_step = passes
        for slot in self._slots:
            slot.delay = passes

    def _reset_pending(self) -> None:
        self._handles = {}
        self._batches.reset()
        passes = self.backward_passes_per_step
        for slot in self._slots:
            slot.delay = passes
        for group in self._group_counts:
            self._group_counts[group] = 0

    # ---- hooks -------------------------------------------------------------------------------

    def _register_hooks(self) -> None:
        trainable = [p for group in self.param_groups for p in group['params'] if p.requires_grad]
        if self._groups is not None:
            self._form_groups(trainable)
        for p in trainable:
            if p in self._requires_update:
                continue
            self._requires_update.add(p)
            self._update_order.append(p)
            slot = _Slot(p, self.backward_passes_per_step, self._parameter_names.get(p))
            self._slots.append(slot)
            hook_ready_gradient(self, p, slot)
        remove_hooks_with(self)

    def _form_groups(self, trainable: List[torch.Tensor]) -> None:
        # Every rank must put the same parameters into the same group under the same name, so all
        # take rank 0's order of the parameter names (as Horovod does).
        names = [self._parameter_names.get(p) for p in trainable]
        root_order = broadcast_object(names, root_rank=self._root_rank(),
                                      name='DistributedOptimizer.groups',
                                      process_set=self.process_set)
        position = {name: index for index, name in enumerate(root_order)}
        missing = [name for name in names if name not in position]
        if missing:
            raise ValueError('DistributedOptimizer groups: parameters %s are not trainable on '
                             'rank 0' % ', '.join(map(str, missing)))
        trainable = sorted(trainable, key=lambda p: position[self._parameter_names.get(p)])
        if isinstance(self._groups, list):
            trainable_ids = {id(p) for p in trainable}
            chunks = [[p for p in group if id(p) in trainable_ids] for group in self._groups]
            grouped = {id(p) for chunk in chunks for p in chunk}
            chunks += [[p] for p in trainable if id(p) not in grouped]
        else:
            chunks = _split_evenly(trainable, self._groups)
        for chunk in chunks:
            if not chunk:
                continue
            group = tuple(chunk)
            for p in group:
                self._p_to_group[p] = group
            self._group_counts[group] = 0

    def _root_rank(self) -> int:
        ranks = getattr(self.process_set, 'ranks', None)
        return ranks[0] if ranks else 0

    def _grad_ready(self, slot: _Slot) -> None:
        """Runs once per parameter per backward pass: keep it short."""
        delay = slot.delay
        if delay <= 0:
            raise AssertionError(TOO_MANY_PASSES)
        delay -= 1
        slot.delay = delay
        if delay > 0:
            self._handles[slot.param] = _NOT_REDUCED
        elif self._groups is None:
            if self.backward_passes_per_step > 1:
                self._handles.pop(slot.param, None)  # _NOT_REDUCED of the earlier passes
            self._batches.add(self, slot)
        else:
            p = slot.param
            group = self._p_to_group[p]
            ready = self._group_counts[group] + 1
            if ready < len(group):
                self._group_counts[group] = ready
                self._handles[p] = _NOT_REDUCED
            else:
                self._start_group(group)

    # ---- allreduces --------------------------------------------------------------------------

    def _scale_factors(self) -> Tuple[float, float]:
        # For Average the runtime divides by the process set's size after the sum; the predivide
        # factor moves part of that division in front of it.
        if self.op == Average:
            return 1.0 / self.gradient_predivide_factor, self.gradient_predivide_factor
        return 1.0, 1.0

    def _gradient_of(self, p: torch.Tensor) -> torch.Tensor:
        if p.grad is None:
            # Unused here, but another rank may have a gradient for it: every rank must submit.
            p.grad = torch.zeros(p.shape, dtype=p.dtype, device=p.device)
        return p.grad

    def _allreduce_grad_async(self, p: torch.Tensor):
        name = self._parameter_names.get(p)
        grad = self._gradient_of(p)
        if grad.is_sparse:
            if not self.sparse_as_dense:
                return sparse_allreduce_async(grad, name=name, op=self.op,
                                              process_set=self.process_set), None
            grad = grad.to_dense()
        compressed, ctx = self._compression.compress(grad)
        prescale, postscale = self._scale_factors()
        handle = allreduce_async_(compressed, name=name, op=self.op, prescale_factor=prescale,
                                  postscale_factor=postscale, process_set=self.process_set)
        return handle, ctx

    def _start_group(self, group: Tuple[torch.Tensor, ...]) -> None:
        self._group_counts[group] = 0
        for p in group:
            self._handles.pop(p, None)
        self._handles[group] = self._grouped_allreduce_grad_async(group)

    def _grouped_allreduce_grad_async(self, group: Tuple[torch.Tensor, ...]):
        grads = []
        for p in group:
            grad = self._gradient_of(p)
            if grad.is_sparse:
                if not self.sparse_as_dense:
                    raise ValueError('the sparse gradient of %s cannot join a grouped allreduce; '
                                     'pass sparse_as_dense=True or leave it out of groups'
                                     % self._parameter_names.get(p))
                grad = grad.to_dense()
            grads.append(grad)
        compressed, ctxs = zip(*[self._compression.compress(grad) for grad in grads])
        prescale, postscale = self._scale_factors()
        handle = grouped_allreduce_async_(list(compressed), name=self._parameter_names.get(group[0]),
                                          op=self.op, prescale_factor=prescale,
                                          postscale_factor=postscale, process_set=self.process_set)
        return handle, ctxs

    def _start_missing(self) -> None:
        """Submits what the hooks did not: parameters without a gradient on this rank, and
        gradients whose backward_passes_per_step count was not reached."""
        if self._groups is None:
            ready = self._batches.ready
            for slot in self._slots:
                if slot.delay > 0:  # its hook did not fire, or fired fewer times than the passes
                    if slot.delay < self.backward_passes_per_step:
                        self._handles.pop(slot.param, None)  # _NOT_REDUCED
                    slot.delay = 0
                    ready.append(slot)
            self._batches.flush(self)
            return
        for group in self._group_counts:
            if group not in self._handles:
                self._start_group(group)

    def _write_gradient(self, p: torch.Tensor, output, ctx) -> None:
        if callable(output):  # sparse_allreduce_async's handle returns the reduced sparse tensor
            p.grad = output()
            return
        reduced = self._compression.decompress(output, ctx)
        if p.grad.is_sparse:
            p.grad = reduced.to_sparse()  # sparse_as_dense: back to the layout the update expects
        else:
            p.grad.set_(reduced)

    def synchronize(self) -> None:
        if not self.process_set.included():
            self._synchronized = True
            return
        try:
            self._start_missing()
            self._batches.wait(self)
            if self._handles:
                self._synchronize_handles()
        finally:
            # After a failure too: the next step (or an elastic restore) starts from a clean slate.
            self._reset_pending()
        self._synchronized = True

    def _synchronize_handles(self) -> None:
        """The allreduces outside the batches: grouped ones, sparse gradients' allgathers."""
        for key, (handle, ctx) in self._handles.items():
            if isinstance(key, tuple):
                outputs = synchronize_handle(handle)
                for p, output, p_ctx in zip(key, outputs, ctx):
                    self._write_gradient(p, output, p_ctx)
            elif callable(handle):
                self._write_gradient(key, handle, ctx)
            else:
                self._write_gradient(key, synchronize_handle(handle), ctx)

    def _local_step(self, closure=None):
        """The wrapped optimizer's own step, without allreduces (broadcast_optimizer_state)."""
        return super().step(closure)

    @contextmanager
    def skip_synchronize(self):
        """step() inside this context does not synchronize; for use after an explicit
        synchronize(), e.g. to clip the averaged gradients before the update."""
        self._should_synchronize = False
        try:
            yield
        finally:
            self._should_synchronize = True

    def step(self, closure=None):
        if self._should_synchronize:
            if self._synchronized:
                warnings.warn(_STEP_AFTER_SYNCHRONIZE)
            self.synchronize()
        self._synchronized = False
        loss = super().step(closure)
        progress = runtime_state.progress
        if progress.active:  # rank 0's progress lines count the step (docs/progress.md)
            progress.count(OPTIMIZER)
        return loss

    def zero_grad(self, *args, **kwargs):
        if self._handles or self._batches.busy():
            raise AssertionError(ZERO_GRAD_PENDING)
        return super().zero_grad(*args, **kwargs)


def DistributedOptimizer(optimizer, named_parameters=None, compression=Compression.none,
                         backward_passes_per_step=1, op=Average, gradient_predivide_factor=1.0,
                         num_groups=0, groups=None, sparse_as_dense=False,
                         process_set=global_process_set):
    """Wraps ``optimizer`` so that each gradient is allreduced across ranks before the update.

    The allreduces start during ``loss.backward()``, one per parameter, as gradients are
    accumulated (handed to the runtime in batches), and ``step()`` waits for them
    (``synchronize()``). To change the averaged
    gradients before the update (clipping), call ``optimizer.synchronize()`` and then
    ``optimizer.step()`` inside ``with optimizer.skip_synchronize():``.

    Arguments (as horovod.torch.DistributedOptimizer):
        optimizer: the torch.optim.Optimizer to wrap; the result is an instance of its class.
        named_parameters: ``(name, parameter)`` pairs, usually ``model.named_parameters()``;
            gradients are reduced as ``allreduce.<name>``. Names must be unique and cover every
            parameter of the optimizer. Without them: ``allreduce.noname.<group>.<index>``.
        compression: Compression.none, .fp16 or .bf16 for the data sent.
        backward_passes_per_step: backward passes accumulated locally before one allreduce.
        op: Average (default), Sum or Adasum. With Adasum (on more than one rank) the result
            is Horovod's delta optimizer (_adasum_optimizer.py): each parameter's update, not
            its gradient, is combined by Adasum; groups and sparse_as_dense do not apply.
        gradient_predivide_factor: with op=Average, gradients are scaled by 1/factor before the
            sum and by factor/size after it.
        num_groups: deprecated spelling of an integer ``groups``.
        groups: an int n (parameters split into n grouped allreduces) or a list of lists of
            parameters (each list one grouped allreduce; parameters in no list reduce alone).
        sparse_as_dense: reduce sparse gradients as dense tensors.
        process_set: reduce over this process set only (default: all ranks).
    """
    if gradient_predivide_factor != 1.0 and op != Average:
        raise ValueError('gradient_predivide_factor not supported with op != Average')
    if num_groups != 0:
        warnings.warn('Parameter `num_groups` has been replaced by `groups` and will be removed '
                      'in v0.23.0.', DeprecationWarning)
        if groups is None:
            groups = num_groups
    if backward_passes_per_step <= 0:
        raise ValueError('backward_passes_per_step must be > 0')
    if isinstance(optimizer, (_DistributedOptimizer, _DistributedAdasumOptimizer)):
        raise ValueError('optimizer is already a DistributedOptimizer')

    if op == Adasum and size() > 1 and process_set.included():  # the others step alone, as below
        cls = type(optimizer.__class__.__name__, (_DistributedAdasumOptimizer, optimizer.__class__), {})
        wrapped = cls(optimizer.param_groups, named_parameters, compression, backward_passes_per_step,
                      process_set)
    else:
        cls = type(optimizer.__class__.__name__, (_DistributedOptimizer, optimizer.__class__), {})
        wrapped = cls(optimizer.param_groups, named_parameters, compression, backward_passes_per_step,
                      op, gradient_predivide_factor, groups, sparse_as_dense, process_set)
    # The parameter groups are the wrapped optimizer's own dicts (shared, as in Horovod); share
    # its state and constructor defaults too, so state loaded before wrapping is kept and
    # add_param_group() fills in the user's hyper-parameters rather than the class defaults.
    wrapped.state = optimizer.state
    wrapped.defaults = optimizer.defaults
    return wrapped
