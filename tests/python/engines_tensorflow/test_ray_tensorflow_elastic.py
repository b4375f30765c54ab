"""korovod.ray's elastic mode (RayExecutor(min_workers=...)) with TensorFlow ranks
(korovod.tensorflow's hvd.elastic.run and TensorFlowKerasState, a tf.function step with
DistributedGradientTape), on a real local Ray instance in the TensorFlow venv: a worker's
process killed mid-training is replaced in a new round and training finishes with one process's
model (shared/tf_elastic_training); no worker actor is left running."""

import sys

import pytest

ray = pytest.importorskip("ray", reason="ray is not installed in this interpreter (scripts/setup installs it into "
                          "the TensorFlow venv)")
tf = pytest.importorskip("tensorflow", reason="TensorFlow is not installed in this interpreter (the TensorFlow "
                         "venv has it)")

import elastic_checks  # noqa: E402
import ray_helpers  # noqa: E402
import tf_elastic_training  # noqa: E402
from korovod.ray import RayExecutor  # noqa: E402

ray.cloudpickle.register_pickle_by_value(tf_elastic_training)
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


@pytest.fixture(scope="module")
def cluster():
    with ray_helpers.local_ray("kraytf-el-"):
        yield


def test_a_tensorflow_worker_killed_mid_training_is_replaced_and_training_finishes(cluster, tmp_path):
    x, y = tf_elastic_training.data()
    job = RayExecutor(RayExecutor.create_settings(timeout_s=60), min_workers=2, max_workers=2, elastic_timeout=60)
    job.start()
    try:
        results = elastic_checks.kill_rank_one_mid_training(
            lambda progress: job.run(tf_elastic_training.train_fn, args=[x, y, progress]), str(tmp_path))
    finally:
        job.shutdown()
    tf_elastic_training.assert_finished_as_one_process(results, x, y, size=2)
    elastic_checks.assert_gone(ray_helpers.worker_actor_processes)
