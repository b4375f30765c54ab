"""An elastic job driven from this process, for runners that start the workers their own way
(korovod.spark.run_elastic: Spark tasks; korovod.ray's elastic RayExecutor: Ray actors).

The rounds are korovodrun's: its elastic driver (C ABI ``korovod_elastic_driver_*``,
docs/elastic.md) decides who is in each round and with which rank, publishes the rounds in the
job's store -- a RendezvousServer hosted here -- and says which workers to start and stop. The
runner (``Workers``) says which hosts have how many slots, starts a worker on a slot with the
environment ``worker_env`` gives, stops one, and reports every worker's end to ``exited``. Each
worker runs the user's function, which calls ``hvd.init()`` and trains under ``hvd.elastic.run``
as under korovodrun.
"""

from __future__ import annotations

import ctypes
import queue
import sys
import threading
import time
from ctypes import c_int, c_void_p
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Protocol, Sequence, Set, Tuple

from korovod.common import _lib, settings
from korovod.common.rendezvous import RendezvousServer

class Workers(Protocol):
    """How a runner places and runs workers."""

    def discover(self) -> Sequence[Tuple[str, int]]:
        """The hosts that can run workers now and their slots, in a stable order."""

    def start(self, host: str, slot: int, env: Dict[str, str]) -> None:
        """Starts the worker of host:slot with `env`; raises when it cannot. Its end is reported
        to ElasticJob.exited (from any thread)."""

    def stop(self, host: str, slot: int) -> None:
        """Ends the worker of host:slot (its end is still reported)."""


@dataclass
class Limits:
    """The job's elastic limits, as horovodrun's flags."""

    start_np: int
    min_np: int
    max_np: Optional[int] = None
    reset_limit: Optional[int] = None
    elastic_timeout: float = 600.0
    cooldown_range: Optional[Tuple[int, int]] = None
    blacklist_after_failures: int = 3
    discovery_interval: float = 1.0
    verbose: bool = False
    # The runner's names of the limits, for the driver's messages.
    names: Tuple[str, str, str, str] = ("elastic_timeout", "num_proc", "min_num_proc", "reset_limit")


@dataclass
class WorkerError:
    """How a worker that failed ended: its exception (None when it could not be brought back) and
    a description ("rank 1 on host h ...")."""

    worker: str
    description: str
    exception: Optional[BaseException] = None
    stopped: bool = False  # the driver stopped it: not a failure of its own


@dataclass
class Outcome:
    """The job's end: exit_code 0 when training finished; results by the rank each finishing
    worker held in the last round; the last worker failure seen (for the error's cause)."""

    exit_code: int
    message: str
    results: Dict[int, Any] = field(default_factory=dict)
    last_error: Optional[WorkerError] = None

    def results_in_rank_order(self) -> List[Any]:
        return [self.results[r] for r in sorted(self.results)]

    def raise_if_failed(self, runner: str) -> None:
        """RuntimeError("<runner>: the elastic job failed: <why> (the last worker to fail: ...)")
        from the last failing worker's exception, when the job failed."""
        if self.exit_code == 0:
            return
        cause = self.last_error.exception if self.last_error else None
        last = f" (the last worker to fail: {self.last_error.description})" if self.last_error else ""
        raise RuntimeError(f"{runner}: the elastic job failed: {self.message}{last}") from cause


def deprecated_limits(min_num_proc: Optional[int], max_num_proc: Optional[int], min_np: Optional[int],
                      max_np: Optional[int]) -> Tuple[Optional[int], Optional[int]]:
    """Horovod's deprecated min_np/max_np, when given, in place of min_num_proc/max_num_proc (with
    Horovod's DeprecationWarning)."""
    import warnings
    if min_np is not None:
        min_num_proc = min_np
        warnings.warn("min_np is deprecated, use min_num_proc instead", DeprecationWarning, stacklevel=3)
    if max_np is not None:
        max_num_proc = max_np
        warnings.warn("max_np is deprecated, use max_num_proc instead", DeprecationWarning, stacklevel=3)
    return min_num_proc, max_num_proc


class ElasticJob:
    """One elastic job: ``run()`` drives it to its end on the calling thread."""

    def __init__(self, server: RendezvousServer, workers: Workers, limits: Limits,
                 say: Callable[[str], None], extra_env: Optional[Dict[str, str]] = None) -> None:
        if server.port < 0:
            raise RuntimeError("ElasticJob needs a started RendezvousServer")
        if limits.min_np < 1:
            raise ValueError(f"the minimum number of workers must be at least 1, not {limits.min_np}")
        if limits.start_np < limits.min_np:
            raise ValueError(f"the number of workers to start with ({limits.start_np}) is below the minimum "
                             f"({limits.min_np})")
        if limits.max_np is not None and limits.max_np < limits.start_np:
            raise ValueError(f"the maximum number of workers ({limits.max_np}) is below the number to start with "
                             f"({limits.start_np})")
        self._server = server
        self._workers = workers
        self._limits = limits
        self._say = say
        self._extra_env = dict(extra_env or {})
        self._events: "queue.Queue[tuple]" = queue.Queue()
        self._running: Set[Tuple[str, int]] = set()
        self._results: Dict[int, Any] = {}
        self._last_error: Optional[WorkerError] = None
        self._aborted: Optional[str] = None
        self._lock = threading.Lock()

    def worker_env(self, host: str, slot: int) -> Dict[str, str]:
        """What worker host:slot needs to join the driver's rounds at hvd.init()."""
        timeout = str(int(max(1, round(self._limits.elastic_timeout))))
        env = dict(self._extra_env)
        env.update({
            "KOROVOD_ELASTIC": "1", "HOROVOD_ELASTIC": "1",
            "KOROVOD_ELASTIC_WORKER_ID": f"{host}:{slot}",
            "KOROVOD_HOSTNAME": host, "HOROVOD_HOSTNAME": host, "KOROVOD_HOST_ID": host,
            "KOROVOD_RENDEZVOUS_ADDR": self._server.address,
            "KOROVOD_RENDEZVOUS_PORT": str(self._server.port),
            "KOROVOD_RENDEZVOUS_SERVER": "external",
            "KOROVOD_ELASTIC_TIMEOUT": timeout, "HOROVOD_ELASTIC_TIMEOUT": timeout,
            "KOROVOD_JOB_SECRET": self._server.job_secret,
            "PYTHONUNBUFFERED": "1",
        })
        return env

    def exited(self, host: str, slot: int, exit_code: int, result: Any = None,
               error: Optional[WorkerError] = None) -> None:
        """Worker host:slot ended: exit_code 0 with its function's result, else its error.
        Thread-safe."""
        self._events.put((host, slot, int(exit_code), result, error))

    def abort(self, reason: str) -> None:
        """Ends the job as failed with `reason` (the runner's own failure: its engine lost the
        job). Thread-safe."""
        self._events.put(("abort", reason))

    # -- the driver's world, called back from inside korovod_elastic_driver_* on run()'s thread --

    def _discover(self, _context, buf, size) -> int:
        try:
            hosts = self._workers.discover()
            text = "".join(f"{host}:{int(slots)}\n" for host, slots in hosts if int(slots) > 0)
            code = 0
        except BaseException as e:  # noqa: B902 -- a callback must not raise into C
            text, code = f"{type(e).__name__}: {e}", 1
        data = text.encode()[: size - 1] + b"\0"
        ctypes.memmove(buf, data, len(data))
        return code

    def _start(self, _context, host, slot, error_text, error_len) -> int:
        name = host.decode()
        with self._lock:
            self._running.add((name, slot))
        try:
            self._workers.start(name, slot, self.worker_env(name, slot))
            return 0
        except BaseException as e:  # noqa: B902
            with self._lock:
                self._running.discard((name, slot))
            data = f"{type(e).__name__}: {e}".encode()[: error_len - 1] + b"\0"
            ctypes.memmove(error_text, data, len(data))
            return 1

    def _stop(self, _context, host, slot) -> None:
        try:
            self._workers.stop(host.decode(), slot)
        except BaseException as e:  # noqa: B902
            self._say(f"could not stop worker {host.decode()}:{slot}: {type(e).__name__}: {e}")

    def _say_line(self, _context, line) -> None:
        try:
            self._say(_lib.decode(line))
        except BaseException:  # noqa: B902
            pass

    # -- the loop --

    def run(self, stop_grace: float = 30.0) -> Outcome:
        """Drives the job until it ends, then stops every worker still running (waiting up to
        stop_grace seconds for their ends). Returns the outcome; raises only for a job that could
        not start (no store, bad limits: ValueError/RuntimeError)."""
        lib = _lib.load(settings.current().library)
        if not hasattr(lib, "korovod_elastic_driver_new"):
            raise ImportError(f"{getattr(lib, '_name', 'libkorovod')} has no korovod_elastic_driver_new: it is "
                              "older than this korovod Python package")
        callbacks = (_lib.ELASTIC_DISCOVER_FN(self._discover), _lib.ELASTIC_START_FN(self._start),
                     _lib.ELASTIC_STOP_FN(self._stop), _lib.ELASTIC_SAY_FN(self._say_line))
        world = _lib.ElasticWorld(None, *callbacks)
        lim = self._limits
        cooldown = tuple(lim.cooldown_range) if lim.cooldown_range else (0, 0)
        reset_limit = -1 if lim.reset_limit is None else lim.reset_limit
        options = _lib.ElasticOptions(lim.start_np, lim.min_np, lim.max_np or 0, reset_limit,
                           lim.blacklist_after_failures, int(cooldown[0]), int(cooldown[1]),
                           float(lim.elastic_timeout), float(lim.discovery_interval), int(lim.verbose),
                           *(name.encode() for name in lim.names))
        handle = c_void_p()
        err = _lib.error_buffer()
        address = "127.0.0.1" if self._server.listen_host in ("0.0.0.0", "127.0.0.1") else self._server.listen_host
        code = lib.korovod_elastic_driver_new(ctypes.byref(handle), ctypes.byref(options), ctypes.byref(world),
                                              address.encode(), self._server.port,
                                              self._server.job_secret.encode(), err, len(err))
        if code != _lib.OK:
            text = _lib.decode(err.value)
            raise (ValueError(text) if code == _lib.ERR_INVALID_ARGUMENT else RuntimeError(text))
        driver = handle.value
        try:
            while True:
                delay = lib.korovod_elastic_driver_tick(driver)
                exit_code = c_int(0)
                message = _lib.error_buffer()
                if lib.korovod_elastic_driver_outcome(driver, ctypes.byref(exit_code), message, len(message)) == 1:
                    break
                self._take_events(lib, driver, timeout=min(max(delay, 0.0), 0.5))
                if self._aborted is not None:
                    self._say(self._aborted)
                    exit_code, message = c_int(1), ctypes.create_string_buffer(self._aborted.encode())
                    break
            with self._lock:
                still = sorted(self._running)
            for host, slot in still:
                self._stop(None, host.encode(), slot)
            deadline = time.monotonic() + stop_grace
            while time.monotonic() < deadline:
                with self._lock:
                    if not self._running:
                        break
                self._take_events(lib, driver, timeout=0.2)
            return Outcome(exit_code.value, _lib.decode(message.value), dict(self._results), self._last_error)
        finally:
            lib.korovod_elastic_driver_free(driver)
            del callbacks, world

    def _take_events(self, lib, driver, timeout: float) -> None:
        try:
            event = self._events.get(timeout=timeout)
        except queue.Empty:
            return
        while True:
            if event[0] == "abort":
                self._aborted = event[1]
                return
            host, slot, code, result, error = event
            with self._lock:
                self._running.discard((host, slot))
            rank = lib.korovod_elastic_driver_rank_of(driver, host.encode(), slot)
            if code == 0 and rank >= 0:
                self._results[rank] = result
            elif code != 0 and error is not None and (not error.stopped or self._last_error is None):
                self._last_error = error
            lib.korovod_elastic_driver_worker_exited(driver, host.encode(), slot, code)
            try:
                event = self._events.get_nowait()
            except queue.Empty:
                return


def console(prefix: str, verbose: int) -> Callable[[str], None]:
    """The driver's lines on stderr, "<prefix>: <line>" (nothing when verbose is 0)."""
    def say(line: str) -> None:
        if verbose:
            print(f"{prefix}: {line}", file=sys.stderr, flush=True)
    return say
