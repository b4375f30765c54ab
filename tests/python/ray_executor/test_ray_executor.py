"""korovod.ray.RayExecutor on a real local Ray instance (ray.init(), ray from PyPI): each rank a
Ray actor in a placement group, the ranks meeting at the driver's rendezvous store over korovod's
TCP planes. Needs ray and torch (the PyPI torch venv that scripts/setup makes;
tests/python/CMakeLists.txt: python.<torch>.ray)."""

import os
import signal
import socket
import sys

import pytest

ray = pytest.importorskip("ray", reason="ray is not installed in this interpreter (scripts/setup installs it into "
                          "the PyPI torch venv)")
torch = pytest.importorskip("torch")

import ray_helpers  # noqa: E402
import torch_engine_training  # noqa: E402
from korovod.ray import RayExecutor  # noqa: E402

# The actors cannot import this folder's modules: their functions travel by value, as a script's do.
ray.cloudpickle.register_pickle_by_value(ray_helpers)
ray.cloudpickle.register_pickle_by_value(torch_engine_training)
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


@pytest.fixture(scope="module")
def cluster():
    with ray_helpers.local_ray("kray-"):
        yield


def executor(num_workers=2, timeout_s=30, **kwargs):
    return RayExecutor(RayExecutor.create_settings(timeout_s=timeout_s, placement_group_timeout_s=20),
                       num_workers=num_workers, **kwargs)


def test_two_ranks_equal_one_process_on_the_combined_batch(cluster):
    x, y = torch_engine_training.data()
    job = executor()
    job.start()
    try:
        results = job.run(torch_engine_training.train_fn, args=[x, y])
    finally:
        job.shutdown()
    assert len(results) == 2
    torch_engine_training.assert_same_model(results, x, y)


def whoami(tag, scale=1):
    import korovod.torch as hvd
    hvd.init()
    total = hvd.allreduce(torch.tensor([float(hvd.rank() + 1) * scale]), op=hvd.Sum).item()
    return (tag, hvd.rank(), hvd.size(), hvd.local_rank(), hvd.local_size(), hvd.cross_size(), total,
            os.environ.get("EXTRA"))


class Counter:
    def __init__(self, start):
        import korovod.torch as hvd
        hvd.init()
        self.value = start + hvd.rank()

    def bump(self):
        self.value += 10
        return self.value


def test_run_execute_run_remote_and_execute_single(cluster):
    job = executor()
    job.start(executable_cls=Counter, executable_args=[5], extra_env_vars={"EXTRA": "yes"})
    try:
        # In rank order, args and kwargs as given; one Ray node: local ranks 0 and 1, cross size 1.
        assert job.run(whoami, args=["t"], kwargs={"scale": 2}) == [
            ("t", 0, 2, 0, 2, 1, 6.0, "yes"), ("t", 1, 2, 1, 2, 1, 6.0, "yes")]
        assert ray.get(job.run_remote(whoami, args=["r"]))[1][:2] == ("r", 1)
        # The executable lives as long as the workers: state kept from one call to the next.
        assert job.execute(lambda counter: counter.bump()) == [15, 16]
        assert job.execute(lambda counter: counter.bump()) == [25, 26]
        assert job.execute_single(lambda counter: counter.value) == 25
    finally:
        job.shutdown()


def test_num_hosts_times_workers_per_host(cluster):
    job = RayExecutor(RayExecutor.create_settings(timeout_s=30, nics={"lo"}), num_hosts=1, num_workers_per_host=2)
    job.start()
    try:
        assert [r[1:6] for r in job.run(whoami, args=["h"])] == [(0, 2, 0, 2, 1), (1, 2, 1, 2, 1)]
        assert set(job.execute(lambda _: socket.gethostname())) == {socket.gethostname()}
        assert job.execute(lambda _: os.environ.get("KOROVOD_IFACE")) == ["lo", "lo"]  # nics
    finally:
        job.shutdown()


def fail_on_rank_one():
    import korovod.torch as hvd
    hvd.init()
    if hvd.rank() == 1:
        raise ValueError("rank one's batch is bad")
    hvd.allreduce(torch.ones(1), name="never_completes")  # rank 0 waits for its peer here
    return "unreachable"


def test_a_failing_rank_fails_the_call_and_shutdown_leaves_no_actor(cluster):
    job = executor(timeout_s=30)
    job.start()
    pids = job.execute(lambda _: os.getpid())
    with pytest.raises(ValueError, match="rank one's batch is bad") as info:
        job.run(fail_on_rank_one)  # at once: rank 0 still waits in its allreduce
    assert "fail_on_rank_one" in str(info.value), str(info.value)  # the rank's traceback
    assert any("raised by rank 1 of 2" in n for n in getattr(info.value, "__notes__", [])), info.value
    job.shutdown()
    ray_helpers.assert_gone(pids)
    job.shutdown()  # twice: nothing more to do


def init_only(_):
    import korovod.torch as hvd
    hvd.init()


def test_a_rank_that_never_comes_is_named(cluster):
    job = executor(timeout_s=2)
    job.start()
    try:
        # Only rank 0 calls hvd.init(): it waits timeout_s for rank 1, then names it.
        with pytest.raises(Exception, match="rank 1 did not arrive at the rendezvous store"):
            job.execute_single(init_only)
    finally:
        job.shutdown()


def kill_rank_one(_):
    import korovod.torch as hvd
    hvd.init()
    if hvd.rank() == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    hvd.allreduce(torch.ones(1), name="after_the_kill")


def test_a_killed_actor_is_named(cluster):
    job = executor()
    job.start()
    try:
        with pytest.raises(ray.exceptions.RayActorError) as info:
            job.execute(kill_rank_one)
        assert any("raised by rank 1 of 2" in n for n in getattr(info.value, "__notes__", [])), info.value
    finally:
        job.shutdown()


def test_more_workers_than_the_cluster_holds_times_out_and_reserves_nothing(cluster):
    job = RayExecutor(RayExecutor.create_settings(placement_group_timeout_s=3), num_workers=5)
    with pytest.raises(TimeoutError, match="do not fit the cluster"):
        job.start()
    job.shutdown()
    states = [g["state"] for g in ray.util.placement_group_table().values()]
    assert "PENDING" not in states and "CREATED" not in states, states


def test_bad_arguments_say_what_is_wrong():
    settings = RayExecutor.create_settings()
    with pytest.raises(ValueError, match="give num_workers"):
        RayExecutor(settings)
    with pytest.raises(ValueError, match="both given"):
        RayExecutor(settings, num_workers=2, num_hosts=1)
    with pytest.raises(ValueError, match="both given"):
        RayExecutor(settings, num_workers=2, min_workers=1)
    with pytest.raises(ValueError, match="max_workers needs a positive min_workers"):
        RayExecutor(settings, max_workers=2)
    with pytest.raises(ValueError, match=r"max_workers \(1\) is below min_workers \(2\)"):
        RayExecutor(settings, min_workers=2, max_workers=1)
    with pytest.raises(ValueError, match="use_gpu"):
        RayExecutor(settings, num_workers=1, gpus_per_worker=1)
    with pytest.raises(RuntimeError, match="before start"):
        executor().run(whoami, args=["x"])
