"""korovod.spark.run_elastic: Horovod's ``horovod.spark.run_elastic`` on korovod.

The driver starts max_num_proc Spark tasks (one stage, not barrier: tasks may come and go). Each
task is a slot: it connects back to the driver (multiprocessing.connection, authenticated by the
job secret), says which host it runs on, and then runs the workers the driver asks of it, one at
a time, each as a process of its own (_task.RankProcess), sending their output lines and
reporting each one's end. The rounds
are korovodrun's elastic driver's (korovod.common.elastic_job): a host's slots are the tasks
connected from it, a worker lost (its process killed, its task lost) is survived in a new round,
and a slot whose task comes back (Spark retries a failed task) is used again.
"""

from __future__ import annotations

import itertools
import logging
import os
import signal
import socket
import threading
import time
from multiprocessing.connection import Client, Connection, Listener
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from korovod.common.elastic_job import ElasticJob, Limits, WorkerError, console, deprecated_limits
from korovod.common.rendezvous import RendezvousServer
from korovod.spark._pickle import dumps
from korovod.spark._relay import DriverStreams

_log = logging.getLogger("korovod.spark")
_job_ids = itertools.count()
_STOP_GRACE_SECONDS = 10.0


# -- the task side: one slot ---------------------------------------------------------------------

def serve_slot(address: Tuple[str, int], authkey: bytes, payload: bytes, partition: int, attempt: int) -> str:
    """Runs in a Spark task: serves the driver's start/stop requests until it says done."""
    from korovod.spark._task import RankProcess
    conn = Client(address, authkey=authkey)
    send_lock = threading.Lock()
    current: List[Any] = [None]

    def send(message) -> None:
        with send_lock:
            conn.send(message)

    def watch(rank: "RankProcess") -> None:
        outcome = rank.wait()
        try:
            send(("exit", outcome))
        except OSError:
            pass

    send(("hello", socket.gethostname(), partition, attempt))
    try:
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                return "driver gone"
            if message[0] == "start":
                _, label, env = message
                current[0] = RankProcess(label, payload, env, emit=lambda s, line: send(("line", s, line)))
                threading.Thread(target=watch, args=(current[0],), daemon=True).start()
            elif message[0] == "stop" and current[0] is not None:
                rank = current[0]
                rank.kill(signal.SIGTERM)
                timer = threading.Timer(_STOP_GRACE_SECONDS, rank.kill)
                timer.daemon = True
                timer.start()
            elif message[0] == "done":
                return "done"
    finally:
        if current[0] is not None:
            current[0].kill()
        conn.close()


def _make_slot_task(address: Tuple[str, int], authkey: bytes, payload: bytes):
    def task(_partition):
        from pyspark import TaskContext
        context = TaskContext.get()
        yield context.partitionId(), serve_slot(address, authkey, payload, context.partitionId(),
                                                context.attemptNumber())
    return task


# -- the driver side ------------------------------------------------------------------------------

class _Task:
    """A connected Spark task: its host, its connection, and the driver's slot it runs now."""

    def __init__(self, host: str, conn: Connection) -> None:
        self.host, self.conn = host, conn
        self.slot: Optional[int] = None
        self.stopped = False  # its worker was stopped by the driver


class _Slots:
    """The driver's Workers on Spark. A host's slots are its connected tasks; the driver's slot
    numbers are labels given to a task while it runs that slot's worker. A host counts
    max(tasks, highest slot in use + 1) slots, so that a worker keeps its slot when a task
    numbered below it is lost. A start with no idle task on the host waits (up to
    `pending_seconds`) for one to connect there: Spark retries a lost task; when none comes, that
    worker failed to start."""

    def __init__(self, listener: Listener, base_env: Dict[str, str], pending_seconds: float,
                 streams: DriverStreams) -> None:
        self._listener = listener
        self._streams = streams
        self._base_env = base_env
        self._pending_seconds = pending_seconds
        self._lock = threading.Lock()
        self._tasks: List[_Task] = []
        self._pending: Dict[Tuple[str, int], Tuple[Dict[str, str], float]] = {}
        self._order: List[str] = []  # hosts, in the order their first task connected
        self.job: Optional[ElasticJob] = None
        self._closed = threading.Event()
        threading.Thread(target=self._accept, name="korovod.spark slots", daemon=True).start()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                conn = self._listener.accept()
                _, host, partition, attempt = conn.recv()
            except (OSError, EOFError, ValueError) as e:
                if self._closed.is_set():
                    return
                _log.warning("korovod.spark.run_elastic: a task could not connect: %s", e)
                continue
            task = _Task(host, conn)
            with self._lock:
                self._tasks.append(task)
                if host not in self._order:
                    self._order.append(host)
                waiting = sorted(k for k in self._pending if k[0] == host)
                if waiting:
                    env, _ = self._pending.pop(waiting[0])
                    self._run(task, waiting[0][1], env)
            _log.debug("task %d (attempt %d) connected from %s", partition, attempt, host)
            threading.Thread(target=self._read, args=(task,), daemon=True).start()

    def _run(self, task: _Task, slot: int, env: Dict[str, str]) -> None:
        task.slot, task.stopped = slot, False
        task.conn.send(("start", f"{task.host}:{slot}", {**self._base_env, **env}))

    def _read(self, task: _Task) -> None:
        from korovod.spark.runner import outcome_error
        while True:
            try:
                message = task.conn.recv()
            except (EOFError, OSError):
                break
            if message[0] == "line":
                self._streams.write(message[1], message[2])
            elif message[0] == "exit":
                with self._lock:
                    slot, stopped = task.slot, task.stopped
                    task.slot = None
                if slot is not None:
                    code, result, error = outcome_error(message[1], f"{task.host}:{slot}", stopped)
                    self.job.exited(task.host, slot, code, result=result, error=error)
        with self._lock:
            if task in self._tasks:
                self._tasks.remove(task)
            slot, task.slot = task.slot, None
        if slot is not None and not self._closed.is_set():
            self.job.exited(task.host, slot, 1, error=WorkerError(
                f"{task.host}:{slot}", f"worker {task.host}:{slot}: its Spark task was lost (its executor or Python "
                                       "worker died)"))

    def discover(self) -> List[Tuple[str, int]]:
        now = time.monotonic()
        with self._lock:
            expired = [k for k, (_, deadline) in self._pending.items() if deadline <= now]
            for k in expired:
                del self._pending[k]
            counts: Dict[str, int] = {}
            for task in self._tasks:
                counts[task.host] = counts.get(task.host, 0) + 1
            for host in counts:
                in_use = [t.slot for t in self._tasks if t.host == host and t.slot is not None]
                in_use += [slot for (h, slot) in self._pending if h == host]
                counts[host] = max(counts[host], max(in_use, default=-1) + 1)
            hosts = [(h, counts[h]) for h in self._order if h in counts]
        for host, slot in expired:
            self.job.exited(host, slot, 1, error=WorkerError(
                f"{host}:{slot}",
                f"worker {host}:{slot}: no Spark task came to run it within {self._pending_seconds:.0f} s"))
        return hosts

    def start(self, host: str, slot: int, env: Dict[str, str]) -> None:
        with self._lock:
            idle = next((t for t in self._tasks if t.host == host and t.slot is None), None)
            if idle is None:
                self._pending[(host, slot)] = (env, time.monotonic() + self._pending_seconds)
                return
            self._run(idle, slot, env)

    def stop(self, host: str, slot: int) -> None:
        with self._lock:
            if self._pending.pop((host, slot), None) is not None:
                self.job.exited(host, slot, 1, error=WorkerError(f"{host}:{slot}", f"worker {host}:{slot} was stopped "
                                                                                   "before a task ran it"))
                return
            task = next((t for t in self._tasks if t.host == host and t.slot == slot), None)
            if task is None:
                return
            task.stopped = True
        task.conn.send(("stop",))

    def close(self) -> None:
        """Tells every task it is done (their Spark tasks then end) and stops accepting."""
        self._closed.set()
        with self._lock:
            tasks = list(self._tasks)
        for task in tasks:
            try:
                task.conn.send(("done",))
            except OSError:
                pass
        self._listener.close()


def run_elastic(fn: Callable, args: Sequence = (), kwargs: Optional[Dict] = None, num_proc: Optional[int] = None,
                min_num_proc: Optional[int] = None, max_num_proc: Optional[int] = None,
                start_timeout: Optional[float] = None, elastic_timeout: Optional[float] = None,
                reset_limit: Optional[int] = None, env: Optional[Dict[str, str]] = None, stdout=None, stderr=None,
                verbose: int = 1, nics=None, prefix_output_with_timestamp: bool = False,
                min_np: Optional[int] = None, max_np: Optional[int] = None) -> List[Any]:
    """Runs ``fn(*args, **kwargs)`` as an elastic job on Spark tasks and returns the results of
    the last round's workers in rank order (Horovod's ``horovod.spark.run_elastic``).

    num_proc: workers to start with (default ``spark.default.parallelism``); min_num_proc
      (default num_proc): training goes on while at least that many remain; max_num_proc (default
      num_proc): the Spark tasks started, each a slot for one worker at a time.
    start_timeout: seconds for each worker to meet the others once it called hvd.init()
      (KOROVOD_START_TIMEOUT); default $HOROVOD_SPARK_START_TIMEOUT, else 600.
    elastic_timeout: seconds to wait for enough slots (default $HOROVOD_ELASTIC_TIMEOUT, else
      600). reset_limit: most new rounds before the job fails.
    env, nics, verbose: as ``korovod.spark.run``. stdout, stderr: where each worker's lines go on
      the driver, prefixed ``[<host>:<slot>]<stdout>:`` (default: the driver's own stdout and
      stderr); prefix_output_with_timestamp: each line starts with the time the driver got it.
      min_np, max_np: Horovod's deprecated names.

    ``fn`` must train under ``hvd.elastic.run``: a worker lost mid-training (its process killed,
    its task lost) sends the others back to their last commit, and training goes on in a new
    round, with a new worker in the slot when one is free. The job fails (RuntimeError, with the
    last worker failure as its cause) when fewer than min_num_proc workers remain for
    elastic_timeout, when reset_limit is exceeded, or when every worker fails. Nothing is left
    running: the Spark job is cancelled if it has not ended.
    """
    from korovod.spark.runner import _driver_address, _spark_context, _start_timeout
    min_num_proc, max_num_proc = deprecated_limits(min_num_proc, max_num_proc, min_np, max_np)
    kwargs = dict(kwargs or {})
    sc = _spark_context()
    if num_proc is None:
        num_proc = sc.defaultParallelism
    min_num_proc = num_proc if min_num_proc is None else min_num_proc
    max_num_proc = num_proc if max_num_proc is None else max_num_proc
    if elastic_timeout is None:
        elastic_timeout = float(os.environ.get("HOROVOD_ELASTIC_TIMEOUT", "600"))
    limits = Limits(start_np=num_proc, min_np=min_num_proc, max_np=max_num_proc, reset_limit=reset_limit,
                    elastic_timeout=float(elastic_timeout), verbose=verbose >= 2)
    timeout = _start_timeout(start_timeout)
    payload = dumps((fn, tuple(args), kwargs))
    base_env = dict(os.environ) if env is None else dict(env)
    base_env["KOROVOD_START_TIMEOUT"] = str(timeout)
    if nics:
        base_env["KOROVOD_IFACE"] = sorted(nics)[0]
    group = f"korovod.spark.run_elastic.{os.getpid()}.{next(_job_ids)}"
    with RendezvousServer(listen_host="0.0.0.0", address=_driver_address(sc)) as server:
        listener = Listener(("0.0.0.0", 0), authkey=server.job_secret.encode())
        slots = _Slots(listener, base_env, pending_seconds=min(float(elastic_timeout), 60.0),
                       streams=DriverStreams(stdout, stderr, timestamps=prefix_output_with_timestamp))
        job = ElasticJob(server, slots, limits, console("korovod.spark", verbose))
        slots.job = job
        address = (server.address, listener.address[1])
        if verbose >= 1:
            _log.info("korovod.spark.run_elastic: %d..%d workers (%d to start), rendezvous at %s:%d", min_num_proc,
                      max_num_proc, num_proc, server.address, server.port)
        stage = _Stage(sc, group, max_num_proc, _make_slot_task(address, server.job_secret.encode(), payload), job)
        try:
            outcome = job.run()
        except BaseException:
            slots.close()
            stage.finish(cancel=True)
            raise
        slots.close()
        stage.finish(cancel=outcome.exit_code != 0)
    outcome.raise_if_failed("korovod.spark.run_elastic")
    if verbose >= 1:
        _log.info("korovod.spark.run_elastic: done, %d workers in the last round", len(outcome.results))
    return outcome.results_in_rank_order()


class _Stage:
    """The slots' Spark job, in a thread of its own; its failure aborts the elastic job."""

    def __init__(self, sc, group: str, tasks: int, task, job: ElasticJob) -> None:
        self._sc, self._group, self._job = sc, group, job
        self._thread = threading.Thread(target=self._run, args=(tasks, task), name=group, daemon=True)
        self._thread.start()

    def _run(self, tasks: int, task) -> None:
        try:
            self._sc.setJobGroup(self._group, "korovod.spark.run_elastic", interruptOnCancel=True)
            self._sc.parallelize(range(tasks), tasks).mapPartitions(task).collect()
        except BaseException as e:  # noqa: B902 -- reported to the driver's loop
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            self._job.abort(f"the Spark job of the slots failed: {first}")

    def finish(self, cancel: bool) -> None:
        """Waits for the tasks to end (they were told so), cancelling the job if they do not."""
        if not cancel:
            self._thread.join(30)
        if self._thread.is_alive():
            self._sc.cancelJobGroup(self._group)
            self._thread.join(30)
