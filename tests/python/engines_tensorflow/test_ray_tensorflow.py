"""korovod.ray.RayExecutor with TensorFlow ranks (korovod.tensorflow), on a real local Ray instance
in the TensorFlow venv: the 2-rank training equals one process on the combined batch; a rank's
exception comes back, a rank that never comes and a killed actor are named; no worker is left
running."""

import os
import sys

import pytest

ray = pytest.importorskip("ray", reason="ray is not installed in this interpreter (scripts/setup installs it into "
                          "the TensorFlow venv)")
tf = pytest.importorskip("tensorflow")

import ray_helpers  # noqa: E402
import tf_training  # noqa: E402
from korovod.ray import RayExecutor  # noqa: E402

ray.cloudpickle.register_pickle_by_value(tf_training)
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


@pytest.fixture(scope="module")
def cluster():
    with ray_helpers.local_ray("kraytf-", num_cpus=4):
        yield


@pytest.fixture(scope="module")
def executor(cluster):
    job = RayExecutor(RayExecutor.create_settings(timeout_s=60), num_workers=2)
    try:
        job.start()
        yield job
    finally:
        job.shutdown()


def test_two_tensorflow_ranks_equal_one_process_on_the_combined_batch(executor):
    x, y = tf_training.data()
    tf_training.assert_same_model(executor.run(tf_training.train_fn, args=[x, y]), x, y)
    assert executor.run(tf_training.whoami) == [(0, 2, 3.0), (1, 2, 3.0)]


def test_a_tensorflow_rank_that_raises_fails_the_call(executor):
    with pytest.raises(KeyError, match="rank one has no such feature") as info:
        executor.run(tf_training.fail_on_rank_one)
    assert any("raised by rank 1 of 2" in n for n in getattr(info.value, "__notes__", [])), info.value


def init_only(_):
    import korovod.tensorflow as hvd
    hvd.init()


def test_a_tensorflow_rank_that_never_comes_is_named(cluster):
    job = RayExecutor(RayExecutor.create_settings(timeout_s=2), num_workers=2)
    job.start()
    try:
        # Only rank 0 calls hvd.init(): it waits timeout_s for rank 1, then names it.
        with pytest.raises(Exception, match="rank 1 did not arrive at the rendezvous store"):
            job.execute_single(init_only)
    finally:
        job.shutdown()


def test_a_killed_tensorflow_actor_is_named_and_shutdown_leaves_none(cluster):
    job = RayExecutor(RayExecutor.create_settings(timeout_s=60), num_workers=2)
    job.start()
    try:
        pids = job.execute(lambda _: os.getpid())
        with pytest.raises(ray.exceptions.RayActorError) as info:
            job.execute(tf_training.kill_rank_one)
        assert any("raised by rank 1 of 2" in n for n in getattr(info.value, "__notes__", [])), info.value
    finally:
        job.shutdown()
    ray_helpers.assert_gone(pids)
