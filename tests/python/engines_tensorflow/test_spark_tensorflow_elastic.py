"""korovod.spark.run_elastic with TensorFlow ranks (korovod.tensorflow's hvd.elastic.run and
TensorFlowKerasState, a tf.function step with DistributedGradientTape), on a real local[2,4]
Spark session in the TensorFlow venv: a worker's process killed mid-training, and a whole Spark
task lost mid-training (Spark retries it), are survived, and training finishes with one process's
model (shared/tf_elastic_training); nothing is left running."""

import sys

import pytest

pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed in this interpreter (scripts/setup "
                              "installs it into the TensorFlow venv)")
tf = pytest.importorskip("tensorflow", reason="TensorFlow is not installed in this interpreter (the TensorFlow "
                         "venv has it)")

import elastic_checks  # noqa: E402
import korovod.spark  # noqa: E402
import spark_helpers  # noqa: E402
import tf_elastic_training  # noqa: E402
from korovod.spark._pickle import cloudpickle_module  # noqa: E402

cloudpickle_module().register_pickle_by_value(sys.modules[__name__])
cloudpickle_module().register_pickle_by_value(tf_elastic_training)


@pytest.fixture(scope="module")
def spark():
    # local[2,4]: two task slots, and a failed task is tried up to 4 times (local mode's default is once).
    with spark_helpers.local_spark("local[2,4]", "korovod-spark-tf-elastic-test") as session:
        yield session


@pytest.mark.parametrize("lost", ["worker process", "spark task"])
def test_a_tensorflow_worker_lost_mid_training_is_replaced_and_training_finishes(spark, lost, tmp_path):
    x, y = tf_elastic_training.data()
    results = elastic_checks.kill_rank_one_mid_training(
        lambda progress: korovod.spark.run_elastic(tf_elastic_training.train_fn, args=(x, y, progress),
                                                   num_proc=2, elastic_timeout=60),
        str(tmp_path), kill_parent=lost == "spark task")
    tf_elastic_training.assert_finished_as_one_process(results, x, y, size=2)
    spark_helpers.assert_nothing_left_running(spark)
