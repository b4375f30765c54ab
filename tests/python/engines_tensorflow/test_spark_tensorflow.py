"""korovod.spark.run with TensorFlow ranks (korovod.tensorflow), on a real local[2] Spark session
in the TensorFlow venv (pyspark from PyPI, Debian's Java): the 2-rank training equals one
process on the combined batch; a rank's exception comes back, a rank that arrives late and a
killed rank are named; nothing is left running."""

import pytest

pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed in this interpreter (scripts/setup "
                              "installs it into the TensorFlow venv)")
tf = pytest.importorskip("tensorflow")

import korovod.spark  # noqa: E402
from korovod.spark import RankFailed  # noqa: E402
import spark_helpers  # noqa: E402
import tf_training  # noqa: E402
from korovod.spark._pickle import cloudpickle_module  # noqa: E402

cloudpickle_module().register_pickle_by_value(tf_training)


@pytest.fixture(scope="module")
def spark():
    with spark_helpers.local_spark("local[2]", "korovod-spark-tf-test") as session:
        yield session


def test_two_tensorflow_ranks_equal_one_process_on_the_combined_batch(spark):
    x, y = tf_training.data()
    tf_training.assert_same_model(korovod.spark.run(tf_training.train_fn, args=(x, y), num_proc=2), x, y)
    assert korovod.spark.run(tf_training.whoami, num_proc=2) == [(0, 2, 3.0), (1, 2, 3.0)]


def test_a_tensorflow_rank_that_raises_fails_the_call(spark):
    with pytest.raises(KeyError, match="rank one has no such feature") as info:
        korovod.spark.run(tf_training.fail_on_rank_one, num_proc=2)
    assert any("raised by rank 1 of 2" in n for n in getattr(info.value, "__notes__", [])), info.value
    spark_helpers.assert_nothing_left_running(spark)


def test_a_tensorflow_rank_that_does_not_arrive_in_time_is_named(spark):
    with pytest.raises(Exception, match="rank 1 did not arrive at the rendezvous store"):
        korovod.spark.run(tf_training.arrive_late, num_proc=2, start_timeout=2)
    spark_helpers.assert_nothing_left_running(spark)


def test_a_killed_tensorflow_rank_is_named_with_its_signal(spark):
    with pytest.raises(RankFailed, match=r"rank 1 of 2: its process was killed by signal 9"):
        korovod.spark.run(tf_training.kill_rank_one, num_proc=2)
    spark_helpers.assert_nothing_left_running(spark)
