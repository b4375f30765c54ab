"""join (a joined rank contributes zeros; Average still divides by the full size; every rank gets
the last rank to join) and barrier (global and per process set)."""

import time

import pytest
import torch

import korovod.torch as hvd
from ops_helpers import check_on_all_ranks, check_results, raises_on_all_ranks, rank_input, require_ranks


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.float32, torch.float64, torch.bfloat16])
def test_join_with_allreduce(dtype):
    size, me = hvd.size(), hvd.rank()
    pairs, last_joined = [], []
    for first in range(size):
        inputs = [rank_input(dtype, r, (5, 3), seed=first) for r in range(size)]
        if me == first:
            last = hvd.join()
        else:
            a = hvd.allreduce_async(inputs[me], name="join.a", op=hvd.Average)
            b = hvd.allreduce_async(inputs[me] * 2, name="join.b", op=hvd.Sum)
            averaged, summed = hvd.synchronize(a), hvd.synchronize(b)
            last = hvd.join()
            others = torch.stack([inputs[r].double() for r in range(size) if r != first]).sum(dim=0)
            expected_average = others / size  # the joined rank's zeros still count
            if not dtype.is_floating_point:
                expected_average = expected_average.trunc()
            pairs += [(f"average, rank {first} joined", averaged, expected_average.to(dtype)),
                      (f"sum, rank {first} joined", summed, (others * 2).to(dtype))]
        last_joined.append(last)
    everyone = hvd.allgather(torch.tensor(last_joined, dtype=torch.int64).reshape(1, -1))
    check_results(pairs, dtype)
    check_on_all_ranks(all((everyone[r] == everyone[0]).all() for r in range(size)),
                       lambda: f"join returned different ranks: {everyone.tolist()}")
    if size > 1:
        check_on_all_ranks(all(last_joined[first] != first for first in range(size)),
                           lambda: f"the first rank to join was reported last: {last_joined}")


def test_join_alone_returns_this_rank_when_single():
    last = hvd.join()
    check_on_all_ranks(0 <= last < hvd.size(), lambda: f"join returned {last}")
    if hvd.size() == 1:
        assert last == 0


def test_join_with_a_device_index_on_a_cpu_job():
    """Horovod scripts call join(local_rank()) on CPU-only hosts too."""
    last = hvd.join(hvd.local_rank())
    check_on_all_ranks(0 <= last < hvd.size(), lambda: f"join returned {last}")


@pytest.mark.parametrize("op", ["allgather", "broadcast", "alltoall", "reducescatter"])
def test_ops_other_than_allreduce_raise_while_a_rank_joined(op):
    """Each rank joins first in turn (so every rank makes the same calls: unnamed ops stay aligned)."""
    require_ranks(2)
    size, me = hvd.size(), hvd.rank()
    tensor = torch.ones(2 * size, 3)
    outcomes = []
    for first in range(size):
        calls = {"allgather": lambda: hvd.allgather(tensor, name="joined.allgather"),
                 "broadcast": lambda: hvd.broadcast(tensor, (first + 1) % size, name="joined.broadcast"),
                 "alltoall": lambda: hvd.alltoall(tensor, name="joined.alltoall"),
                 "reducescatter": lambda: hvd.reducescatter(tensor, name="joined.reducescatter")}
        if me == first:
            hvd.join()
            continue
        try:
            calls[op]()
            outcomes.append(f"{op} did not raise while rank {first} had joined")
        except RuntimeError as e:
            if f"[{first}]" not in str(e):
                outcomes.append(f"error does not name the joined rank {first}: {e}")
        hvd.join()
    check_on_all_ranks(not outcomes, lambda: "; ".join(outcomes))


def test_global_barrier_waits_for_the_slowest_rank():
    require_ranks(2)
    hvd.barrier()
    start = time.monotonic()
    if hvd.rank() == 0:
        time.sleep(1.0)
    hvd.barrier()
    waited = time.monotonic() - start
    check_on_all_ranks(waited >= 0.95, lambda: f"left the barrier after {waited:.3f} s")


def test_process_set_barrier_only_waits_for_its_members():
    require_ranks(2)
    evens = [r for r in range(hvd.size()) if r % 2 == 0]
    odds = [r for r in range(hvd.size()) if r % 2 == 1]
    even_set, odd_set = hvd.add_process_set(evens), hvd.add_process_set(odds)
    # Rank 0 comes 2 s late: the even ranks wait for it, the odd ones must not. An odd rank that
    # waited for rank 0 takes 2 s at least, so "under 1 s" tells the two apart with a second to
    # spare for a loaded machine (with a 1 s delay and a 0.9 s bound, 0.1 s was all there was).
    late = 2.0
    try:
        hvd.barrier()
        start = time.monotonic()
        if hvd.rank() == 0:
            time.sleep(late)
        hvd.barrier(even_set if hvd.rank() % 2 == 0 else odd_set)
        waited = time.monotonic() - start
        ok = waited >= late - 0.05 if hvd.rank() % 2 == 0 else waited < late / 2
        print(f"rank {hvd.rank()} left its set's barrier after {waited:.3f} s")  # for pytest -s
        check_on_all_ranks(ok, lambda: f"rank {hvd.rank()} left its set's barrier after {waited:.3f} s")
    finally:
        hvd.remove_process_set(odd_set)
        hvd.remove_process_set(even_set)


def test_barrier_with_collectives_in_flight():
    handle = hvd.allreduce_async(torch.eye(5), op=hvd.Sum)
    gathered = hvd.allgather_async(torch.eye(5))
    hvd.barrier()
    check_results([("allreduce", hvd.synchronize(handle), torch.eye(5) * hvd.size()),
                   ("allgather", hvd.synchronize(gathered), torch.eye(5).repeat(hvd.size(), 1))])


def test_barrier_on_an_unknown_set_is_a_value_error():
    ps = hvd.ProcessSet([0])
    ps.process_set_id = 12345
    raises_on_all_ranks(ValueError, lambda: hvd.barrier(ps))
