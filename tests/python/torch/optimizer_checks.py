"""Models, batches and expected gradients shared by the DistributedOptimizer tests.

Every rank trains on its own batch; every rank can also compute every other rank's gradients
locally (the batches come from per-rank seeds), so the expected averages need no communication.
Models are float64 so that the runtime's reduction order cannot matter (tolerance 1e-12).
"""

import pytest
import torch
import torch.nn.functional as F

import korovod.torch as hvd
import korovod.torch._optimizer_hooks as optimizer_hooks
from training_checks import assert_close, check_on_all_ranks

ONE_RANK = 'with one rank DistributedOptimizer registers no hooks and reduces nothing (as Horovod)'
TIGHT = dict(rtol=1e-12, atol=1e-12)


def make_model(seed=7, dtype=torch.float64):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.Tanh(),
                               torch.nn.Linear(5, 3)).to(dtype)


def batch_of(rank, step=0, rows=4, dtype=torch.float64):
    generator = torch.Generator().manual_seed(1000 + 31 * rank + step)
    return (torch.randn(rows, 6, generator=generator, dtype=torch.float64).to(dtype),
            torch.randn(rows, 3, generator=generator, dtype=torch.float64).to(dtype))


def loss_of(model, batch):
    inputs, targets = batch
    return F.mse_loss(model(inputs), targets)


def snapshot(model):
    return {name: value.detach().clone() for name, value in model.state_dict().items()}


def local_gradients(state, batches, make=make_model):
    """Gradients of a fresh model holding ``state``, accumulated over ``batches``."""
    model = make()
    model.load_state_dict(state)
    for batch in batches:
        loss_of(model, batch).backward()
    return {name: p.grad.clone() for name, p in model.named_parameters()}


def per_rank_gradients(state, steps=(0,)):
    """Each rank's gradients when rank r ran backward on batch_of(r, s) for each s in ``steps``,
    starting from ``state``."""
    return [local_gradients(state, [batch_of(r, step) for step in steps])
            for r in range(hvd.size())]


def expected_reduction(state, steps=(0,), op='average'):
    per_rank = per_rank_gradients(state, steps)
    total = {name: sum(grads[name] for grads in per_rank) for name in per_rank[0]}
    if op == 'sum':
        return total
    return {name: value / hvd.size() for name, value in total.items()}


def distributed(model, lr=0.5, **kwargs):
    return hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=lr),
                                    named_parameters=model.named_parameters(), **kwargs)


def check_gradients(model, expected, rtol=1e-12, atol=1e-12):
    def check():
        for name, p in model.named_parameters():
            assert_close(p.grad, expected[name], 'gradient of ' + name, rtol, atol)
    check_on_all_ranks(check)



def assert_equal(actual, expected):
    assert actual == expected, '%r != %r' % (actual, expected)



@pytest.fixture(params=['post_accumulate_grad_hook', 'grad_accumulator_hook'])
def hook_kind(request, monkeypatch):
    """Each way DistributedOptimizer can hook gradients; torch >= 2.1 runs both."""
    if request.param == 'post_accumulate_grad_hook':
        if not optimizer_hooks.HAS_POST_ACCUMULATE_GRAD_HOOK:
            pytest.skip('torch %s has no register_post_accumulate_grad_hook (torch >= 2.1)'
                        % torch.__version__)
    else:
        monkeypatch.setattr(optimizer_hooks, 'HAS_POST_ACCUMULATE_GRAD_HOOK', False)
    return request.param

