"""korovod.torch.elastic.ElasticSampler: an epoch resumed on another number of ranks neither
repeats nor skips a sample.

Most tests simulate the ranks of each round in one process (the sampler reads rank() and size()
from korovod.torch.mpi_ops, replaced here), so any sequence of sizes can be tried on any job;
the last tests use the real job's ranks and TorchState.
"""

import collections
import random

import pytest
import torch.utils.data

import korovod.torch as hvd
from korovod.torch.elastic import sampler as sampler_module
from training_checks import check_on_all_ranks


class ListDataset(torch.utils.data.Dataset):
    def __init__(self, n: int):
        self.data = list(range(n))

    def __getitem__(self, index):
        return self.data[index]

    def __len__(self):
        return len(self.data)


@pytest.fixture
def world(monkeypatch):
    """world(rank, size) makes the sampler see that rank and size."""
    current = {"rank": 0, "size": 1}
    monkeypatch.setattr(sampler_module, "rank", lambda: current["rank"])
    monkeypatch.setattr(sampler_module, "size", lambda: current["size"])

    def set_world(rank: int, size: int) -> None:
        current.update(rank=rank, size=size)

    return set_world


def run_rounds(world, n: int, batch_size: int, rounds, shuffle=True, seed=0):
    """Processes one epoch of n samples in rounds of (size, batches per rank or None = to the end).

    Each simulated rank of a round iterates its own sampler (restored from the state every rank
    holds at the round's start) for that many batches; then record_batch runs as every rank runs
    it. Returns the samples processed, in order, and the final state_dict.
    """
    dataset = ListDataset(n)
    world(0, rounds[0][0])
    state = hvd.elastic.ElasticSampler(dataset, shuffle=shuffle, seed=seed).state_dict()
    processed = []
    for size, batches in rounds:
        per_rank = []
        for rank in range(size):
            world(rank, size)
            sampler = hvd.elastic.ElasticSampler(dataset, shuffle=shuffle, seed=seed)
            sampler.load_state_dict(state)
            loader = torch.utils.data.DataLoader(dataset, batch_size=batch_size, sampler=sampler)
            mine = []
            for index, batch in enumerate(loader):
                if batches is not None and index == batches:
                    break
                mine.append(batch.tolist())
            per_rank.append(mine)
        steps = len(per_rank[0])
        assert all(len(mine) == steps for mine in per_rank), "ranks took different numbers of steps"
        for step in range(steps):
            for mine in per_rank:
                processed += mine[step]
            sampler.record_batch(step, batch_size)
        state = sampler.state_dict()
    return processed, state


@pytest.mark.parametrize("rounds", [
    [(1, None)],
    [(3, None)],
    [(2, 5), (3, None)],              # scale up mid-epoch
    [(3, 4), (2, None)],              # scale down mid-epoch
    [(2, 3), (3, 2), (2, 1), (4, None)],  # 2 -> 3 -> 2 -> 4
    [(4, 1), (1, 2), (5, None)],
])
@pytest.mark.parametrize("shuffle", [True, False])
def test_resharded_epoch_covers_every_sample_once(world, rounds, shuffle):
    n, batch_size = 103, 4
    processed, state = run_rounds(world, n, batch_size, rounds, shuffle=shuffle, seed=7)
    counts = collections.Counter(processed)
    assert set(counts) == set(range(n)), f"never processed: {sorted(set(range(n)) - set(counts))}"
    repeated = sum(count - 1 for count in counts.values())
    final_size = rounds[-1][0]
    # Only the padding of the last round repeats samples (fewer than one per rank).
    assert repeated < final_size, f"{repeated} samples repeated: {sorted(i for i, c in counts.items() if c > 1)}"
    assert state["processed_num"] >= n


def test_uncommitted_batches_are_redone_after_restore_and_nothing_else(world):
    n, batch_size = 60, 3
    dataset = ListDataset(n)
    world(0, 2)
    sampler = hvd.elastic.ElasticSampler(dataset, seed=1)
    for step in range(4):
        sampler.record_batch(step, batch_size)
    committed = sampler.state_dict()
    sampler.record_batch(4, batch_size)  # lost with the failure
    sampler.load_state_dict(committed)
    assert len(sampler.remaining_indices) == n - 4 * batch_size * 2
    world(0, 3)
    order = list(range(n))
    random.Random(1).shuffle(order)
    sampler.reset()
    assert sampler.remaining_indices == order[4 * batch_size * 2:]
    assert (sampler.num_replicas, sampler.rank, len(sampler)) == (3, 0, 12)


def test_set_epoch_starts_a_new_order_with_nothing_processed(world):
    world(1, 2)
    sampler = hvd.elastic.ElasticSampler(ListDataset(10), shuffle=True, seed=3)
    first = list(sampler)
    sampler.record_batch(0, 2)
    assert sampler.processed_num == 4
    sampler.set_epoch(1)
    assert sampler.processed_num == 0 and sampler.epoch == 1
    second = list(sampler)
    assert len(first) == len(second) == 5
    assert first != second, "epoch 1 should be shuffled differently from epoch 0"
    sampler.set_epoch(0)
    assert list(sampler) == first, "the same epoch and seed give the same order"


def test_unshuffled_shards_are_round_robin(world):
    world(1, 3)
    sampler = hvd.elastic.ElasticSampler(ListDataset(10), shuffle=False)
    assert list(sampler) == [1, 4, 7, 0]  # 10 samples padded to 12 by wrapping around
    assert len(sampler) == 4


def test_more_ranks_than_remaining_samples_pad_by_wrapping(world):
    world(0, 4)
    sampler = hvd.elastic.ElasticSampler(ListDataset(9), shuffle=False)
    sampler.load_state_dict({"epoch": 0, "processed_num": 8})
    taken = []
    for rank in range(4):
        world(rank, 4)
        sampler.reset()
        taken += list(sampler)
    assert taken == [8, 8, 8, 8]


def test_a_finished_epoch_yields_nothing(world):
    world(0, 2)
    sampler = hvd.elastic.ElasticSampler(ListDataset(8))
    sampler.load_state_dict({"epoch": 0, "processed_num": 8})
    assert list(sampler) == [] and len(sampler) == 0


def test_real_job_shards_partition_the_epoch():
    n = 7 * hvd.size() + 3
    sampler = hvd.elastic.ElasticSampler(ListDataset(n), seed=11)
    shards = hvd.allgather_object(list(sampler), name="test_elastic_sampler.shards")

    def check():
        assert (sampler.num_replicas, sampler.rank) == (hvd.size(), hvd.rank())
        everything = [index for shard in shards for index in shard]
        assert set(everything) == set(range(n))
        assert len(everything) - n < hvd.size()

    check_on_all_ranks(check)


def test_torch_state_syncs_and_restores_the_sampler():
    dataset = ListDataset(40 * hvd.size())
    sampler = hvd.elastic.ElasticSampler(dataset, seed=2)
    state = hvd.elastic.TorchState(sampler=sampler)
    sampler.set_epoch(3 + hvd.rank())
    sampler.record_batch(0, 2 + hvd.rank())
    state.sync()  # rank 0's epoch and progress everywhere, resharded for this job

    def check_synced():
        assert (sampler.epoch, sampler.processed_num) == (3, 2 * hvd.size())
        assert len(sampler.remaining_indices) == len(dataset) - 2 * hvd.size()

    check_on_all_ranks(check_synced)
    state.commit()
    sampler.record_batch(1, 2)
    sampler.record_batch(2, 2)
    state.restore()
    check_on_all_ranks(lambda: _expect(sampler.processed_num == 2 * hvd.size(),
                                       f"processed_num {sampler.processed_num} after restore"))
    state.commit()
    sampler.set_epoch(4)
    state.restore()
    check_on_all_ranks(lambda: _expect((sampler.epoch, sampler.processed_num) == (3, 2 * hvd.size()),
                                       f"epoch {sampler.epoch} after restore, expected 3"))


def test_torch_state_reset_reshards_without_a_sync(world):
    # A removal skips the sync: the reset alone must make the sampler see the new size.
    world(0, 3)
    sampler = hvd.elastic.ElasticSampler(ListDataset(30), shuffle=False)
    state = hvd.elastic.TorchState(sampler=sampler)
    sampler.record_batch(0, 2)
    world(1, 2)
    state.on_reset()
    assert (sampler.num_replicas, sampler.rank) == (2, 1)
    assert list(sampler)[:3] == [7, 9, 11]


def test_restore_without_a_runtime_takes_the_commit_and_the_reset_reshards(world):
    # After a failure the runtime may be dead when the state is restored.
    world(0, 2)
    sampler = hvd.elastic.ElasticSampler(ListDataset(20), shuffle=False)
    state = hvd.elastic.TorchState(sampler=sampler)
    sampler.record_batch(0, 2)
    state.save()
    sampler.record_batch(1, 2)
    hvd.shutdown()
    try:
        state.restore()
        assert sampler.processed_num == 4
    finally:
        hvd.init()
    world(1, 3)
    state.on_reset()
    assert list(sampler) == [5, 8, 11, 14, 17, 4]


def _expect(condition: bool, message: str) -> None:
    assert condition, message
