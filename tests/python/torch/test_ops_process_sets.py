"""Process sets: dynamic add/remove (HOROVOD_DYNAMIC_PROCESS_SETS=1, set by conftest), static sets
given to init (the runtime is restarted inside the job for that), every op restricted to a set,
and the ProcessSet object's queries."""

import pytest
import torch

import korovod.torch as hvd
from ops_helpers import check_on_all_ranks, check_results, raises_on_all_ranks, rank_input, require_ranks


def even_and_odd():
    size = hvd.size()
    return [r for r in range(size) if r % 2 == 0], [r for r in range(size) if r % 2 == 1]


@pytest.fixture
def halves():
    """The even and the odd ranks as two dynamic process sets: (my set, its ranks)."""
    require_ranks(2)
    evens, odds = even_and_odd()
    even_set = hvd.add_process_set(evens)
    odd_set = hvd.add_process_set(hvd.ProcessSet(odds))
    mine = even_set if hvd.rank() % 2 == 0 else odd_set
    yield mine, (evens if hvd.rank() % 2 == 0 else odds)
    hvd.remove_process_set(odd_set)
    hvd.remove_process_set(even_set)


def test_global_process_set():
    ps = hvd.global_process_set
    check_on_all_ranks(ps.process_set_id == 0 and ps.size() == hvd.size() and ps.rank() == hvd.rank()
                       and ps.ranks == list(range(hvd.size())) and ps.included(), lambda: str(ps))


def test_process_set_queries_and_equality(halves):
    mine, ranks = halves
    other = hvd.ProcessSet(ranks)
    check_on_all_ranks(mine.size() == len(ranks) and mine.rank() == ranks.index(hvd.rank()) and mine.included()
                       and mine.process_set_id not in (None, 0), lambda: str(mine))
    check_on_all_ranks(mine == mine and mine != hvd.global_process_set and other != mine
                       and other.size() is None and other.rank() is None, lambda: "equality")


def test_horovods_private_process_set_table(halves):
    """hvd.mpi_ops._basics._get_process_set_ids_and_ranks(), which Horovod's process-set tests read."""
    mine, ranks = halves
    table = hvd.mpi_ops._basics._get_process_set_ids_and_ranks()
    check_on_all_ranks(table.get(0) == list(range(hvd.size())) and table.get(mine.process_set_id) == ranks
                       and len(table) == 3, lambda: f"table {table}")


def test_every_op_within_a_set(halves):
    mine, ranks = halves
    me = ranks.index(hvd.rank())
    n = len(ranks)
    inputs = [rank_input(torch.float32, r, (2 * n, 3), seed=1) for r in ranks]
    summed = hvd.allreduce(inputs[me], op=hvd.Sum, process_set=mine, name="ps.allreduce")
    grouped = hvd.grouped_allreduce([inputs[me]], op=hvd.Max, process_set=mine)
    gathered = hvd.allgather(inputs[me][: me + 1], process_set=mine, name="ps.allgather")
    broadcast = hvd.broadcast(inputs[me], root_rank=ranks[-1], process_set=mine, name="ps.broadcast")
    alltoall = hvd.alltoall(inputs[me], process_set=mine, name="ps.alltoall")
    scattered = hvd.reducescatter(inputs[me], op=hvd.Sum, process_set=mine, name="ps.reducescatter")
    hvd.barrier(process_set=mine)
    total = torch.stack(inputs).sum(dim=0)
    check_results([
        ("allreduce", summed, total),
        ("grouped", grouped[0], torch.stack(inputs).max(dim=0).values),
        ("allgather", gathered, torch.cat([inputs[i][: i + 1] for i in range(n)])),
        ("broadcast from the set's last global rank", broadcast, inputs[-1]),
        ("alltoall", alltoall, torch.cat([inputs[i][2 * me:2 * me + 2] for i in range(n)])),
        ("reducescatter", scattered, total[2 * me:2 * me + 2]),
    ])


def test_gradients_within_a_set(halves):
    mine, ranks = halves
    x = torch.ones(3, requires_grad=True)
    hvd.allreduce(x, op=hvd.Sum, process_set=mine).backward(torch.ones(3))
    y = torch.ones(2, 2, requires_grad=True)
    hvd.allgather(y, process_set=mine).backward(torch.ones(2 * len(ranks), 2))
    check_results([("allreduce grad", x.grad, torch.full((3,), float(len(ranks)))),
                   ("allgather grad", y.grad, torch.ones(2, 2))])


def test_sparse_allreduce_within_a_set(halves):
    mine, ranks = halves
    dense = torch.zeros(6, 2)
    dense[hvd.rank() % 6] = 1.0 + hvd.rank()
    result = hvd.sparse_allreduce_async(dense.to_sparse(), name="ps.sparse", op=hvd.Sum, process_set=mine)()
    expected = torch.zeros(6, 2)
    for r in ranks:
        expected[r % 6] += 1.0 + r
    check_results([("sparse", result.to_dense(), expected)])


def test_errors_with_sets(halves):
    mine, ranks = halves
    others = [s for s in even_and_odd() if s != ranks][0]
    foreign = hvd.ProcessSet(others)
    foreign.process_set_id = 1 if mine.process_set_id == 2 else 2  # the other half's id
    raises_on_all_ranks(ValueError, lambda: hvd.allreduce(torch.ones(1), process_set=foreign))
    raises_on_all_ranks(ValueError, lambda: hvd.broadcast(torch.ones(1), others[0], process_set=mine))
    raises_on_all_ranks(ValueError, lambda: hvd.add_process_set(ranks))  # a duplicate
    raises_on_all_ranks(ValueError, lambda: hvd.allreduce(torch.ones(1), process_set=hvd.ProcessSet(ranks)))
    check_on_all_ranks(not hvd.remove_process_set(hvd.global_process_set), lambda: "removed the global set")


def test_removed_set_is_unusable():
    require_ranks(2)
    ps = hvd.add_process_set([0])
    check_on_all_ranks(hvd.remove_process_set(ps) and ps.process_set_id is None, lambda: str(ps))
    raises_on_all_ranks(ValueError, lambda: hvd.allreduce(torch.ones(1), process_set=ps))


def test_static_process_sets_given_to_init():
    """init(process_sets=[...]) in a restarted runtime (ids 1.. in order), then back to normal."""
    require_ranks(2)
    evens, odds = even_and_odd()
    hvd.shutdown()
    try:
        duplicate = [hvd.ProcessSet(evens), hvd.ProcessSet(list(reversed(evens)))]
        with pytest.raises(ValueError, match="duplicate"):
            hvd.init(process_sets=duplicate)
        even_set, odd_set = hvd.ProcessSet(evens), hvd.ProcessSet(odds)
        hvd.init(process_sets=[even_set, odd_set])
        mine, ranks = (even_set, evens) if hvd.rank() % 2 == 0 else (odd_set, odds)
        summed = hvd.allreduce(torch.ones(2), op=hvd.Sum, process_set=mine)
        check_on_all_ranks((even_set.process_set_id, odd_set.process_set_id) == (1, 2),
                           lambda: f"ids {even_set.process_set_id}, {odd_set.process_set_id}")
        check_results([("static set allreduce", summed, torch.full((2,), float(len(ranks))))])
    finally:
        hvd.shutdown()
        hvd.init()


def test_init_with_process_sets_dynamic_string():
    hvd.shutdown()
    try:
        hvd.init(process_sets="dynamic")
        check_on_all_ranks(hvd.is_initialized(), lambda: "not initialized")
    finally:
        hvd.shutdown()
        hvd.init()
