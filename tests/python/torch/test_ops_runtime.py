"""The runtime as Python sees it: init (idempotent, with comm=...), shutdown and re-init, queries
and their errors before init, build queries, the exported names, the timeline, poll/synchronize,
sparse allreduce."""

import json
import os
import tempfile
import time

import pytest
import torch

import korovod.torch as hvd
from ops_helpers import check_on_all_ranks, check_results, raises_on_all_ranks, require_ranks

# The names horovod.torch exports that Horovod's test_torch.py uses (docs/python-binding.md).
HOROVOD_TORCH_NAMES = """Sum Average Min Max Product Adasum Compression DistributedOptimizer SyncBatchNorm
HorovodInternalError init shutdown is_initialized rank size local_rank local_size mpi_built mpi_enabled gloo_built
nccl_built ccl_built allreduce allreduce_ allreduce_async grouped_allreduce grouped_allreduce_ allgather
allgather_async grouped_allgather broadcast broadcast_ broadcast_async alltoall reducescatter reducescatter_async
grouped_reducescatter sparse_allreduce_async barrier join poll synchronize add_process_set remove_process_set
broadcast_object allgather_object broadcast_parameters broadcast_optimizer_state start_timeline
stop_timeline""".split()
# The rest of horovod.torch's __init__ (elastic comes with the elastic work).
OTHER_HOROVOD_NAMES = """allreduce_async_ grouped_allreduce_async grouped_allreduce_async_ grouped_allgather_async
broadcast_async_ alltoall_async grouped_reducescatter_async cross_size cross_rank mpi_threads_supported
gloo_enabled ddl_built cuda_built rocm_built ProcessSet global_process_set""".split()


def test_every_horovod_torch_name_is_exported():
    assert len(HOROVOD_TORCH_NAMES) == 50
    missing = [n for n in HOROVOD_TORCH_NAMES + OTHER_HOROVOD_NAMES if not hasattr(hvd, n)]
    assert not missing
    assert issubclass(hvd.HorovodInternalError, RuntimeError)
    assert (hvd.Average, hvd.Sum, hvd.Adasum, hvd.Min, hvd.Max, hvd.Product) == (0, 1, 2, 3, 4, 5)


def test_queries_match_the_launcher():
    launched_size = next((int(os.environ[v]) for v in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "KOROVOD_SIZE",
                                                       "HOROVOD_SIZE") if v in os.environ), 1)
    launched_rank = next((int(os.environ[v]) for v in ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "KOROVOD_RANK",
                                                       "HOROVOD_RANK") if v in os.environ), 0)
    assert hvd.is_initialized()
    assert (hvd.size(), hvd.rank()) == (launched_size, launched_rank)
    assert 0 <= hvd.local_rank() < hvd.local_size() <= hvd.size()
    assert 0 <= hvd.cross_rank() < hvd.cross_size() <= hvd.size()
    assert hvd.local_size() * hvd.cross_size() == hvd.size() or not hvd.is_homogeneous()
    assert isinstance(hvd.is_homogeneous(), bool)


def test_build_queries():
    assert isinstance(hvd.mpi_built(), bool) and isinstance(hvd.gloo_built(), bool)
    assert hvd.gloo_built()  # the TCP control plane, Horovod's Gloo mode: in every build
    assert isinstance(hvd.nccl_built(), int) and hvd.nccl_built() >= 0
    assert (hvd.ddl_built(), hvd.ccl_built(), hvd.rocm_built()) == (False, False, False)
    assert isinstance(hvd.cuda_built(), bool)
    assert not (hvd.mpi_enabled() and hvd.gloo_enabled())
    if "OMPI_COMM_WORLD_SIZE" in os.environ:
        assert hvd.mpi_built() and hvd.mpi_enabled()
        assert isinstance(hvd.mpi_threads_supported(), bool)
    else:
        with pytest.raises(ValueError):
            hvd.mpi_threads_supported()


def test_init_is_idempotent():
    before = hvd.size()
    hvd.init()
    hvd.init()
    assert hvd.size() == before and hvd.is_initialized()


def test_everything_before_init_raises_value_error_then_init_again_works():
    rank, size = hvd.rank(), hvd.size()
    hvd.shutdown()
    hvd.shutdown()  # a second shutdown is harmless
    try:
        assert not hvd.is_initialized()
        calls = [hvd.rank, hvd.size, hvd.local_rank, hvd.local_size, hvd.cross_rank, hvd.cross_size,
                 hvd.is_homogeneous, hvd.barrier, hvd.join, hvd.stop_timeline,
                 lambda: hvd.start_timeline("/tmp/never.json"), lambda: hvd.allreduce(torch.ones(1)),
                 lambda: hvd.allreduce_async(torch.ones(1)), lambda: hvd.allgather(torch.ones(1)),
                 lambda: hvd.broadcast(torch.ones(1), 0), lambda: hvd.alltoall(torch.ones(1)),
                 lambda: hvd.reducescatter(torch.ones(1)), lambda: hvd.grouped_allreduce([torch.ones(1)]),
                 lambda: hvd.add_process_set([0]), lambda: hvd.global_process_set.size()]
        for call in calls:
            with pytest.raises(ValueError, match="Horovod has not been initialized; use hvd.init()"):
                call()
    finally:
        hvd.init()
    assert (hvd.rank(), hvd.size()) == (rank, size)
    check_results([("after re-init", hvd.allreduce(torch.ones(2), op=hvd.Sum), torch.full((2,), float(size)))])


def test_init_shutdown_init_cycles():
    for cycle in range(3):
        hvd.shutdown()
        hvd.init()
        result = hvd.allreduce(torch.full((3,), float(cycle)), op=hvd.Sum, name="cycle")
        check_results([(f"cycle {cycle}", result, torch.full((3,), float(cycle * hvd.size())))])


def test_pending_handle_of_a_shut_down_runtime_is_gone():
    handle = hvd.allreduce_async(torch.ones(1), op=hvd.Sum, name="before_shutdown")
    hvd.synchronize(handle)
    pending = hvd.allgather_async(torch.ones(1), name="kept")
    hvd.synchronize(pending)
    hvd.shutdown()
    hvd.init()
    assert hvd.synchronize(pending) is None  # the handle map is cleared on init, as Horovod's


def test_init_with_a_list_of_all_ranks():
    hvd.shutdown()
    try:
        hvd.init(comm=list(range(int(os.environ.get("OMPI_COMM_WORLD_SIZE", "1")))))
        check_results([("comm=[ranks]", hvd.allreduce(torch.ones(1), op=hvd.Sum), torch.ones(1) * hvd.size())])
    finally:
        hvd.shutdown()
        hvd.init()


def test_init_with_an_mpi4py_communicator():
    if "OMPI_COMM_WORLD_SIZE" not in os.environ:
        pytest.skip("needs a job started by mpirun")
    MPI = pytest.importorskip("mpi4py.MPI")
    hvd.shutdown()
    try:
        hvd.init(comm=MPI.COMM_WORLD)
        assert hvd.mpi_enabled() and hvd.size() == MPI.COMM_WORLD.Get_size()
        check_results([("comm=COMM_WORLD", hvd.allreduce(torch.ones(1), op=hvd.Sum), torch.ones(1) * hvd.size())])
        with pytest.raises(ValueError):
            hvd.shutdown()
            hvd.init(comm="not a communicator")
    finally:
        hvd.shutdown()
        hvd.init()


def test_static_sets_from_mpi4py_communicators():
    if "OMPI_COMM_WORLD_SIZE" not in os.environ:
        pytest.skip("needs a job started by mpirun")
    require_ranks(2)
    MPI = pytest.importorskip("mpi4py.MPI")
    halves = MPI.COMM_WORLD.Split(color=MPI.COMM_WORLD.Get_rank() % 2, key=MPI.COMM_WORLD.Get_rank())
    mine = hvd.ProcessSet(halves)
    hvd.shutdown()
    try:
        hvd.init(comm=MPI.COMM_WORLD, process_sets=[mine])
        members = [r for r in range(hvd.size()) if r % 2 == hvd.rank() % 2]
        check_on_all_ranks(mine.ranks == members and mine.process_set_id is not None, lambda: str(mine))
        result = hvd.allreduce(torch.ones(1), op=hvd.Sum, process_set=mine)
        check_results([("communicator set", result, torch.ones(1) * len(members))])
    finally:
        hvd.shutdown()
        hvd.init()
        halves.Free()


def timeline_of_one_allreduce(name, mark_cycles):
    """Rank 0's timeline events around one allreduce (an empty list on the other ranks)."""
    directory = tempfile.mkdtemp(prefix="korovod-timeline-")
    path = os.path.join(directory, "timeline.json")
    hvd.start_timeline(path, mark_cycles=mark_cycles)
    time.sleep(0.1)
    hvd.allreduce(torch.tensor([1.0, 2.0, 3.0]), name=name)
    time.sleep(0.1)
    hvd.stop_timeline()
    hvd.barrier()
    events = []
    if hvd.rank() == 0:
        with open(path) as f:
            events = json.loads(f.read())
        os.remove(path)
    if os.path.isdir(directory):
        os.rmdir(directory)
    return events


def check_timeline(events, name, mark_cycles, negotiation=True):
    if hvd.rank() != 0:
        return True, ""
    names = {e.get("name") for e in events}
    labels = {(e.get("args") or {}).get("name") for e in events}
    ok = (f"allreduce.{name}" in labels and "ALLREDUCE" in names and ("CYCLE_START" in names) == mark_cycles
          and "start_time_since_epoch_in_micros" in json.dumps(events)
          and (not negotiation or "NEGOTIATE_ALLREDUCE" in names))
    return ok, f"event names {sorted(map(str, names))}, process names {sorted(map(str, labels))}"


@pytest.mark.parametrize("mark_cycles", [True, False])
def test_timeline_records_named_allreduce(mark_cycles):
    """start_timeline/stop_timeline (HOROVOD_TIMELINE=DYNAMIC, as Horovod's test): rank 0 writes a
    Chrome-trace JSON array naming the tensor, with its negotiation and ALLREDUCE spans."""
    name = f"timeline_{mark_cycles}"
    ok, text = check_timeline(timeline_of_one_allreduce(name, mark_cycles), name, mark_cycles)
    check_on_all_ranks(ok, lambda: text)


@pytest.mark.xfail(strict=True, reason="korovod's timeline records NEGOTIATE_* only when the coordinator "
                   "negotiates; Horovod also marks response-cache hits (controller.cc CoordinateCacheAndState)")
def test_timeline_records_negotiation_of_a_cached_tensor():
    """Horovod's test_timeline_api repeats one name and expects NEGOTIATE_ALLREDUCE every time."""
    timeline_of_one_allreduce("timeline_cached", False)
    events = timeline_of_one_allreduce("timeline_cached", False)
    ok, text = check_timeline(events, "timeline_cached", False)
    check_on_all_ranks(ok, lambda: text)


def test_timeline_without_negotiation_of_a_cached_tensor():
    timeline_of_one_allreduce("timeline_repeat", False)
    events = timeline_of_one_allreduce("timeline_repeat", True)
    ok, text = check_timeline(events, "timeline_repeat", True, negotiation=False)
    check_on_all_ranks(ok, lambda: text)


def test_poll_and_synchronize():
    handle = hvd.allgather_async(torch.full((2,), float(hvd.rank())), name="poll")
    deadline = time.monotonic() + 30
    while not hvd.poll(handle) and time.monotonic() < deadline:
        time.sleep(0.001)
    done = hvd.poll(handle)
    result = hvd.synchronize(handle)
    check_on_all_ranks(done, lambda: "poll never reported done")
    check_results([("allgather", result, torch.arange(hvd.size()).double().repeat_interleave(2).float())])
    assert hvd.synchronize(handle) is None
    with pytest.raises(ValueError):
        hvd.poll(123456789)


@pytest.mark.parametrize("op_name", ["Sum", "Average"])
def test_sparse_allreduce_matches_dense(op_name):
    op = getattr(hvd, op_name)
    generator = torch.Generator().manual_seed(hvd.rank())
    dense = torch.rand(17, 10, generator=generator)
    dense[dense < 0.8] = 0
    handles = [hvd.sparse_allreduce_async(dense.to_sparse(), name=f"sparse.{op_name}", op=op)]
    reduced = hvd.allreduce(dense, op=op, name=f"dense.{op_name}")
    gathered = handles[0]()
    check_on_all_ranks(gathered.is_sparse, lambda: "not sparse")
    check_results([("sparse", gathered.to_dense(), reduced)])


def test_errors_leave_the_runtime_usable():
    raises_on_all_ranks(ValueError, lambda: hvd.allgather(torch.tensor(2.0)))
    raises_on_all_ranks(ValueError, lambda: hvd.alltoall(torch.ones(3), torch.ones(2, dtype=torch.float32)))
    check_results([("after", hvd.allreduce(torch.ones(1), op=hvd.Sum), torch.ones(1) * hvd.size())])
