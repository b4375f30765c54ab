"""SyncBatchNorm on each rank's slice of a batch equals torch.nn.BatchNorm on the whole batch.

Ranks hold slices of different sizes (rank r: r + 2 samples) so that the per-rank counts matter.
Every rank builds the whole batch from one seed and runs the reference itself.
"""

import pytest
import torch

import korovod.torch as hvd
import korovod.torch.sync_batch_norm as sync_batch_norm
from training_checks import assert_close, check_on_all_ranks

TOLERANCE = {torch.float32: dict(rtol=1e-5, atol=1e-5), torch.float64: dict(rtol=1e-10, atol=1e-10)}
SHAPES = {'1d-NC': (torch.nn.BatchNorm1d, (5,)), '1d-NCL': (torch.nn.BatchNorm1d, (5, 7)),
          '2d-NCHW': (torch.nn.BatchNorm2d, (3, 4, 5))}


@pytest.fixture(autouse=True, scope='module')
def runtime():
    hvd.init()


@pytest.fixture(params=['native', 'plain'])
def kernels(request, monkeypatch):
    """Runs a test with torch's fused kernels (where this build has them on the CPU) and with
    the plain tensor operations that stand in for them elsewhere."""
    if request.param == 'native':
        if not sync_batch_norm._native_kernels('cpu'):
            pytest.skip('torch %s has no CPU kernels for batch_norm_stats: only the plain path '
                        'runs here' % torch.__version__)
    else:
        monkeypatch.setattr(sync_batch_norm, '_native_kernels', lambda device_type: False)
    return request.param


def slices():
    sizes = [r + 2 for r in range(hvd.size())]
    start = sum(sizes[:hvd.rank()])
    return sizes, slice(start, start + sizes[hvd.rank()])


def whole_batch(shape, dtype, step):
    sizes, _ = slices()
    generator = torch.Generator().manual_seed(40 + step)
    inputs = torch.randn((sum(sizes),) + shape, generator=generator, dtype=torch.float64) * 3 + 1
    upstream = torch.randn((sum(sizes),) + shape, generator=generator, dtype=torch.float64)
    return inputs.to(dtype), upstream.to(dtype)


def run_both(reference, synced, dtype, shape, step):
    """One forward and backward of both modules; returns what must agree across the two."""
    inputs, upstream = whole_batch(shape, dtype, step)
    _, mine = slices()
    reference_inputs = inputs.clone().requires_grad_()
    reference_out = reference(reference_inputs)
    (reference_out * upstream).sum().backward()

    my_inputs = inputs[mine].clone().requires_grad_()
    my_out = synced(my_inputs)
    (my_out * upstream[mine]).sum().backward()

    # This rank's weight and bias gradients cover its slice only: their sum is the reference's.
    local = torch.stack([synced.weight.grad, synced.bias.grad]) if synced.affine else None
    total = sum(hvd.allgather_object(local, name='test.sync_bn.grads')) if synced.affine else None
    return [('output', my_out.detach(), reference_out.detach()[mine]),
            ('input gradient', my_inputs.grad, reference_inputs.grad[mine]),
            ('running_mean', synced.running_mean, reference.running_mean),
            ('running_var', synced.running_var, reference.running_var)] + (
        [('weight and bias gradients', total,
          torch.stack([reference.weight.grad, reference.bias.grad]))] if synced.affine else [])


def compare(pairs, dtype):
    def check():
        for what, actual, expected in pairs:
            if expected is None:
                assert actual is None, what
            else:
                assert_close(actual, expected, what, **TOLERANCE[dtype])
    check_on_all_ranks(check)


@pytest.mark.parametrize('dtype', [torch.float32, torch.float64], ids=['float32', 'float64'])
@pytest.mark.parametrize('layout', sorted(SHAPES))
@pytest.mark.parametrize('momentum', [0.1, None], ids=['momentum', 'cumulative'])
def test_matches_batch_norm_over_the_combined_batch(kernels, dtype, layout, momentum):
    module, shape = SHAPES[layout]
    channels = shape[0]
    reference = module(channels, momentum=momentum).to(dtype)
    synced = hvd.SyncBatchNorm(channels, momentum=momentum).to(dtype)
    with torch.no_grad():  # non-trivial affine parameters, equal in both
        for p, q in zip(reference.parameters(), synced.parameters()):
            p.copy_(torch.linspace(0.5, 2.0, channels, dtype=dtype))
            q.copy_(p)
    for step in range(3):
        reference.zero_grad()
        synced.zero_grad()
        compare(run_both(reference, synced, dtype, shape, step), dtype)

    # Evaluation uses the running statistics: no communication, the same result.
    reference.eval()
    synced.eval()
    inputs, _ = whole_batch(shape, dtype, step=9)
    compare([('eval output', synced(inputs), reference(inputs)),
             ('num_batches_tracked', synced.num_batches_tracked, reference.num_batches_tracked)],
            dtype)


@pytest.mark.parametrize('dtype', [torch.float32, torch.float64], ids=['float32', 'float64'])
def test_without_affine_parameters_or_running_statistics(kernels, dtype):
    shape = (4, 6)
    reference = torch.nn.BatchNorm1d(4, affine=False, track_running_stats=False).to(dtype)
    synced = hvd.SyncBatchNorm(4, affine=False, track_running_stats=False).to(dtype)
    pairs = run_both(reference, synced, dtype, shape, step=0)
    compare(pairs, dtype)
    # Without running statistics evaluation still normalizes with the batch's statistics.
    reference.eval()
    synced.eval()
    compare(run_both(reference, synced, dtype, shape, step=1), dtype)


def test_rejects_inputs_without_a_channel_dimension():
    with pytest.raises(ValueError, match='expected at least 2D input'):
        hvd.SyncBatchNorm(3)(torch.zeros(3))


def test_sync_batch_norm_is_a_batch_norm_module():
    synced = hvd.SyncBatchNorm(4)

    def check():
        assert isinstance(synced, torch.nn.modules.batchnorm._BatchNorm)
        assert sorted(synced.state_dict()) == sorted(torch.nn.BatchNorm1d(4).state_dict())
    check_on_all_ranks(check)
