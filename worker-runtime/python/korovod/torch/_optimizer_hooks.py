"""What both DistributedOptimizers (optimizer.py, _adasum_optimizer.py) share: parameter naming,
the gradient hooks and Horovod's error messages."""

import weakref
from typing import Dict, Iterable, Optional

import torch

# torch >= 2.1 fires this hook after p.grad is final, also for models run under torch.compile;
# older versions only offer a hook on the parameter's AccumulateGrad node.
HAS_POST_ACCUMULATE_GRAD_HOOK = hasattr(torch.Tensor, 'register_post_accumulate_grad_hook')

TOO_MANY_PASSES = ('Gradients were computed more than backward_passes_per_step times before call '
                   'to step(). Increase backward_passes_per_step to accumulate gradients locally.')
ZERO_GRAD_PENDING = ('optimizer.zero_grad() was called after loss.backward() but before '
                     'optimizer.step() or optimizer.synchronize(). This is prohibited as it can '
                     'cause a race condition.')


def duplicates(names: Iterable[str]) -> set:
    seen, duplicated = set(), set()
    for name in names:
        (duplicated if name in seen else seen).add(name)
    return duplicated


def name_parameters(param_groups, named_parameters) -> Dict[torch.Tensor, str]:
    """{parameter: name} for every parameter of ``param_groups``: the given names, checked to be
    unique and complete, or ``allreduce.noname.<group>.<index>`` without them (Horovod's)."""
    if named_parameters is None:
        named_parameters = [(f'allreduce.noname.{i}.{j}', p)
                            for i, group in enumerate(param_groups)
                            for j, p in enumerate(group['params'])]
    else:
        named_parameters = list(named_parameters)
    if any(not isinstance(entry, tuple) for entry in named_parameters):
        raise ValueError('named_parameters should be a sequence of tuples (name, parameter), '
                         'usually produced by model.named_parameters().')
    duplicated = duplicates(name for name, _ in named_parameters)
    if duplicated:
        raise ValueError('Parameter names in named_parameters must be unique. '
                         'Found duplicates: %s' % ', '.join(sorted(duplicated)))
    named_ids = {id(p) for _, p in named_parameters}
    unnamed = [p for group in param_groups for p in group['params'] if id(p) not in named_ids]
    if unnamed:
        raise ValueError('named_parameters was specified, but one or more model parameters '
                         'were not named. Python object ids: %s'
                         % ', '.join(str(id(p)) for p in unnamed))
    return {p: name for name, p in sorted(named_parameters, key=lambda entry: entry[0])}


def _post_accumulate_hook(optimizer_ref, key):
    def hook(_):
        optimizer = optimizer_ref()
        if optimizer is not None:
            optimizer._grad_ready(key)
    return hook


def _grad_accumulator_hook(optimizer_ref, key):
    def hook(*_):
        optimizer = optimizer_ref()
        if optimizer is not None:
            optimizer._grad_ready(key)
    return hook


def _remove_hooks(handles) -> None:
    for handle in handles:
        handle.remove()


def hook_ready_gradient(optimizer, p: torch.Tensor, key: Optional[object]) -> None:
    """optimizer._grad_ready(key) runs each time p's gradient has been accumulated: a
    post-accumulate-grad hook where torch has them, else a hook on p's AccumulateGrad node (kept
    alive in optimizer._grad_accs). The hooks see the optimizer through a weak reference: a
    discarded optimizer must not keep reducing (under the same names) the gradients of a model
    that a new one now owns."""
    optimizer_ref = weakref.ref(optimizer)
    if HAS_POST_ACCUMULATE_GRAD_HOOK:
        hook = _post_accumulate_hook(optimizer_ref, key)
        optimizer._hook_handles.append(p.register_post_accumulate_grad_hook(hook))
    else:
        grad_acc = p.expand_as(p).grad_fn.next_functions[0][0]
        grad_acc.register_hook(_grad_accumulator_hook(optimizer_ref, key))
        optimizer._grad_accs.append(grad_acc)


def remove_hooks_with(optimizer) -> None:
    """The post-accumulate-grad hooks go when the optimizer does."""
    if optimizer._hook_handles:
        weakref.finalize(optimizer, _remove_hooks, optimizer._hook_handles)
