"""DistributedOptimizer: the gradients a step applies are those of all ranks together.

Arguments and their checks, Average/Sum, backward_passes_per_step, synchronize/skip_synchronize,
groups, compression and the predivide factor. Expected values: optimizer_checks.py.
"""

import ctypes
import warnings

import pytest
import torch

import korovod.torch as hvd
from korovod.common import _lib
from optimizer_checks import (ONE_RANK, TIGHT, assert_equal, batch_of, check_gradients, distributed,
                              expected_reduction, loss_of, make_model, per_rank_gradients, snapshot)
from optimizer_checks import hook_kind  # noqa: F401 (a fixture)
from training_checks import assert_close, check_on_all_ranks


@pytest.fixture(autouse=True, scope='module')
def runtime():
    hvd.init()


def test_step_applies_the_average_of_all_ranks_gradients(hook_kind):
    model = make_model()
    before = snapshot(model)
    optimizer = distributed(model, lr=0.5)
    optimizer.zero_grad()
    loss_of(model, batch_of(hvd.rank())).backward()
    optimizer.step()

    expected = expected_reduction(before)
    check_gradients(model, expected)
    check_on_all_ranks(lambda: [
        assert_close(p.detach(), before[name] - 0.5 * expected[name], name + ' after step', **TIGHT)
        for name, p in model.named_parameters()])


def test_wrapped_optimizer_keeps_its_class_state_dict_and_param_groups():
    model = make_model()
    sgd = torch.optim.SGD(model.parameters(), lr=0.25, momentum=0.9)
    optimizer = hvd.DistributedOptimizer(sgd, named_parameters=model.named_parameters())
    loss_of(model, batch_of(hvd.rank())).backward()
    optimizer.step()

    state = optimizer.state_dict()
    fresh = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=1.0, momentum=0.1),
                                     named_parameters=model.named_parameters())
    fresh.load_state_dict(state)

    def check():
        assert isinstance(optimizer, torch.optim.SGD)
        assert type(optimizer).__name__ == 'SGD'
        assert optimizer.param_groups is not sgd.param_groups
        assert optimizer.param_groups[0] is sgd.param_groups[0]  # shared, as in Horovod
        assert optimizer.param_groups[0]['lr'] == 0.25
        assert len(state['state']) == 4 and all('momentum_buffer' in s for s in state['state'].values())
        assert fresh.param_groups[0]['lr'] == 0.25 and fresh.param_groups[0]['momentum'] == 0.9
        for index, p in enumerate(model.parameters()):
            assert torch.equal(fresh.state[p]['momentum_buffer'],
                               state['state'][index]['momentum_buffer'])
        assert sorted(optimizer._parameter_names.values()) == sorted(
            name for name, _ in model.named_parameters())
    check_on_all_ranks(check)


def test_parameters_without_names_get_unique_names_equal_on_all_ranks():
    model = torch.nn.Sequential(torch.nn.Linear(10, 10), torch.nn.Linear(10, 10))
    sgd = torch.optim.SGD([{'params': model[0].parameters()}, {'params': model[1].parameters()}],
                          lr=0.001)
    optimizer = hvd.DistributedOptimizer(sgd)
    names = sorted(optimizer._parameter_names.values())
    everywhere = hvd.allgather_object(names, name='test.noname')
    check_on_all_ranks(lambda: (
        assert_equal(names, ['allreduce.noname.0.0', 'allreduce.noname.0.1',
                             'allreduce.noname.1.0', 'allreduce.noname.1.1']),
        assert_equal(everywhere, [names] * hvd.size())))



def test_duplicate_parameter_names_raise_value_error():
    first, second = torch.nn.Conv2d(1, 1, 1), torch.nn.Conv2d(1, 1, 1)
    sgd = torch.optim.SGD(list(first.parameters()) + list(second.parameters()), lr=0.1)
    named = list(first.named_parameters()) + list(second.named_parameters())
    with pytest.raises(ValueError, match='must be unique.*weight'):
        hvd.DistributedOptimizer(sgd, named_parameters=named)


def test_parameters_missing_from_named_parameters_raise_value_error():
    model = make_model()
    sgd = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(ValueError, match='were not named'):
        hvd.DistributedOptimizer(sgd, named_parameters=list(model.named_parameters())[0:1])
    with pytest.raises(ValueError, match='sequence of tuples'):
        hvd.DistributedOptimizer(sgd, named_parameters=[['0.weight', model[0].weight]])


def test_invalid_arguments_raise():
    model = make_model()
    sgd = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(ValueError, match='gradient_predivide_factor'):
        hvd.DistributedOptimizer(sgd, op=hvd.Sum, gradient_predivide_factor=2.0)
    with pytest.raises(ValueError, match='backward_passes_per_step'):
        hvd.DistributedOptimizer(sgd, backward_passes_per_step=0)
    with pytest.raises(ValueError, match='groups'):
        hvd.DistributedOptimizer(sgd, groups=[[model[0].weight, model[0].weight]])
    with pytest.raises(ValueError, match='groups'):
        hvd.DistributedOptimizer(sgd, groups=-1)
    wrapped = hvd.DistributedOptimizer(sgd, named_parameters=model.named_parameters())
    with pytest.raises(ValueError, match='already a DistributedOptimizer'):
        hvd.DistributedOptimizer(wrapped)


def test_op_sum_applies_the_sum_of_all_ranks_gradients():
    model = make_model()
    before = snapshot(model)
    optimizer = distributed(model, op=hvd.Sum)
    loss_of(model, batch_of(hvd.rank())).backward()
    optimizer.synchronize()
    check_gradients(model, expected_reduction(before, op='sum'))
    with optimizer.skip_synchronize():
        optimizer.step()


def test_backward_passes_per_step_two_reduces_the_accumulated_gradients_once():
    model = make_model()
    before = snapshot(model)
    optimizer = distributed(model, backward_passes_per_step=2)
    loss_of(model, batch_of(hvd.rank(), step=0)).backward()
    started_after_first = [handle for handle, _ in optimizer._handles.values()
                           if handle is not None]
    loss_of(model, batch_of(hvd.rank(), step=1)).backward()
    optimizer.step()
    check_on_all_ranks(lambda: assert_equal(started_after_first, []))
    check_gradients(model, expected_reduction(before, steps=(0, 1)))

    # The count starts over after the step: the next two passes reduce again.
    optimizer.zero_grad()
    after_first_step = snapshot(model)
    loss_of(model, batch_of(hvd.rank(), step=0)).backward()
    loss_of(model, batch_of(hvd.rank(), step=1)).backward()
    optimizer.step()
    check_gradients(model, expected_reduction(after_first_step, steps=(0, 1)))


def test_set_backward_passes_per_step_changes_the_count():
    model = make_model()
    before = snapshot(model)
    optimizer = distributed(model)
    optimizer.set_backward_passes_per_step(3)
    for step in range(3):
        loss_of(model, batch_of(hvd.rank(), step=step)).backward()
    optimizer.step()
    check_gradients(model, expected_reduction(before, steps=(0, 1, 2)))


def test_more_backward_passes_than_declared_raise():
    if hvd.size() == 1:
        pytest.skip(ONE_RANK)
    model = make_model()
    optimizer = distributed(model)
    loss_of(model, batch_of(hvd.rank())).backward()
    with pytest.raises(AssertionError, match='more than backward_passes_per_step'):
        loss_of(model, batch_of(hvd.rank(), step=1)).backward()
    optimizer.synchronize()  # finishes the first pass's allreduces on every rank


def test_zero_grad_while_allreduces_are_pending_raises():
    if hvd.size() == 1:
        pytest.skip(ONE_RANK)
    model = make_model()
    optimizer = distributed(model)
    loss_of(model, batch_of(hvd.rank())).backward()
    with pytest.raises(AssertionError, match='zero_grad\\(\\) was called after loss.backward'):
        optimizer.zero_grad()
    optimizer.step()
    optimizer.zero_grad()  # nothing pending any more


def test_synchronize_then_skip_synchronize_applies_the_clipped_average():
    model = make_model()
    before = snapshot(model)
    optimizer = distributed(model, lr=0.5)
    loss_of(model, batch_of(hvd.rank())).backward()
    optimizer.synchronize()
    expected = expected_reduction(before)
    check_gradients(model, expected)

    torch.nn.utils.clip_grad_norm_(model.parameters(), 0.01)
    clipped = {name: p.grad.clone() for name, p in model.named_parameters()}
    with warnings.catch_warnings():
        warnings.simplefilter('error')  # skip_synchronize: no warning, no second allreduce
        with optimizer.skip_synchronize():
            optimizer.step()
    check_on_all_ranks(lambda: [
        assert_close(p.detach(), before[name] - 0.5 * clipped[name], name, **TIGHT)
        for name, p in model.named_parameters()])


def test_synchronize_twice_keeps_the_average_and_step_after_it_warns():
    model = make_model()
    before = snapshot(model)
    optimizer = distributed(model)
    loss_of(model, batch_of(hvd.rank())).backward()
    optimizer.synchronize()
    optimizer.synchronize()
    check_gradients(model, expected_reduction(before))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        optimizer.step()
    messages = [str(w.message) for w in caught]
    check_on_all_ranks(lambda: assert_equal(
        ['optimizer.step() called without optimizer.skip_synchronize()' in m for m in messages],
        [True]))


@pytest.mark.parametrize('kind', ['list', 'int', 'num_groups'])
def test_grouped_allreduces_average_every_gradient(kind):
    model = make_model()
    if kind == 'list':
        arguments = dict(groups=[[model[0].weight, model[2].weight], [model[2].bias]])
    elif kind == 'int':
        arguments = dict(groups=2)
    else:
        arguments = dict(num_groups=3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        # Names unique to this case: the runtime (at the time of writing) hangs when a grouped
        # allreduce name comes back with other shapes, which the three cases would do.
        optimizer = hvd.DistributedOptimizer(
            torch.optim.SGD(model.parameters(), lr=0.5),
            named_parameters=[('%s.%s' % (kind, name), p) for name, p in model.named_parameters()],
            **arguments)
    deprecated = [w for w in caught if issubclass(w.category, DeprecationWarning)]
    for step in range(2):
        optimizer.zero_grad()
        start = snapshot(model)
        loss_of(model, batch_of(hvd.rank(), step=step)).backward()
        optimizer.step()
        check_gradients(model, expected_reduction(start, steps=(step,)))
    check_on_all_ranks(lambda: assert_equal(len(deprecated), 1 if kind == 'num_groups' else 0))
    if hvd.size() > 1:
        groups = sorted(len(group) for group in optimizer._group_counts)
        wanted = {'list': [1, 1, 2], 'int': [2, 2], 'num_groups': [1, 1, 2]}[kind]
        check_on_all_ranks(lambda: assert_equal(groups, wanted))


@pytest.mark.parametrize('compression', ['fp16', 'bf16'])
def test_compressed_allreduce_averages_within_the_format_precision(compression):
    model = make_model(dtype=torch.float32)
    before = snapshot(model)
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.5),
                                         named_parameters=model.named_parameters(),
                                         compression=getattr(hvd.Compression, compression))
    loss_of(model, batch_of(hvd.rank(), dtype=torch.float32)).backward()
    optimizer.synchronize()
    per_rank = per_rank_gradients({name: value.double() for name, value in before.items()})
    expected = {name: sum(g[name] for g in per_rank).float() / hvd.size() for name in per_rank[0]}
    # fp16 keeps 11 significant bits, bf16 8: each rounding (of every rank's gradient, of the
    # partial sums) errs by up to 2^-11 or 2^-8 of the largest magnitude involved.
    precision = {'fp16': 2.0 ** -11, 'bf16': 2.0 ** -8}[compression]
    scale = {name: max(float(g[name].abs().max()) for g in per_rank) for name in per_rank[0]}
    check_on_all_ranks(lambda: [
        (assert_equal(p.grad.dtype, torch.float32),
         assert_close(p.grad, expected[name], name, rtol=0.0,
                      atol=4 * precision * scale[name] * hvd.size()))
        for name, p in model.named_parameters()])
    with optimizer.skip_synchronize():
        optimizer.step()


def test_gradient_predivide_factor_scales_before_and_after_the_sum(monkeypatch):
    # What the runtime is asked to do, read from the C call the gradient batches go through.
    calls = []
    lib = _lib.load()
    real = lib.korovod_enqueue_many

    def values(ctype, address, count, default):
        return [default] * count if address is None else list((ctype * count).from_address(address))

    def recording(rt, op_type, count, names, inputs, outputs, dtypes, ndims, shapes, devices, ops, prescales,
                  postscales, *rest):
        calls.extend(zip(values(ctypes.c_double, prescales, count, 1.0),
                         values(ctypes.c_double, postscales, count, 1.0),
                         values(ctypes.c_int32, ops, count, _lib.AVERAGE)))
        return real(rt, op_type, count, names, inputs, outputs, dtypes, ndims, shapes, devices, ops, prescales,
                    postscales, *rest)

    monkeypatch.setattr(lib, 'korovod_enqueue_many', recording)
    model = make_model()
    before = snapshot(model)
    optimizer = distributed(model, gradient_predivide_factor=4.0)
    loss_of(model, batch_of(hvd.rank())).backward()
    optimizer.step()
    check_gradients(model, expected_reduction(before))
    expected_calls = [] if hvd.size() == 1 else [(0.25, 4.0, hvd.Average)] * 4
    check_on_all_ranks(lambda: assert_equal(calls, expected_calls))

