"""Broadcasting a model and its optimizer from one rank, and exchanging Python objects.

Semantics of horovod/torch/functions.py (0.28.1). Objects travel as korovod.common.objects sends
them for every binding (cloudpickle bytes, int64 lengths).
"""

from collections.abc import Iterable
from typing import Any, Dict, List, NamedTuple, Optional

import torch

from korovod.torch.mpi_ops import broadcast_async_, global_process_set, rank, synchronize


def broadcast_parameters(params, root_rank: int, process_set=global_process_set) -> None:
    """Overwrites ``params`` on every rank with root_rank's values, in place.

    ``params``: a dict (``model.state_dict()``), or a sequence of parameters or of
    ``(name, parameter)`` pairs (``model.parameters()``, ``model.named_parameters()``).
    """
    if isinstance(params, dict):
        named = sorted(params.items())
    elif isinstance(params, Iterable) and not torch.is_tensor(params):
        named = [entry if isinstance(entry, tuple) else (None, entry) for entry in params]
    else:
        raise ValueError('invalid params of type: %s' % type(params))

    handles = []
    for index, (name, tensor) in enumerate(named):
        # Unnamed entries get a name from their position so that every rank pairs the same ones.
        name = f'broadcast_parameters.{index}' if name is None else name
        target = tensor.detach() if tensor.requires_grad else tensor
        handles.append(broadcast_async_(target, root_rank, name, process_set))
    for handle in handles:
        synchronize(handle)


def broadcast_object(obj: Any, root_rank: int = 0, name: Optional[str] = None,
                     process_set=global_process_set) -> Any:
    """Returns root_rank's ``obj`` on every rank (root_rank gets its own object back)."""
    from korovod.common import objects  # numpy on use only: PyPI's torch does not require it

    if name is None:
        name = type(obj).__name__
    return objects.broadcast_object(obj, root_rank, name, process_set)


def allgather_object(obj: Any, name: Optional[str] = None,
                     process_set=global_process_set) -> List[Any]:
    """Returns the list of every rank's ``obj``, in rank order of the process set."""
    from korovod.common import objects  # numpy on use only: PyPI's torch does not require it

    if name is None:
        name = type(obj).__name__
    return objects.allgather_object(obj, name, process_set)


# ---- optimizer state ---------------------------------------------------------------------------

class _TensorSpec(NamedTuple):
    """What the root sends instead of a tensor value; the values follow by broadcast_."""
    shape: tuple
    dtype: torch.dtype
    on_param_device: bool  # else on the CPU (e.g. the 'step' counters of torch 2.x optimizers)


def _describe(value, device: torch.device):
    if torch.is_tensor(value):
        return _TensorSpec(tuple(value.shape), value.dtype, value.device == device)
    return value


def _layout(optimizer) -> Dict[str, Any]:
    """Root's hyper-parameters and state: plain values as they are, tensors as _TensorSpec."""
    groups, state = [], {}
    index = 0
    for group in optimizer.param_groups:
        device = group['params'][0].device if group['params'] else torch.device('cpu')
        groups.append({key: _describe(value, device) for key, value in group.items()
                       if key != 'params'})
        for p in group['params']:
            if optimizer.state.get(p):
                state[index] = {key: _describe(value, p.device)
                                for key, value in optimizer.state[p].items()}
            index += 1
    return {'sizes': [len(group['params']) for group in optimizer.param_groups],
            'groups': groups, 'state': state}


def _adopt(target: dict, layout: dict, device: torch.device, prefix: str, tensors: list) -> None:
    """Makes ``target`` hold root's keys: plain values copied, tensors of root's shape and dtype
    (reused when they already match) queued in ``tensors`` for the broadcast."""
    for key in [key for key in target if key not in layout and key != 'params']:
        del target[key]
    for key, value in layout.items():
        if not isinstance(value, _TensorSpec):
            target[key] = value
            continue
        where = device if value.on_param_device else torch.device('cpu')
        current = target.get(key)
        if not (torch.is_tensor(current) and tuple(current.shape) == value.shape
                and current.dtype == value.dtype and current.device == where):
            current = torch.empty(value.shape, dtype=value.dtype, device=where)
            target[key] = current
        tensors.append((f'{prefix}.{key}', current))


def _create_state(optimizer, model) -> None:
    """Creates the state of an optimizer that has not stepped yet (as Horovod does: one step with
    zero gradients), leaving the parameters' values unchanged (weight decay would move them)."""
    sparse_ids = set()
    if model is not None:
        for module in model.modules():
            if isinstance(module, torch.nn.Embedding) and module.sparse:
                sparse_ids.update(id(p) for p in module.parameters())
    saved = []
    for group in optimizer.param_groups:
        for p in group['params']:
            if not p.requires_grad:
                continue
            saved.append((p, p.detach().clone()))
            grad = torch.zeros(p.shape, dtype=p.dtype, device=p.device)
            if isinstance(optimizer, torch.optim.SparseAdam) or (
                    isinstance(optimizer, torch.optim.SGD) and id(p) in sparse_ids):
                grad = grad.to_sparse()
            p.grad = grad
    # A DistributedOptimizer's own step() would allreduce: run only the wrapped optimizer's.
    getattr(optimizer, '_local_step', optimizer.step)()
    with torch.no_grad():
        for p, value in saved:
            p.copy_(value)


def broadcast_optimizer_state(optimizer, root_rank: int, model=None,
                              process_set=global_process_set) -> None:
    """Makes every rank's optimizer state and hyper-parameters equal root_rank's.

    Works for a DistributedOptimizer or a plain torch.optim optimizer, also before its first
    step. Tensors are broadcast in place; plain values (learning rate, betas, nesterov, ...)
    travel pickled and keep their Python types. ``model`` marks sparse embeddings (for SGD).
    """
    if isinstance(optimizer, torch.optim.LBFGS):
        raise ValueError('cannot broadcast torch.optim.LBFGS state')
    if not any(optimizer.state.values()):
        _create_state(optimizer, model)

    is_root = rank() == root_rank
    layout = broadcast_object(_layout(optimizer) if is_root else None, root_rank,
                              name='broadcast_optimizer_state', process_set=process_set)
    sizes = [len(group['params']) for group in optimizer.param_groups]
    if sizes != layout['sizes']:
        raise ValueError('broadcast_optimizer_state: parameter groups of sizes %s here, %s on '
                         'rank %d' % (sizes, layout['sizes'], root_rank))

    params = [p for group in optimizer.param_groups for p in group['params']]
    tensors = []
    for index, (group, group_layout) in enumerate(zip(optimizer.param_groups, layout['groups'])):
        device = group['params'][0].device if group['params'] else torch.device('cpu')
        if is_root:
            tensors += [(f'optimizer_state.group.{index}.{key}', value)
                        for key, value in group.items() if torch.is_tensor(value)]
        else:
            _adopt(group, group_layout, device, f'optimizer_state.group.{index}', tensors)
    for index, p in enumerate(params):
        entry = layout['state'].get(index)
        if is_root:
            tensors += [(f'optimizer_state.{index}.{key}', value)
                        for key, value in (optimizer.state[p].items() if entry else ())
                        if torch.is_tensor(value)]
        elif entry is None:
            optimizer.state.pop(p, None)
        else:
            _adopt(optimizer.state[p], entry, p.device, f'optimizer_state.{index}', tensors)

    handles = [broadcast_async_(tensor, root_rank, name, process_set) for name, tensor in tensors]
    for handle in handles:
        synchronize(handle)
