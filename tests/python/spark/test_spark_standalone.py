"""korovod.spark.run on a real Spark standalone cluster that the test starts on 127.0.0.1: a master
and two workers of one core each (pyspark's sbin/spark-daemon.sh, its own ports, stopped at the
end), so the two ranks run in two executors, as on a cluster."""

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed in this interpreter (scripts/setup "
                              "installs it into the PyPI torch venv)")
torch = pytest.importorskip("torch")

import korovod  # noqa: E402
import korovod.spark  # noqa: E402
from free_port import free_port  # noqa: E402
from korovod.spark._pickle import cloudpickle_module  # noqa: E402

cloudpickle_module().register_pickle_by_value(sys.modules[__name__])

SPARK_HOME = Path(pyspark.__file__).resolve().parent
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"


def _daemon(env, action, cls, instance, *args):
    cmd = [str(SPARK_HOME / "sbin" / "spark-daemon.sh"), action, cls, str(instance), *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def cluster():
    work = Path(tempfile.mkdtemp(prefix="korovod-spark-standalone-"))
    env = dict(os.environ, SPARK_HOME=str(SPARK_HOME), SPARK_PID_DIR=str(work / "pid"),
               SPARK_LOG_DIR=str(work / "log"), SPARK_WORKER_DIR=str(work / "worker"), SPARK_LOCAL_IP="127.0.0.1")
    port = free_port()
    master = f"spark://127.0.0.1:{port}"
    started = []
    try:
        r = _daemon(env, "start", MASTER_CLASS, 1, "--host", "127.0.0.1", "--port", str(port), "--webui-port",
                    str(free_port()))
        assert r.returncode == 0, r.stdout + r.stderr
        started.append((dict(env), MASTER_CLASS, 1))
        for i in (1, 2):
            wenv = dict(env, SPARK_IDENT_STRING=f"korovod-worker{i}")
            r = _daemon(wenv, "start", WORKER_CLASS, i, "--host", "127.0.0.1", "--cores", "1", "--memory", "1g",
                        "--webui-port", str(free_port()), master)
            assert r.returncode == 0, r.stdout + r.stderr
            started.append((wenv, WORKER_CLASS, i))
        yield master, work
    finally:
        for e, cls, i in reversed(started):
            _daemon(e, "stop", cls, i)
        shutil.rmtree(work, ignore_errors=True)


@pytest.fixture(scope="module")
def spark(cluster):
    from pyspark.sql import SparkSession
    master, _ = cluster
    package_root = str(Path(korovod.__file__).resolve().parents[1])
    # The executors' Python: pyspark sends the driver's PYSPARK_PYTHON with each task (default
    # `python3` on PATH); spark.pyspark.python is read only by spark-submit.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    session = (SparkSession.builder.master(master).appName("korovod-spark-standalone-test")
               .config("spark.ui.enabled", "false")
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.ui.showConsoleProgress", "false")
               # Executors do not get the driver's environment: korovod must be importable in their Python.
               .config("spark.executorEnv.PYTHONPATH", package_root)
               .config("spark.cores.max", "2")
               .config("spark.scheduler.barrier.maxConcurrentTasksCheck.maxFailures", "1")
               .config("spark.scheduler.barrier.maxConcurrentTasksCheck.interval", "1s")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    # Both executors registered: a barrier stage needs both slots at once.
    deadline = time.monotonic() + 120
    while session.sparkContext._jsc.sc().getExecutorMemoryStatus().size() < 3 and time.monotonic() < deadline:
        time.sleep(0.5)
    yield session
    session.stop()


def where_am_i():
    import korovod.torch as hvd
    hvd.init()
    total = hvd.allreduce(torch.tensor([float(hvd.rank() + 1)]), op=hvd.Sum).item()
    return hvd.rank(), hvd.size(), total, os.getppid(), os.environ.get("SPARK_EXECUTOR_ID", "?")


def test_two_ranks_in_two_executors_of_a_standalone_cluster(spark):
    results = korovod.spark.run(where_am_i, num_proc=2)
    assert [r[:3] for r in results] == [(0, 2, 3.0), (1, 2, 3.0)], results
    # Each rank is the child of a different Python worker, in a different executor.
    assert results[0][3] != results[1][3], results


def test_a_failing_rank_on_a_standalone_cluster_comes_back_with_its_traceback(spark):
    def fail_on_rank_one():
        import korovod.torch as hvd
        hvd.init()
        if hvd.rank() == 1:
            raise KeyError("missing column")
        hvd.allreduce(torch.ones(1), name="never_completes")

    with pytest.raises(KeyError, match="missing column") as info:
        korovod.spark.run(fail_on_rank_one, num_proc=2)
    assert "rank 1 of 2" in str(info.value.__cause__), info.value.__cause__
