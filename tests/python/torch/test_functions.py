"""broadcast_parameters, broadcast_optimizer_state, broadcast_object, allgather_object.

Ranks start from different models and hyper-parameters on purpose; after a broadcast every rank
must hold rank 0's (or the chosen root's) values exactly, with Python types kept.
"""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import korovod.torch as hvd
from training_checks import check_on_all_ranks

# (optimizer name, rank 0's hyper-parameters, the other ranks'); those not in the running torch
# are left out when the tests are collected.
OPTIMIZERS = [
    ('SGD', dict(lr=0.1), dict(lr=0.3)),
    ('SGD', dict(lr=0.1, momentum=0.8, weight_decay=0.2, nesterov=True),
     dict(lr=0.2, momentum=0.9, weight_decay=0.1, nesterov=False)),
    ('Adam', dict(lr=0.01, betas=(0.9, 0.999), amsgrad=True), dict(lr=0.02, betas=(0.8, 0.9))),
    ('AdamW', dict(lr=0.01, weight_decay=0.05), dict(lr=0.03, weight_decay=0.2)),
    ('Adamax', dict(lr=0.01, betas=(0.9, 0.999)), dict(lr=0.05, betas=(0.5, 0.6))),
    ('Adagrad', dict(lr=0.1, lr_decay=0.01), dict(lr=0.2, lr_decay=0.0)),
    ('Adadelta', dict(lr=1.0, rho=0.9), dict(lr=0.5, rho=0.8)),
    ('RMSprop', dict(lr=0.01, momentum=0.9, centered=True), dict(lr=0.02, momentum=0.5)),
    ('ASGD', dict(lr=0.01, t0=10.0), dict(lr=0.02, t0=100.0)),
    ('Rprop', dict(lr=0.01, etas=(0.5, 1.2), step_sizes=(1e-6, 50)),
     dict(lr=0.02, etas=(0.25, 1.75), step_sizes=(1e-7, 5))),
    ('NAdam', dict(lr=0.002, momentum_decay=0.004), dict(lr=0.003, momentum_decay=0.01)),
    ('RAdam', dict(lr=0.001, betas=(0.9, 0.999)), dict(lr=0.004, betas=(0.8, 0.9))),
]
PRESENT = [pytest.param(name, rank0, others, id='%s-%d' % (name, index))
           for index, (name, rank0, others) in enumerate(OPTIMIZERS)
           if hasattr(torch.optim, name)]


@pytest.fixture(autouse=True, scope='module')
def runtime():
    hvd.init()


def rank_model(seed_offset=0):
    """A small model whose initial values differ from rank to rank."""
    torch.manual_seed(100 + hvd.rank() + seed_offset)
    return torch.nn.Sequential(torch.nn.Linear(8, 6), torch.nn.ReLU(), torch.nn.Linear(6, 4),
                               torch.nn.BatchNorm1d(4))


def rank_batch():
    generator = torch.Generator().manual_seed(hvd.rank())
    return torch.randn(16, 8, generator=generator), torch.randn(16, 4, generator=generator)


def train_one_step(model, optimizer):
    inputs, targets = rank_batch()
    optimizer.zero_grad()
    F.mse_loss(model(inputs), targets).backward()
    optimizer.step()


def optimizer_for(name, model, rank0, others, distributed=True):
    optimizer = getattr(torch.optim, name)(model.parameters(),
                                           **(rank0 if hvd.rank() == 0 else others))
    if distributed:
        optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
    return optimizer


def assert_same_values(actual, expected, where):
    """Equal values, equal Python types, recursively; tensors equal in dtype, shape and values."""
    assert type(actual) is type(expected), '%s: %s here, %s on the root' % (
        where, type(actual).__name__, type(expected).__name__)
    if torch.is_tensor(expected):
        assert actual.dtype == expected.dtype and actual.shape == expected.shape, where
        assert torch.equal(actual, expected), '%s: %s here, %s on the root' % (where, actual, expected)
    elif isinstance(expected, dict):
        assert sorted(actual, key=str) == sorted(expected, key=str), '%s: keys %s, root %s' % (
            where, sorted(actual, key=str), sorted(expected, key=str))
        for key in expected:
            assert_same_values(actual[key], expected[key], '%s[%r]' % (where, key))
    elif isinstance(expected, (list, tuple)):
        assert len(actual) == len(expected), '%s: length %d, root %d' % (
            where, len(actual), len(expected))
        for index, (a, e) in enumerate(zip(actual, expected)):
            assert_same_values(a, e, '%s[%d]' % (where, index))
    else:
        assert actual == expected, '%s: %r here, %r on the root' % (where, actual, expected)


def check_equal_to_root(value, root_rank, what):
    everywhere = hvd.allgather_object(value, name='test.' + what)
    check_on_all_ranks(assert_same_values, value, everywhere[root_rank], what)


@pytest.mark.parametrize('name, rank0, others', PRESENT)
def test_broadcast_optimizer_state_after_training(name, rank0, others):
    model = rank_model()
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    optimizer = optimizer_for(name, model, rank0, others)
    train_one_step(model, optimizer)
    # Different hyper-parameters gave different states; make the parameters differ too.
    with torch.no_grad():
        for p in model.parameters():
            p.add_(hvd.rank())

    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)
    check_equal_to_root(optimizer.state_dict(), 0, name + '.state_dict')
    check_equal_to_root(model.state_dict(), 0, name + '.model')
    # The hyper-parameters keep their types (float, bool, tuple) and still work in a step.
    train_one_step(model, optimizer)
    # (BatchNorm's running statistics are not synchronized: each rank saw its own batch.)
    parameters = {key: p.detach() for key, p in model.named_parameters()}
    check_equal_to_root(parameters, 0, name + '.parameters_after_step')


@pytest.mark.parametrize('name, rank0, others', PRESENT)
def test_broadcast_optimizer_state_before_the_first_step(name, rank0, others):
    model = rank_model()
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    parameters = {key: value.clone() for key, value in model.state_dict().items()}
    optimizer = optimizer_for(name, model, rank0, others)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)

    state = optimizer.state_dict()
    check_equal_to_root(state, 0, name + '.state_dict')
    # The zero-gradient step that creates the state must not move the parameters (weight decay).
    check_on_all_ranks(assert_same_values, dict(model.state_dict()), parameters, name + '.model')
    if name != 'SGD' or 'momentum' in rank0:  # SGD without momentum may keep no state
        check_on_all_ranks(lambda: assert_same_values(len(state['state']) > 0, True,
                                                      name + ' has state'))


@pytest.mark.parametrize('name, rank0, others', PRESENT)
def test_broadcast_optimizer_state_from_a_checkpoint_on_the_root(name, rank0, others):
    # The usual resume: only the root loads a checkpoint, the others start empty.
    model = rank_model()
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    root = hvd.size() - 1
    optimizer = optimizer_for(name, model, rank0, others, distributed=False)
    if hvd.rank() == root:
        for _ in range(2):
            train_one_step(model, optimizer)
    hvd.broadcast_parameters(model.state_dict(), root_rank=root)
    hvd.broadcast_optimizer_state(optimizer, root_rank=root)
    check_equal_to_root(optimizer.state_dict(), root, name + '.state_dict')
    check_equal_to_root(model.state_dict(), root, name + '.model')


def test_broadcast_optimizer_state_skips_parameters_without_gradients():
    # Horovod's test_broadcast_state_no_grad.
    class ModelNoGrad(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Parameter(torch.tensor([1, 3]), requires_grad=False)
            self.b = torch.nn.Parameter(torch.rand(4))

        def forward(self, inputs):
            return torch.index_select(self.b, 0, self.a.long()) * inputs

    model = ModelNoGrad()
    sgd = torch.optim.SGD(model.parameters(), lr=0.001, weight_decay=1e-6, momentum=0.9,
                          nesterov=True)
    optimizer = hvd.DistributedOptimizer(sgd, named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)
    check_on_all_ranks(lambda: (assert_same_values(model.a.grad, None, 'a.grad'),
                                assert_same_values(model.a in optimizer.state, False, 'a state')))
    check_equal_to_root(model.b.grad, 0, 'b.grad')
    check_equal_to_root(optimizer.state_dict(), 0, 'state_dict')


def test_broadcast_optimizer_state_refuses_lbfgs():
    model = rank_model()
    with pytest.raises(ValueError, match='LBFGS'):
        hvd.broadcast_optimizer_state(torch.optim.LBFGS(model.parameters()), root_rank=0)


@pytest.mark.parametrize('form', ['state_dict', 'named_parameters', 'parameters', 'generator'])
def test_broadcast_parameters(form):
    model = rank_model()
    root = hvd.size() - 1
    if form == 'state_dict':
        hvd.broadcast_parameters(model.state_dict(), root_rank=root)
    elif form == 'named_parameters':
        hvd.broadcast_parameters(list(model.named_parameters()), root_rank=root)
    elif form == 'parameters':
        hvd.broadcast_parameters(list(model.parameters()), root_rank=root)
    else:
        hvd.broadcast_parameters(model.named_parameters(), root_rank=root)
    values = {key: value.clone() for key, value in model.state_dict().items()}
    if form != 'state_dict':  # the buffers of BatchNorm are not parameters: still this rank's
        values = {key: value for key, value in values.items() if 'running' not in key
                  and 'num_batches' not in key}
    check_equal_to_root(values, root, 'broadcast_parameters.' + form)
    check_on_all_ranks(lambda: assert_same_values(
        all(p.requires_grad and p.grad is None for p in model.parameters()), True,
        'parameters still leaves without gradients'))


def test_broadcast_parameters_rejects_other_types():
    with pytest.raises(ValueError, match='invalid params'):
        hvd.broadcast_parameters(torch.zeros(3), root_rank=0)
    with pytest.raises(ValueError, match='invalid params'):
        hvd.broadcast_parameters(42, root_rank=0)


@pytest.mark.parametrize('value', [
    {'hello': 123, 0: [1, 2], 'nested': {'a': (1.5, 'b')}},
    [1, 'two', 3.0, None, b'bytes'],
    None,
    'x' * 100000,
], ids=['dict', 'list', 'None', 'long-string'])
def test_broadcast_object_returns_the_roots_object(value):
    for root in sorted({0, hvd.size() - 1}):
        # Other types elsewhere, so an explicit name: the default is the local object's type.
        mine = value if hvd.rank() == root else {'not': 'this'}
        received = hvd.broadcast_object(mine, root_rank=root, name='test.broadcast_object')
        check_on_all_ranks(assert_same_values, received, value, 'broadcast_object')


def test_broadcast_object_carries_a_lambda():
    pytest.importorskip('cloudpickle', reason='lambdas pickle with cloudpickle only')
    offset = 5 if hvd.rank() == 0 else -1
    function = hvd.broadcast_object(lambda x: x + offset, root_rank=0, name='a_lambda')
    check_on_all_ranks(lambda: assert_same_values(function(1), 6, 'broadcast lambda(1)'))


def test_allgather_object_returns_every_ranks_object_in_rank_order():
    # Horovod's test_allgather_object, plus objects of different sizes and kinds.
    mine = {'metric_val_1': hvd.rank()}
    if hvd.rank() == 1:
        mine['metric_val_2'] = 42
    gathered = hvd.allgather_object(mine)
    expected = [{'metric_val_1': r} for r in range(hvd.size())]
    if hvd.size() > 1:
        expected[1] = {'metric_val_1': 1, 'metric_val_2': 42}
    check_on_all_ranks(assert_same_values, gathered, expected, 'allgather_object dicts')

    kinds = [None, [hvd.rank()] * (hvd.rank() * 1000 + 1), 'rank %d' % hvd.rank()]
    gathered = hvd.allgather_object(kinds[hvd.rank() % 3], name='kinds')
    expected = [[None, [r] * (r * 1000 + 1), 'rank %d' % r][r % 3] for r in range(hvd.size())]
    check_on_all_ranks(assert_same_values, gathered, expected, 'allgather_object kinds')


def test_allgather_object_carries_lambdas():
    pytest.importorskip('cloudpickle', reason='lambdas pickle with cloudpickle only')
    here = hvd.rank()
    functions = hvd.allgather_object(lambda x: x * 10 + here, name='lambdas')
    values = [function(1) for function in functions]
    check_on_all_ranks(assert_same_values, values, [10 + r for r in range(hvd.size())],
                       'allgathered lambdas')


def test_broadcast_and_allgather_object_within_a_process_set():
    # Horovod's test_broadcast_object_process_sets, and allgather_object over the same sets.
    if hvd.size() == 1:
        pytest.skip('process sets of the even and the odd ranks need 2 ranks or more')
    evens = [r for r in range(hvd.size()) if r % 2 == 0]
    odds = [r for r in range(hvd.size()) if r % 2 == 1]
    even_set, odd_set = hvd.add_process_set(evens), hvd.add_process_set(odds)
    process_set, ranks = (even_set, evens) if hvd.rank() % 2 == 0 else (odd_set, odds)
    try:
        expected = {'hello': 123, 0: [1, 2], 'set': ranks}
        mine = expected if hvd.rank() == ranks[0] else {}
        received = hvd.broadcast_object(mine, root_rank=ranks[0], process_set=process_set)
        gathered = hvd.allgather_object(hvd.rank() * 10, process_set=process_set)
        check_on_all_ranks(lambda: (assert_same_values(received, expected, 'broadcast_object'),
                                    assert_same_values(gathered, [r * 10 for r in ranks],
                                                       'allgather_object')))
    finally:
        hvd.remove_process_set(odd_set)
        hvd.remove_process_set(even_set)


class _LengthSpy:
    """Records (name, dtype) of what korovod.common.objects sends through numpy_ops."""

    def __init__(self, monkeypatch):
        from korovod.common import numpy_ops
        self.sent = []
        for op in ('broadcast', 'allgather'):
            monkeypatch.setattr(numpy_ops, op, self._wrap(getattr(numpy_ops, op)))

    def _wrap(self, original):
        def spy(arrays, *args, **kwargs):
            name = kwargs.get('name', args[1] if original.__name__ == 'broadcast' else args[0])
            first = arrays[0] if isinstance(arrays, list) else arrays
            self.sent.append((name, first.dtype))
            return original(arrays, *args, **kwargs)
        return spy

    def length_dtypes(self):
        return {str(dtype) for name, dtype in self.sent if name.endswith('.sz')}


def test_objects_cross_through_the_shared_transport_with_int64_lengths(monkeypatch):
    # The same objects through korovod.common.objects give the same results (the tensorflow
    # suite checks korovod.tensorflow and korovod.keras against it the same way).
    from korovod.common import objects
    spy = _LengthSpy(monkeypatch)
    blob = np.random.default_rng(hvd.rank()).bytes(3 << 20)
    factor = hvd.rank() + 2
    mine = {'rank': hvd.rank(), 'blob': blob, 'scale': lambda x: x * factor}  # cloudpickle's
    via_torch = hvd.broadcast_object(mine, root_rank=0, name='transport.broadcast')
    via_common = objects.broadcast_object(mine, 0, 'transport.broadcast')
    root_blob = np.random.default_rng(0).bytes(3 << 20)
    gathered_torch = hvd.allgather_object((hvd.rank(), blob[:hvd.rank() + 1]), name='transport.gather')
    gathered_common = objects.allgather_object((hvd.rank(), blob[:hvd.rank() + 1]), 'transport.gather')

    def check():
        for received in (via_torch, via_common):
            assert received['rank'] == 0 and received['blob'] == root_blob and received['scale'](1) == 2
        assert gathered_torch == gathered_common
        assert [r for r, _ in gathered_torch] == list(range(hvd.size()))
        assert spy.length_dtypes() == {'int64'}, spy.sent
    check_on_all_ranks(check)
