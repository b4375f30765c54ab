"""korovod.spark.run: Horovod's ``horovod.spark.run`` on korovod.

The driver hosts the job's rendezvous store (korovod.common.rendezvous) and starts ``num_proc``
Spark tasks in one barrier stage (all of them at once, or none); task ``i`` is rank ``i`` and runs
``fn`` in a process of its own (_task.py), which meets the others at the driver's store over
korovod's TCP control and data planes, authenticated by a fresh job secret. No MPI, no ssh.
"""

from __future__ import annotations

import itertools
import logging
import os
import pickle
import threading
from typing import Any, Callable, Dict, List, Optional, Sequence

from korovod.common.rendezvous import RendezvousServer
from korovod.spark._pickle import dumps
from korovod.spark._relay import DriverStreams, OutputRelay

_log = logging.getLogger("korovod.spark")
_job_ids = itertools.count()
# Errors a rank raises because another one failed first (a lost peer, a stopped job): the driver
# reports the rank that failed for another reason when there is one.
_SECONDARY = ("HorovodInternalError", "HostsUpdatedInterrupt")


class RemoteTraceback(Exception):
    """The traceback of an exception raised in a rank, as its cause on the driver."""

    def __str__(self) -> str:
        return self.args[0] if self.args else ""


class RankFailed(RuntimeError):
    """A rank ended without a result: its process was killed or exited (``exit_code``), or its
    exception could not be brought back to the driver."""

    def __init__(self, message: str, rank: int, exit_code: Optional[int] = None) -> None:
        super().__init__(message)
        self.rank = rank
        self.exit_code = exit_code


def _spark_context():
    import pyspark
    sc = pyspark.SparkContext._active_spark_context
    if sc is None:
        raise Exception("Could not find an active SparkContext, are you running in a PySpark session?")
    return sc


def _start_timeout(start_timeout: Optional[float]) -> float:
    if start_timeout is not None:
        return float(start_timeout)
    return float(os.environ.get("HOROVOD_SPARK_START_TIMEOUT", "600"))


def _driver_address(sc) -> Optional[str]:
    """The address the executors reach the driver at: Spark's own (spark.driver.host)."""
    host = sc.getConf().get("spark.driver.host", None)
    return host or None


def _rank_env(base: Dict[str, str], rendezvous: Dict[str, str], start_timeout: float, nics) -> Dict[str, str]:
    env = dict(base)
    env.update(rendezvous)
    env["KOROVOD_START_TIMEOUT"] = str(start_timeout)
    if nics:
        env["KOROVOD_IFACE"] = sorted(nics)[0]
    return env


def _make_task(payload: bytes, envs: List[Dict[str, str]], relay: Optional[tuple], authkey: bytes,
               executable: Optional[str]):
    def task(_partition):
        from pyspark import BarrierTaskContext
        from korovod.spark._relay import task_emitter
        from korovod.spark._task import run_rank
        rank = BarrierTaskContext.get().partitionId()
        emit, close = task_emitter(relay, authkey)
        try:
            outcome = run_rank(rank, payload, envs[rank], emit, executable)
        finally:
            close()
        yield rank, outcome
    return task


def _first_failure(outcomes: Dict[int, Any]) -> Optional[int]:
    """The rank whose failure to report: the lowest that failed on its own, else the lowest."""
    failed = [r for r in sorted(outcomes) if outcomes[r][0] != "ok"]
    if not failed:
        return None
    primary = [r for r in failed if outcomes[r][0] != "error" or outcomes[r][2] not in _SECONDARY]
    return (primary or failed)[0]


def _decode(kind_record) -> tuple:
    """("ok", result) | ("error", exc or None, type name, message, traceback) | ("exit", code, tail)."""
    kind = kind_record[0]
    if kind == "exit":
        return kind_record
    record = pickle.loads(kind_record[1])
    if record[0] == "ok":
        return ("ok", record[1])
    return record + (kind_record[2],)


def outcome_error(kind_record, worker: str, stopped: bool) -> tuple:
    """A worker's end, from its task's outcome (RankProcess.wait), for the elastic driver:
    (exit code, fn's result or None, WorkerError or None). A killed process's code is 128 + the
    signal, as a shell's."""
    from korovod.common.elastic_job import WorkerError
    outcome = _decode(kind_record)
    if outcome[0] == "ok":
        return 0, outcome[1], None
    if outcome[0] == "exit":
        code, tail = outcome[1], outcome[2]
        how = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
        if stopped:
            how += " (stopped by the driver)"
        lines = "\n".join(tail[-20:])
        return (128 - code if code < 0 else code or 1), None, WorkerError(
            worker, f"worker {worker}: its process {how}" + (f"; its last output:\n{lines}" if lines else ""),
            stopped=stopped)
    _, exc, type_name, message, text = outcome[:5]
    if exc is not None:
        exc.__cause__ = RemoteTraceback(f"\nworker {worker}:\n{text}")
    return 1, None, WorkerError(worker, f"worker {worker} raised {type_name}: {message}", exc)


def _raise_for(rank: int, size: int, outcome) -> None:
    if outcome[0] == "exit":
        code, tail = outcome[1], outcome[2]
        how = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
        lines = "\n".join(tail[-20:])
        raise RankFailed(f"rank {rank} of {size}: its process {how} before fn returned"
                         + (f"; its last output:\n{lines}" if lines else ""), rank, code)
    _, exc, type_name, message, text = outcome[:5]
    cause = RemoteTraceback(f"\nrank {rank} of {size}:\n{text}")
    if exc is None:
        raise RankFailed(f"rank {rank} of {size} raised {type_name}: {message}", rank) from cause
    if hasattr(exc, "add_note"):
        exc.add_note(f"(raised by rank {rank} of {size} in korovod.spark.run)")
    raise exc from cause


def run(fn: Callable, args: Sequence = (), kwargs: Optional[Dict] = None, num_proc: Optional[int] = None,
        start_timeout: Optional[float] = None, use_mpi: Optional[bool] = None, use_gloo: Optional[bool] = None,
        extra_mpi_args: Optional[str] = None, env: Optional[Dict[str, str]] = None, stdout=None, stderr=None,
        verbose: int = 1, nics=None, prefix_output_with_timestamp: bool = False,
        executable: Optional[str] = None) -> List[Any]:
    """Runs ``fn(*args, **kwargs)`` on ``num_proc`` ranks, each a Spark task, and returns their
    results in rank order (Horovod's ``horovod.spark.run``).

    num_proc: the number of ranks; default ``spark.default.parallelism``. All must run at once
      (one barrier stage): the cluster needs that many free task slots.
    start_timeout: seconds for every rank to reach the rendezvous (KOROVOD_START_TIMEOUT in each
      rank); default $HOROVOD_SPARK_START_TIMEOUT, else 600. A rank that never comes fails the
      call naming it.
    use_mpi, use_gloo, extra_mpi_args: accepted for Horovod's signature; korovod's own TCP control
      and data planes serve every job here (no mpirun), whichever is asked.
    env: the ranks' whole environment (default: the executor's own); korovod adds the rendezvous.
    stdout, stderr: where each rank's lines go on the driver, prefixed ``[<rank>]<stdout>:``
      (default: the driver's own stdout and stderr); each task sends them to the driver.
      prefix_output_with_timestamp: each line starts with the time the driver got it.
    executable: the Python that runs each rank on the executors (default: the executor's own).
    verbose: 0 silent; 1 (default) logs the start (ranks, rendezvous address) and the end on the
      driver (the korovod.spark logger).
    nics: network interfaces for the ranks' sockets (the first in sorted order is used: KOROVOD_IFACE).

    A rank that raises fails the call with that exception, its traceback as the cause and a note
    naming the rank; when several fail, the one that failed on its own (not because a peer was
    lost) is reported. Nothing is left running: the Spark job is cancelled on any error.
    """
    kwargs = dict(kwargs or {})
    sc = _spark_context()
    if num_proc is None:
        num_proc = sc.defaultParallelism
    if num_proc < 1:
        raise ValueError(f"num_proc must be at least 1, not {num_proc}")
    if (use_mpi or extra_mpi_args) and verbose >= 1:
        _log.info("korovod.spark.run: no mpirun here; korovod's TCP control and data planes run the job")
    timeout = _start_timeout(start_timeout)
    payload = dumps((fn, tuple(args), kwargs))
    base_env = dict(os.environ) if env is None else dict(env)
    group = f"korovod.spark.run.{os.getpid()}.{next(_job_ids)}"
    with RendezvousServer(listen_host="0.0.0.0", address=_driver_address(sc)) as server:
        envs = [_rank_env(base_env, server.rank_env(r, num_proc), timeout, nics) for r in range(num_proc)]
        if verbose >= 1:
            _log.info("korovod.spark.run: %d ranks, rendezvous at %s:%d", num_proc, server.address, server.port)
        key = server.job_secret.encode()
        relay = OutputRelay(DriverStreams(stdout, stderr, timestamps=prefix_output_with_timestamp), key)
        try:
            outcomes = _run_stage(sc, group, num_proc,
                                  _make_task(payload, envs, (server.address, relay.port), key, executable))
        finally:
            relay.close()
    decoded = {rank: _decode(o) for rank, o in outcomes.items()}
    failed = _first_failure(decoded)
    if failed is not None:
        _raise_for(failed, num_proc, decoded[failed])
    if verbose >= 1:
        _log.info("korovod.spark.run: %d ranks done", num_proc)
    return [decoded[r][1] for r in range(num_proc)]


def _run_stage(sc, group: str, num_proc: int, task) -> Dict[int, Any]:
    """The barrier stage in a thread of its own, so that Ctrl-C on the driver cancels it."""
    result: List[Any] = []
    error: List[BaseException] = []

    def stage() -> None:
        try:
            sc.setJobGroup(group, "korovod.spark.run", interruptOnCancel=True)
            rdd = sc.parallelize(range(num_proc), num_proc).barrier().mapPartitions(task)
            result.append(dict(rdd.collect()))
        except BaseException as e:  # noqa: B902 -- re-raised on the driver's thread
            error.append(e)

    thread = threading.Thread(target=stage, name=group, daemon=True)
    thread.start()
    try:
        while thread.is_alive():
            thread.join(0.5)
    except BaseException:
        sc.cancelJobGroup(group)
        thread.join(30)
        raise
    if error:
        sc.cancelJobGroup(group)
        raise error[0]
    return result[0]
