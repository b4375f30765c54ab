"""korovod.ray.RayExecutor with TensorFlow ranks (korovod.tensorflow), on a real local Ray instance
in the TensorFlow venv: the 2-rank training equals one process on the combined batch, and a
rank's exception comes back."""

import os
import shutil
import sys
import tempfile

import pytest

ray = pytest.importorskip("ray", reason="ray is not installed in this interpreter (scripts/setup installs it into "
                          "the TensorFlow venv)")
tf = pytest.importorskip("tensorflow")

import tf_training  # noqa: E402
from korovod.ray import RayExecutor  # noqa: E402

ray.cloudpickle.register_pickle_by_value(tf_training)
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


@pytest.fixture(scope="module")
def executor():
    os.environ.update({"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"})
    temp = tempfile.mkdtemp(prefix="kraytf-", dir="/tmp")
    ray.init(num_cpus=2, include_dashboard=False, _temp_dir=temp)
    job = RayExecutor(RayExecutor.create_settings(timeout_s=60), num_workers=2)
    try:
        job.start()
        yield job
    finally:
        job.shutdown()
        ray.shutdown()
        shutil.rmtree(temp, ignore_errors=True)


def test_two_tensorflow_ranks_equal_one_process_on_the_combined_batch(executor):
    x, y = tf_training.data()
    tf_training.assert_same_model(executor.run(tf_training.train_fn, args=[x, y]), x, y)
    assert executor.run(tf_training.whoami) == [(0, 2, 3.0), (1, 2, 3.0)]


def test_a_tensorflow_rank_that_raises_fails_the_call(executor):
    with pytest.raises(KeyError, match="rank one has no such feature") as info:
        executor.run(tf_training.fail_on_rank_one)
    assert any("raised by rank 1 of 2" in n for n in getattr(info.value, "__notes__", [])), info.value
