"""korovod.ray's elastic mode (RayExecutor(min_workers=...), and Horovod's older
ElasticRayExecutor) on a real local Ray instance: workers are actors that come and go, in rounds
that korovodrun's elastic driver decides. A worker's process killed mid-training is replaced and
training finishes with one process's model; a failing function, too few slots and the calls
elastic mode lacks fail with errors that say why; nothing is left running."""

import sys

import pytest

ray = pytest.importorskip("ray", reason="ray is not installed in this interpreter (scripts/setup installs it into "
                          "the PyPI torch venv)")
torch = pytest.importorskip("torch")

import elastic_checks  # noqa: E402
import ray_helpers  # noqa: E402
import torch_elastic_training  # noqa: E402
from korovod.ray import ElasticRayExecutor, RayExecutor  # noqa: E402

ray.cloudpickle.register_pickle_by_value(torch_elastic_training)
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


@pytest.fixture(scope="module")
def cluster():
    with ray_helpers.local_ray("kray-el-"):
        yield


def assert_no_worker_left():
    elastic_checks.assert_gone(ray_helpers.worker_actor_processes)


def test_a_worker_killed_mid_training_is_replaced_and_training_finishes(cluster, tmp_path):
    x, y = torch_elastic_training.data()
    job = RayExecutor(RayExecutor.create_settings(timeout_s=30), min_workers=2, max_workers=2, elastic_timeout=60)
    job.start()
    try:
        results = elastic_checks.kill_rank_one_mid_training(
            lambda progress: job.run(torch_elastic_training.train_fn, args=[x, y, progress]), str(tmp_path))
    finally:
        job.shutdown()
    torch_elastic_training.assert_finished_as_one_process(results, x, y, size=2)
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


class GrowingDiscovery:
    """Horovod's HostDiscovery shape (override_discovery=False): this node with one slot for the
    first `calls` discoveries, then with two."""

    def __init__(self, calls):
        self.calls = calls
        self.address = ray.util.get_node_ip_address()

    def find_available_hosts_and_slots(self):
        self.calls -= 1
        return {self.address: 1 if self.calls >= 0 else 2}


def test_the_callers_discovery_places_workers_and_a_new_slot_joins_mid_training(cluster, tmp_path):
    x, y = torch_elastic_training.data()
    progress = str(tmp_path)
    settings = RayExecutor.create_settings(timeout_s=30)
    settings.discovery = GrowingDiscovery(calls=4)
    job = RayExecutor(settings, min_workers=1, max_workers=2, elastic_timeout=60, override_discovery=False)
    job.start()
    try:
        results = job.run(torch_elastic_training.train_fn, args=[x, y, progress])
    finally:
        job.shutdown()
    # One worker trained alone, then a second joined: the state saw sizes 1 and 2.
    torch_elastic_training.assert_finished_as_one_process(results, x, y, size=2)
    assert results[0]["sizes"] == [1, 2], results[0]["sizes"]
    with pytest.raises(ValueError, match="override_discovery=False needs settings.discovery"):
        RayExecutor(RayExecutor.create_settings(), min_workers=1, override_discovery=False)
    assert_no_worker_left()
