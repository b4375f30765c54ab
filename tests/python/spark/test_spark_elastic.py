"""korovod.spark.run_elastic on a real local Spark session with task retries (local[2,4]): Spark
tasks are slots for the workers of an elastic job whose rounds korovodrun's elastic driver
decides. A worker's process killed mid-training, and a whole Spark task lost mid-training (Spark
retries it), are survived: training finishes with one process's model (shared/
torch_elastic_training). A failing function and too few slots fail with errors that say why;
nothing is left running."""

import io
import re
import sys

import pytest

pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed in this interpreter (scripts/setup "
                              "installs it into the PyPI torch venv)")
torch = pytest.importorskip("torch")

import elastic_checks  # noqa: E402
import korovod.spark  # noqa: E402
import spark_helpers  # noqa: E402
import torch_elastic_training  # noqa: E402
from korovod.spark._pickle import cloudpickle_module  # noqa: E402

cloudpickle_module().register_pickle_by_value(sys.modules[__name__])
cloudpickle_module().register_pickle_by_value(torch_elastic_training)


@pytest.fixture(scope="module")
def spark():
    # local[2,4]: two task slots, and a failed task is tried up to 4 times (local mode's default is once).
    with spark_helpers.local_spark("local[2,4]", "korovod-spark-elastic-test") as session:
        yield session


@pytest.mark.parametrize("lost", ["worker process", "spark task"])
def test_a_worker_lost_mid_training_is_replaced_and_training_finishes(spark, lost, tmp_path):
    x, y = torch_elastic_training.data()
    results = elastic_checks.kill_rank_one_mid_training(
        lambda progress: korovod.spark.run_elastic(torch_elastic_training.train_fn, args=(x, y, progress),
                                                   num_proc=2, elastic_timeout=60),
        str(tmp_path), kill_parent=lost == "spark task")
    torch_elastic_training.assert_finished_as_one_process(results, x, y, size=2)
    spark_helpers.assert_nothing_left_running(spark)


def bad_batch():
    import korovod.torch as hvd
    hvd.init()
    raise ValueError(f"bad batch on rank {hvd.rank()}")


def test_a_function_that_raises_fails_the_job_with_its_exception_as_the_cause(spark):
    # Which round ends it depends on when each worker fails: "every worker of round N has failed",
    # or "no worker that holds the training state is left".
    with pytest.raises(RuntimeError, match=r"the elastic job failed: .* \(the last worker to fail: worker \S+:\d "
                                           r"raised ValueError: bad batch") as info:
        korovod.spark.run_elastic(bad_batch, num_proc=2, elastic_timeout=30)
    assert isinstance(info.value.__cause__, ValueError), repr(info.value.__cause__)
    assert "bad batch on rank" in str(info.value.__cause__.__cause__), "the worker's traceback"
    spark_helpers.assert_nothing_left_running(spark)


def test_more_workers_than_task_slots_time_out_naming_the_slots(spark):
    with pytest.raises(RuntimeError, match=r"timed out after elastic_timeout 4 s waiting for 3 worker slots to "
                                           r"start \(num_proc\): 2 available"):
        korovod.spark.run_elastic(bad_batch, num_proc=3, elastic_timeout=4)
    spark_helpers.assert_nothing_left_running(spark)


def say_rank():
    import korovod.torch as hvd
    hvd.init()
    print(f"worker of rank {hvd.rank()} of {hvd.size()}")
    return hvd.rank()


def test_the_workers_output_comes_to_the_drivers_stream(spark):
    out = io.StringIO()
    assert korovod.spark.run_elastic(say_rank, num_proc=2, elastic_timeout=30, stdout=out) == [0, 1]
    lines = [line for line in out.getvalue().splitlines() if "<stdout>:worker of rank" in line]
    assert sorted(line.split(">:", 1)[1] for line in lines) == ["worker of rank 0 of 2", "worker of rank 1 of 2"], \
        out.getvalue()
    assert all(re.match(r"^\[\S+:\d\]<stdout>:", line) for line in lines), lines
