"""DistributedOptimizer during backward: allreduces start from the gradient hooks (both kinds,
also under torch.compile), handed to the runtime in batches (by size, by time, at the end of
backward; ranks may batch differently); a gradient the ranks disagree on; parameters without
gradients, frozen ones, sparse ones; process sets.
"""

import gc
import time

import pytest
import torch
import torch.nn.functional as F

import korovod.torch as hvd
from korovod.torch import _hook_batch
from optimizer_checks import (ONE_RANK, TIGHT, assert_equal, batch_of, check_gradients, distributed,
                              expected_reduction, loss_of, make_model, per_rank_gradients, snapshot)
from optimizer_checks import hook_kind  # noqa: F401 (a fixture)
from training_checks import assert_close, check_on_all_ranks


@pytest.fixture(autouse=True, scope='module')
def runtime():
    hvd.init()


class TwoHeads(torch.nn.Module):
    """Rank 0 trains head ``a``, the other ranks head ``b``: each head is unused somewhere."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(11)
        self.body = torch.nn.Linear(6, 5).double()
        self.a = torch.nn.Linear(5, 3).double()
        self.b = torch.nn.Linear(5, 3).double()

    def forward(self, inputs, use_a):
        return (self.a if use_a else self.b)(torch.tanh(self.body(inputs)))


def test_parameters_unused_on_some_ranks_get_the_average_with_zeros():
    model = TwoHeads()
    before = snapshot(model)
    optimizer = distributed(model)
    inputs, targets = batch_of(hvd.rank())
    F.mse_loss(model(inputs, hvd.rank() == 0), targets).backward()
    optimizer.step()

    per_rank = []
    for r in range(hvd.size()):
        reference = TwoHeads()
        reference.load_state_dict(before)
        inputs, targets = batch_of(r)
        F.mse_loss(reference(inputs, r == 0), targets).backward()
        per_rank.append({name: torch.zeros_like(p) if p.grad is None else p.grad
                         for name, p in reference.named_parameters()})
    expected = {name: sum(g[name] for g in per_rank) / hvd.size() for name in per_rank[0]}

    def check():
        for name, p in model.named_parameters():
            if hvd.size() == 1 and name.startswith('b.'):
                assert p.grad is None, 'one rank: nothing reduced, so %s keeps no gradient' % name
            else:
                assert_close(p.grad, expected[name], name, **TIGHT)
    check_on_all_ranks(check)


def test_parameters_frozen_and_unfrozen_between_steps():
    # Horovod's test_dynamic_requires_grad: two optimizers, one model trained at a time.
    if hvd.size() == 1:
        pytest.skip(ONE_RANK)
    generator, discriminator = torch.nn.Conv2d(1, 10, 1), torch.nn.Conv2d(10, 1, 1)
    inputs = torch.rand([1, 1, 20, 20])
    gen_opt = hvd.DistributedOptimizer(torch.optim.SGD(generator.parameters(), lr=0.1),
                                       named_parameters=generator.named_parameters())
    disc_opt = hvd.DistributedOptimizer(torch.optim.SGD(discriminator.parameters(), lr=0.1),
                                        named_parameters=discriminator.named_parameters())
    outcomes = []
    for train_generator in [True, False, True, False]:
        for p in generator.parameters():
            p.requires_grad_(train_generator)
        for p in discriminator.parameters():
            p.requires_grad_(not train_generator)
        gen_opt.zero_grad()
        disc_opt.zero_grad()
        discriminator(generator(inputs)).sum().backward()
        (gen_opt if train_generator else disc_opt).step()
        outcomes.append(all(p.grad is not None and bool(p.grad.abs().max() > 0)
                            for p in (generator if train_generator else discriminator).parameters()))
    check_on_all_ranks(lambda: assert_equal(outcomes, [True] * 4))


@pytest.mark.parametrize('sparse_as_dense', [True, False])
def test_sparse_embedding_gradients_are_averaged(sparse_as_dense):
    torch.manual_seed(5)
    embedding = torch.nn.Embedding(10, 3, sparse=True).double()
    before = snapshot(embedding)
    optimizer = hvd.DistributedOptimizer(torch.optim.SparseAdam(list(embedding.parameters()), lr=0.1),
                                         named_parameters=embedding.named_parameters(),
                                         sparse_as_dense=sparse_as_dense)
    indices = [torch.tensor([[1, 2, 4, 5], [4, 3, 2, 9]]), torch.tensor([[1, 3, 4], [4, 7, 9]]),
               torch.tensor([[0, 0, 8]])]
    embedding(indices[hvd.rank() % 3]).sum().backward()
    optimizer.synchronize()

    expected = torch.zeros(10, 3, dtype=torch.float64)
    for r in range(hvd.size()):
        reference = torch.nn.Embedding(10, 3, sparse=True).double()
        reference.load_state_dict(before)
        reference(indices[r % 3]).sum().backward()
        expected += reference.weight.grad.to_dense()
    expected /= hvd.size()
    grad = embedding.weight.grad
    check_on_all_ranks(lambda: (assert_equal(grad.is_sparse, True),
                                assert_close(grad.to_dense(), expected, 'embedding', **TIGHT)))
    with optimizer.skip_synchronize():
        optimizer.step()


class _OnBackward(torch.autograd.Function):
    """Identity whose backward calls ``callback``. At the model's input (a probe), its backward
    runs after every layer's gradient is accumulated but while loss.backward() is still running;
    between two layers, with a callback that sleeps, it is a slow layer between two fast ones."""

    @staticmethod
    def forward(ctx, inputs, callback):
        ctx.callback = callback
        return inputs.view_as(inputs)

    @staticmethod
    def backward(ctx, grad):
        ctx.callback()
        return grad, None


def in_flight(optimizer, p) -> bool:
    """Whether p's gradient was handed to the runtime (not just noted by its hook)."""
    return any(entry[0].param is p for entry in optimizer._batches.entries)


def started_during_backward(model, forward):
    optimizer = distributed(model)
    last_layer = [p for p in model[2].parameters()]
    seen = []

    def record():
        seen.append([in_flight(optimizer, p) for p in last_layer])

    inputs, targets = batch_of(hvd.rank())
    F.mse_loss(forward(_OnBackward.apply(inputs.requires_grad_(), record)), targets).backward()
    optimizer.step()
    return seen


@pytest.fixture
def unbatched(monkeypatch):
    """Every gradient goes to the runtime from its own hook (no batching by time or size)."""
    monkeypatch.setattr(_hook_batch, 'FLUSH_BYTES', 1)


def test_allreduces_start_while_backward_is_running(hook_kind, unbatched):
    if hvd.size() == 1:
        pytest.skip(ONE_RANK)
    model = make_model()
    seen = started_during_backward(model, model)
    check_on_all_ranks(lambda: assert_equal(seen, [[True, True]]))


def test_allreduces_start_during_backward_of_a_compiled_model(unbatched):
    if not hasattr(torch.Tensor, 'register_post_accumulate_grad_hook'):
        pytest.skip('torch %s has no register_post_accumulate_grad_hook (torch >= 2.1), the hook '
                    'that works under torch.compile' % torch.__version__)
    if hvd.size() == 1:
        pytest.skip(ONE_RANK)
    model = make_model()
    before = snapshot(model)
    seen = started_during_backward(model, torch.compile(model))
    check_on_all_ranks(lambda: assert_equal(seen, [[True, True]]))
    expected = expected_reduction(before)
    check_gradients(model, expected, rtol=1e-9, atol=1e-12)


def test_batched_gradients_reach_the_runtime_while_backward_is_slow(hook_kind):
    # Default batching: the last layer's two gradients come together; the first layer's come
    # after a pause in backward longer than FLUSH_SECONDS, so its first hook hands over what
    # waited -- still during backward, before the probe at the input runs.
    if hvd.size() == 1:
        pytest.skip(ONE_RANK)
    model = make_model()
    before = snapshot(model)
    pause = 4 * _hook_batch.FLUSH_SECONDS

    def slow():
        time.sleep(pause)

    seen = started_during_backward(model, lambda x: model[2](_OnBackward.apply(model[1](model[0](x)), slow)))
    check_on_all_ranks(lambda: assert_equal(seen, [[True, True]]))
    check_gradients(model, expected_reduction(before))


def test_every_gradient_is_handed_over_by_the_end_of_backward(hook_kind):
    if hvd.size() == 1:
        pytest.skip(ONE_RANK)
    model = make_model()
    before = snapshot(model)
    optimizer = distributed(model)
    loss_of(model, batch_of(hvd.rank())).backward()
    handed = [in_flight(optimizer, p) for p in model.parameters()]
    waiting = list(optimizer._batches.ready)
    optimizer.step()
    check_on_all_ranks(lambda: (assert_equal(handed, [True] * 4), assert_equal(waiting, [])))
    check_gradients(model, expected_reduction(before))


def train_checking_each_step(model, optimizer, steps):
    """Trains on this rank's batches; after each step the gradients must be the ranks' average."""
    for step in range(steps):
        start = snapshot(model)
        optimizer.zero_grad()
        loss_of(model, batch_of(hvd.rank(), step=step)).backward()
        optimizer.step()
        check_gradients(model, expected_reduction(start, steps=(step,)))


def test_ranks_that_batch_differently_reduce_the_same_gradients(monkeypatch):
    # Rank 0 hands every gradient over alone, the others all at once at the end of backward:
    # each allreduce meets its peers by name, whatever batch it came in.
    alone = hvd.rank() == 0
    monkeypatch.setattr(_hook_batch, 'FLUSH_BYTES', 1 if alone else 1 << 40)
    monkeypatch.setattr(_hook_batch, 'FLUSH_SECONDS', 0.0 if alone else 1e9)
    model = make_model()
    optimizer = distributed(model, lr=0.1)
    train_checking_each_step(model, optimizer, steps=2)


def test_a_gradient_the_ranks_disagree_on_fails_synchronize_naming_it():
    if hvd.size() == 1:
        pytest.skip(ONE_RANK)
    torch.manual_seed(5)
    width = 3 if hvd.rank() == 0 else 4  # the same name, another shape on the other ranks
    model = torch.nn.Sequential(torch.nn.Linear(2, width).double())
    optimizer = distributed(model)
    model(torch.ones(1, 2, dtype=torch.float64)).sum().backward()
    with pytest.raises(RuntimeError) as raised:
        optimizer.synchronize()
    check_on_all_ranks(lambda: assert_equal('allreduce.0.' in str(raised.value), True))
    # The optimizer starts over: a model the ranks agree on trains with it.
    agreed = make_model()
    before = snapshot(agreed)
    optimizer = distributed(agreed)
    loss_of(agreed, batch_of(hvd.rank())).backward()
    optimizer.step()
    check_gradients(agreed, expected_reduction(before))


def test_a_discarded_optimizer_stops_reducing_the_models_gradients():
    model = make_model()
    distributed(model)
    gc.collect()
    optimizer = distributed(model)
    train_checking_each_step(model, optimizer, steps=2)


@pytest.fixture
def my_half():
    """The even and the odd ranks as two process sets; yields (this rank's set, its ranks)."""
    if hvd.size() == 1:
        pytest.skip('process sets of the even and the odd ranks need 2 ranks or more')
    evens = [r for r in range(hvd.size()) if r % 2 == 0]
    odds = [r for r in range(hvd.size()) if r % 2 == 1]
    even_set, odd_set = hvd.add_process_set(evens), hvd.add_process_set(odds)
    yield (even_set, evens) if hvd.rank() % 2 == 0 else (odd_set, odds)
    hvd.remove_process_set(odd_set)
    hvd.remove_process_set(even_set)


@pytest.mark.parametrize('groups', [None, 2], ids=['per-tensor', 'grouped'])
def test_process_set_averages_over_its_ranks_only(my_half, groups):
    # Horovod's test_optimizer_process_sets, checked against each set's own average.
    process_set, ranks = my_half
    model = make_model()
    before = snapshot(model)
    optimizer = distributed(model, process_set=process_set, groups=groups)
    loss_of(model, batch_of(hvd.rank())).backward()
    optimizer.step()
    per_rank = per_rank_gradients(before)
    expected = {name: sum(per_rank[r][name] for r in ranks) / len(ranks) for name in per_rank[0]}
    check_gradients(model, expected)
