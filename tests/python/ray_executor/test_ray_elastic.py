"""korovod.ray's elastic mode (RayExecutor(min_workers=...), and Horovod's older
ElasticRayExecutor) on a real local Ray instance: workers are actors that come and go, in rounds
that korovodrun's elastic driver decides. A worker's process killed mid-training is replaced and
training finishes with one process's model; a failing function, too few slots and the calls
elastic mode lacks fail with errors that say why; nothing is left running."""

import os
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="ray is not installed in this interpreter (scripts/setup installs it into "
                          "the PyPI torch venv)")
torch = pytest.importorskip("torch")

import ray_helpers  # noqa: E402
import torch_elastic_training  # noqa: E402
from korovod.ray import ElasticRayExecutor, RayExecutor  # noqa: E402

ray.cloudpickle.register_pickle_by_value(ray_helpers)
ray.cloudpickle.register_pickle_by_value(torch_elastic_training)
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


@pytest.fixture(scope="module")
def cluster():
    os.environ.update(ray_helpers.RAY_ENV)
    temp = ray_helpers.temp_dir("kray-el-")
    ray.init(num_cpus=4, include_dashboard=False, _temp_dir=temp, log_to_driver=True)
    try:
        yield
    finally:
        ray.shutdown()
        ray_helpers.remove(temp)


def live_workers():
    """Processes of korovod's worker actors still running (Ray titles them ray::<class>[.<method>])."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if cmdline.startswith("ray::BaseHorovodWorker"):
            found.append((int(entry.name), cmdline.strip()))
    return found


def assert_no_worker_left():
    deadline = time.monotonic() + 15
    while live_workers() and time.monotonic() < deadline:
        time.sleep(0.3)
    assert not live_workers(), live_workers()


def run_in_thread(call):
    out = {}

    def go():
        try:
            out["result"] = call()
        except BaseException as e:  # noqa: B902 -- handed to the test
            out["error"] = e
    thread = threading.Thread(target=go, daemon=True)
    thread.start()
    return thread, out


def kill_rank_one_at_step(progress_dir, thread, step=10, timeout=120):
    """SIGKILLs the process of the worker that is rank 1 once a worker has passed `step`."""
    deadline = time.monotonic() + timeout
    while thread.is_alive() and time.monotonic() < deadline:
        seen = torch_elastic_training.progress(progress_dir)
        if any(s >= step for _, s in seen.values()):
            victim = next(pid for pid, (rank, _) in seen.items() if rank == 1)
            os.kill(victim, signal.SIGKILL)
            return victim
        time.sleep(0.1)
    raise AssertionError(f"training never reached step {step}: {torch_elastic_training.progress(progress_dir)}")


def test_a_worker_killed_mid_training_is_replaced_and_training_finishes(cluster):
    x, y = torch_elastic_training.data()
    progress = tempfile.mkdtemp(prefix="kray-el-progress-")
    job = RayExecutor(RayExecutor.create_settings(timeout_s=30), min_workers=2, max_workers=2, elastic_timeout=60)
    job.start()
    try:
        thread, out = run_in_thread(lambda: job.run(torch_elastic_training.train_fn, args=[x, y, progress]))
        victim = kill_rank_one_at_step(progress, thread)
        thread.join(180)
        assert not thread.is_alive(), "the elastic job did not end"
        assert "error" not in out, out.get("error")
        torch_elastic_training.assert_finished_as_one_process(out["result"], x, y, size=2)
        # A new worker took the killed one's place: three worker processes trained in all.
        assert victim in torch_elastic_training.progress(progress)
        assert len(torch_elastic_training.progress(progress)) == 3, torch_elastic_training.progress(progress)
    finally:
        job.shutdown()
    assert_no_worker_left()


def bad_batch():
    import korovod.torch as hvd
    hvd.init()
    raise ValueError(f"bad batch on rank {hvd.rank()}")


def test_a_function_that_raises_fails_the_job_with_its_exception_as_the_cause(cluster):
    job = RayExecutor(RayExecutor.create_settings(timeout_s=30), min_workers=2, elastic_timeout=30)
    job.start()
    try:
        # Which round ends it depends on when each worker fails: "every worker of round N has
        # failed", or "no worker that holds the training state is left".
        with pytest.raises(RuntimeError, match=r"the elastic job failed: .* \(the last worker to fail: worker "
                                               r"\w+:\d failed: ValueError: bad batch") as info:
            job.run(bad_batch)
        assert isinstance(info.value.__cause__, ValueError), repr(info.value.__cause__)  # a RayTaskError(ValueError)
        assert "bad batch on rank" in str(info.value.__cause__)
    finally:
        job.shutdown()
    assert_no_worker_left()


def test_more_workers_than_the_cluster_holds_time_out_naming_the_slots(cluster):
    job = RayExecutor(RayExecutor.create_settings(), min_workers=6, elastic_timeout=3)
    job.start()
    try:
        with pytest.raises(RuntimeError, match=r"timed out after elastic_timeout 3 s waiting for 6 worker slots to "
                                               r"start \(min_workers\): 4 available"):
            job.run(bad_batch)
    finally:
        job.shutdown()
    assert_no_worker_left()


def whoami():
    import korovod.torch as hvd
    hvd.init()
    return hvd.rank(), hvd.size(), hvd.allreduce(torch.tensor([1.0]), op=hvd.Sum).item()


def test_elastic_ray_executor_runs_min_num_proc_workers_and_elastic_mode_lacks_single_calls(cluster):
    settings = ElasticRayExecutor.create_settings(min_num_proc=2, max_num_proc=2, elastic_timeout=30)
    old = ElasticRayExecutor(settings, cpus_per_slot=1)
    old.start()
    try:
        assert old.run(whoami) == [(0, 2, 2.0), (1, 2, 2.0)]
    finally:
        old.shutdown()
    job = RayExecutor(RayExecutor.create_settings(), min_workers=1, max_workers=1)
    job.start()
    try:
        with pytest.raises(NotImplementedError, match="run_remote"):
            job.run_remote(whoami)
        with pytest.raises(NotImplementedError, match="execute_single"):
            job.execute_single(lambda _: 1)
        assert job.execute(lambda _: whoami()) == [(0, 1, 1.0)]
    finally:
        job.shutdown()
    assert_no_worker_left()
