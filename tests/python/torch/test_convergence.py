"""Data-parallel training reaches what one process reaches on the combined batches.

A 2-layer MLP learns scikit-learn's bundled digits data set (1797 8x8 images, nothing is
downloaded) for STEPS steps of SGD with momentum. In the distributed run every rank takes its
own equal share of each batch of BATCH images and DistributedOptimizer averages the gradients;
the reference, which every rank also computes on its own, trains one model on the whole batches.

Tolerance (float32): after STEPS steps every parameter and the final loss over the whole data
set agree within 1e-5 relative + 5e-6 absolute. The two runs differ only in how float32 sums are
ordered (per-rank means averaged vs one mean over the batch): measured, at most 3e-7 on 2 and 3
ranks. Training must also have learned: the final loss is below a
quarter of the initial one.
"""

import pytest
import torch
import torch.nn.functional as F

import korovod.torch as hvd
from training_checks import assert_close, check_on_all_ranks

STEPS = 60  # two epochs of the 1797 images
BATCH = 60  # divisible by 1, 2 and 3 ranks
TOLERANCE = dict(rtol=1e-5, atol=5e-6)


@pytest.fixture(autouse=True, scope='module')
def runtime():
    hvd.init()


@pytest.fixture(scope='module')
def digits():
    datasets = pytest.importorskip('sklearn.datasets', reason='scikit-learn provides the data')
    data = datasets.load_digits()
    inputs = torch.tensor(data.data, dtype=torch.float32) / 16.0
    return inputs, torch.tensor(data.target, dtype=torch.int64)


def make_model():
    torch.manual_seed(2024)
    return torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10))


def batches(digits):
    """STEPS full batches, drawn without replacement within each epoch."""
    inputs, targets = digits
    per_epoch = len(targets) // BATCH
    for step in range(STEPS):
        epoch, index = divmod(step, per_epoch)
        if index == 0:
            order = torch.randperm(len(targets), generator=torch.Generator().manual_seed(epoch))
        rows = order[index * BATCH:(index + 1) * BATCH]
        yield inputs[rows], targets[rows]


def train(model, optimizer, digits, share):
    for inputs, targets in batches(digits):
        inputs, targets = share(inputs), share(targets)
        optimizer.zero_grad()
        F.cross_entropy(model(inputs), targets).backward()
        optimizer.step()


def this_ranks_share(tensor):
    rows = BATCH // hvd.size()
    return tensor[hvd.rank() * rows:(hvd.rank() + 1) * rows]


def full_loss(model, digits):
    with torch.no_grad():
        return F.cross_entropy(model(digits[0]), digits[1])


def compare_with_one_process(digits, compile_model):
    reference = make_model()
    initial_loss = full_loss(reference, digits)
    train(reference, torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9), digits,
          share=lambda tensor: tensor)

    model = make_model()
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
                                         named_parameters=model.named_parameters())
    forward = torch.compile(model) if compile_model else model
    train(forward, optimizer, digits, share=this_ranks_share)

    expected = dict(reference.named_parameters())
    loss, expected_loss = full_loss(model, digits), full_loss(reference, digits)

    def check():
        for name, p in model.named_parameters():
            assert_close(p.detach(), expected[name].detach(), name, **TOLERANCE)
        assert_close(loss, expected_loss, 'final loss', **TOLERANCE)
        assert float(expected_loss) < float(initial_loss) / 4, 'loss %.3f -> %.3f: not learning' % (
            float(initial_loss), float(expected_loss))
    check_on_all_ranks(check)


def test_training_on_shares_of_each_batch_matches_one_process(digits):
    compare_with_one_process(digits, compile_model=False)


@pytest.mark.once_per_interpreter
def test_training_a_compiled_model_matches_one_process(digits):
    if not hasattr(torch, 'compile'):
        pytest.skip('torch %s has no torch.compile (torch >= 2.0)' % torch.__version__)
    compare_with_one_process(digits, compile_model=True)


def test_training_with_adasum_learns_and_keeps_the_ranks_identical(digits):
    """DistributedOptimizer(op=Adasum), Horovod's delta optimizer, on the same shares: Adasum of
    the ranks' updates is no average, so no one-process reference; it must learn as fast (the
    learning rate unscaled, as Horovod's examples use it) and leave every rank the same model."""
    if hvd.size() & (hvd.size() - 1):
        pytest.skip('Adasum needs a power-of-2 number of ranks, not %d' % hvd.size())
    model = make_model()
    initial_loss = full_loss(model, digits)
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
                                         named_parameters=model.named_parameters(), op=hvd.Adasum)
    train(model, optimizer, digits, share=this_ranks_share)
    loss = full_loss(model, digits)
    flat = torch.cat([p.detach().ravel() for p in model.parameters()])
    first = hvd.broadcast(flat, root_rank=0, name='adasum_training.parameters')

    def check():
        assert float(loss) < float(initial_loss) / 4, 'loss %.3f -> %.3f: not learning' % (
            float(initial_loss), float(loss))
        assert torch.equal(flat, first), 'parameters differ from rank 0\'s'
    check_on_all_ranks(check)
