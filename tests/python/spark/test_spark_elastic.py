"""korovod.spark.run_elastic on a real local Spark session with task retries (local[2,4]): Spark
tasks are slots for the workers of an elastic job whose rounds korovodrun's elastic driver
decides. A worker's process killed mid-training, and a whole Spark task lost mid-training (Spark
retries it), are survived: training finishes with one process's model. A failing function and
too few slots fail with errors that say why; nothing is left running."""

import os
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed in this interpreter (scripts/setup "
                              "installs it into the PyPI torch venv)")
torch = pytest.importorskip("torch")

import korovod.spark  # noqa: E402
import torch_elastic_training  # noqa: E402
from korovod.spark._pickle import cloudpickle_module  # noqa: E402

cloudpickle_module().register_pickle_by_value(sys.modules[__name__])
cloudpickle_module().register_pickle_by_value(torch_elastic_training)


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession
    os.environ["PYSPARK_PYTHON"] = sys.executable
    # local[2,4]: two task slots, and a failed task is tried up to 4 times (local mode's default is once).
    session = (SparkSession.builder.master("local[2,4]").appName("korovod-spark-elastic-test")
               .config("spark.ui.enabled", "false")
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.driver.bindAddress", "127.0.0.1")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def processes(marker):
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline:
            found.append((int(entry.name), cmdline))
    return found


def assert_nothing_left_running(spark):
    deadline = time.monotonic() + 15
    while (processes("korovod.spark._rank") or spark.sparkContext.statusTracker().getActiveJobsIds()) \
            and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not processes("korovod.spark._rank"), processes("korovod.spark._rank")
    assert not spark.sparkContext.statusTracker().getActiveJobsIds()


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


def rank_one_once_past(progress_dir, thread, step=10, timeout=120):
    """The pid of the worker that is rank 1, once a worker has passed `step`."""
    deadline = time.monotonic() + timeout
    while thread.is_alive() and time.monotonic() < deadline:
        seen = torch_elastic_training.progress(progress_dir)
        if any(s >= step for _, s in seen.values()):
            return next(pid for pid, (rank, _) in seen.items() if rank == 1)
        time.sleep(0.1)
    raise AssertionError(f"training never reached step {step}: {torch_elastic_training.progress(progress_dir)}")


def parent_of(pid):
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


@pytest.mark.parametrize("what", ["worker process", "spark task"])
def test_a_worker_lost_mid_training_is_replaced_and_training_finishes(spark, what):
    x, y = torch_elastic_training.data()
    progress = tempfile.mkdtemp(prefix="kspark-el-progress-")
    thread, out = run_in_thread(lambda: korovod.spark.run_elastic(
        torch_elastic_training.train_fn, args=(x, y, progress), num_proc=2, elastic_timeout=60))
    victim = rank_one_once_past(progress, thread)
    # The task's Python worker (the rank's parent): Spark retries the task, which serves the slot again.
    os.kill(victim if what == "worker process" else parent_of(victim), signal.SIGKILL)
    thread.join(180)
    assert not thread.is_alive(), "the elastic job did not end"
    assert "error" not in out, out.get("error")
    torch_elastic_training.assert_finished_as_one_process(out["result"], x, y, size=2)
    assert len(torch_elastic_training.progress(progress)) == 3, torch_elastic_training.progress(progress)
    assert_nothing_left_running(spark)


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
    assert_nothing_left_running(spark)


def test_more_workers_than_task_slots_time_out_naming_the_slots(spark):
    with pytest.raises(RuntimeError, match=r"timed out after elastic_timeout 4 s waiting for 3 worker slots to "
                                           r"start \(num_proc\): 2 available"):
        korovod.spark.run_elastic(bad_batch, num_proc=3, elastic_timeout=4)
    assert_nothing_left_running(spark)
