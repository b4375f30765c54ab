"""korovod.spark.run on a real local[2] Spark session (pyspark from PyPI, Debian's Java): ranks as
the tasks of a barrier stage meeting at the driver's rendezvous store. Needs pyspark and torch
(the PyPI torch venv that scripts/setup makes; tests/python/CMakeLists.txt: python.<torch>.spark_local)."""

import io
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed in this interpreter (scripts/setup "
                              "installs it into the PyPI torch venv)")
torch = pytest.importorskip("torch")

import elastic_checks  # noqa: E402
import korovod.spark  # noqa: E402
import spark_helpers  # noqa: E402
import torch_engine_training  # noqa: E402
from korovod.spark import RankFailed, RemoteTraceback  # noqa: E402
from korovod.spark._pickle import cloudpickle_module  # noqa: E402

# The ranks cannot import this test file: its functions travel by value, as a script's do.
cloudpickle_module().register_pickle_by_value(sys.modules[__name__])
cloudpickle_module().register_pickle_by_value(torch_engine_training)


@pytest.fixture(scope="module")
def spark():
    # A barrier stage larger than the cluster fails at once instead of retrying 10 minutes.
    with spark_helpers.local_spark("local[2]", "korovod-spark-test",
                                   **{"spark.scheduler.barrier.maxConcurrentTasksCheck.maxFailures": "1",
                                      "spark.scheduler.barrier.maxConcurrentTasksCheck.interval": "1s"}) as session:
        yield session


def assert_nothing_left_running():
    elastic_checks.assert_gone(spark_helpers.rank_processes, within=10)


def test_two_ranks_equal_one_process_on_the_combined_batch(spark):
    x, y = torch_engine_training.data()
    results = korovod.spark.run(torch_engine_training.train_fn, args=(x, y), num_proc=2)
    assert len(results) == 2
    torch_engine_training.assert_same_model(results, x, y)


def whoami(tag, scale=1):
    import korovod.torch as hvd
    hvd.init()
    total = hvd.allreduce(torch.tensor([float(hvd.rank() + 1) * scale]), op=hvd.Sum).item()
    return tag, hvd.rank(), hvd.size(), hvd.local_size(), total, os.environ.get("KOROVOD_RENDEZVOUS_SERVER")


def iface():
    import korovod.torch as hvd
    hvd.init()
    return os.environ.get("KOROVOD_IFACE"), hvd.allreduce(torch.ones(1), op=hvd.Sum).item()


def test_nics_name_the_ranks_interface(spark):
    assert korovod.spark.run(iface, num_proc=2, nics={"lo"}) == [("lo", 2.0), ("lo", 2.0)]


def test_results_come_in_rank_order_with_args_and_kwargs(spark):
    assert korovod.spark.run(whoami, args=("t",), kwargs={"scale": 2}, num_proc=2) == [
        ("t", 0, 2, 2, 6.0, "external"), ("t", 1, 2, 2, 6.0, "external")]
    # num_proc defaults to spark.default.parallelism (2 here); use_mpi is accepted and changes nothing.
    assert [r[1] for r in korovod.spark.run(whoami, args=("d",), use_mpi=True)] == [0, 1]
    assert_nothing_left_running()


def fail_on_rank_one():
    import korovod.torch as hvd
    hvd.init()
    if hvd.rank() == 1:
        raise ValueError("rank one's batch is bad")
    hvd.allreduce(torch.ones(1), name="never_completes")  # rank 0 loses its peer here
    return "unreachable"


def test_a_failing_rank_fails_the_call_with_its_exception_and_traceback(spark):
    with pytest.raises(ValueError, match="rank one's batch is bad") as info:
        korovod.spark.run(fail_on_rank_one, num_proc=2)
    cause = info.value.__cause__
    assert isinstance(cause, RemoteTraceback)
    assert "rank 1 of 2" in str(cause) and "fail_on_rank_one" in str(cause), str(cause)
    assert any("raised by rank 1 of 2" in n for n in getattr(info.value, "__notes__", [])), info.value
    assert_nothing_left_running()


def arrive_late():
    import korovod.torch as hvd
    if int(os.environ["KOROVOD_RANK"]) == 1:
        time.sleep(8)
    hvd.init()
    return "arrived"


def test_a_rank_that_does_not_arrive_in_time_is_named(spark):
    start = time.monotonic()
    with pytest.raises(Exception, match="rank 1 did not arrive at the rendezvous store"):
        korovod.spark.run(arrive_late, num_proc=2, start_timeout=2)
    assert time.monotonic() - start < 60
    assert_nothing_left_running()


def kill_rank_one():
    import korovod.torch as hvd
    hvd.init()
    if hvd.rank() == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    hvd.allreduce(torch.ones(1), name="after_the_kill")


def test_a_killed_rank_is_named_with_its_signal(spark):
    with pytest.raises(RankFailed, match=r"rank 1 of 2: its process was killed by signal 9") as info:
        korovod.spark.run(kill_rank_one, num_proc=2)
    assert info.value.rank == 1 and info.value.exit_code == -signal.SIGKILL
    assert_nothing_left_running()


def test_more_ranks_than_task_slots_fails_instead_of_waiting(spark):
    with pytest.raises(Exception, match="(?i)barrier"):
        korovod.spark.run(whoami, args=("x",), num_proc=3)
    assert_nothing_left_running()


def test_without_a_spark_session_and_the_estimators_say_what_is_missing():
    code = ("import korovod.spark\n"
            "try:\n    korovod.spark.run(print)\nexcept Exception as e:\n    print('ERR', e)\n"
            "for m in ('torch', 'keras'):\n"
            "    try:\n        __import__('korovod.spark.' + m)\n    except ImportError as e:\n        print('IMPORT', e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120).stdout
    assert "ERR Could not find an active SparkContext" in out, out
    assert "IMPORT korovod.spark.torch (Horovod's TorchEstimator) does not exist in korovod yet" in out, out
    assert "IMPORT korovod.spark.keras (Horovod's KerasEstimator) does not exist in korovod yet" in out, out


def test_ctrl_c_on_the_driver_cancels_the_job_and_leaves_no_rank_running():
    example = Path(__file__).resolve().parents[3] / "examples" / "spark" / "pytorch_spark_digits.py"
    driver = subprocess.Popen([sys.executable, str(example), "--epochs", "100000"], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 120
        seen = []
        for line in driver.stdout:  # until a rank trains
            seen.append(line)
            if "<stdout>:epoch " in line or time.monotonic() > deadline:
                break
        assert any("<stdout>:epoch " in line for line in seen), "".join(seen[-30:])
        driver.send_signal(signal.SIGINT)
        rest, _ = driver.communicate(timeout=60)
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
    assert driver.returncode != 0 and "KeyboardInterrupt" in rest, rest[-3000:]
    assert_nothing_left_running()


def say_hello():
    print(f"hello from rank {os.environ['KOROVOD_RANK']}")
    print(f"a warning from rank {os.environ['KOROVOD_RANK']}", file=sys.stderr)
    return 1


def test_the_ranks_output_comes_to_the_drivers_streams(spark):
    out, err = io.StringIO(), io.StringIO()
    assert korovod.spark.run(say_hello, num_proc=2, stdout=out, stderr=err) == [1, 1]
    for rank in (0, 1):
        assert f"[{rank}]<stdout>:hello from rank {rank}\n" in out.getvalue(), out.getvalue()
        assert f"[{rank}]<stderr>:a warning from rank {rank}\n" in err.getvalue(), err.getvalue()
    assert "warning" not in out.getvalue() and "hello" not in err.getvalue()
    stamped = io.StringIO()
    korovod.spark.run(say_hello, num_proc=2, stdout=stamped, stderr=io.StringIO(), prefix_output_with_timestamp=True)
    assert re.search(r"^\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}\[1\]<stdout>:hello from rank 1$", stamped.getvalue(),
                     re.MULTILINE), stamped.getvalue()
