"""Training progress as one line on rank 0's stdout, for the operator to put into MPIJob.status.

A line is `korovod-progress ` and one compact JSON object (docs/progress.md has the keys):

    korovod-progress {"step":120,"total_steps":540,"steps_per_second":9.8,"loss":0.41,...}

Steps are counted by the bindings without the script asking (DistributedOptimizer.step(),
DistributedGradientTape.gradient(), the Keras optimizer and callbacks) or given by
hvd.report_progress(). Only global rank 0 prints: the first line at the first step, then at most
one per interval (KOROVOD_PROGRESS_INTERVAL_SECONDS), from the counting calls themselves (no
thread), and a final line when training ends (Keras' on_train_end, hvd.shutdown(), exit).

On other ranks, and with lines off, every entry point costs the check of ``active``. On rank 0 a
counted step costs a clock read and a comparison unless a line is due; steps taken inside
TensorFlow graphs are counted there and handed over when a line is due (``deferred``,
korovod/tensorflow/_progress.py). The reporter decides which it is on first use after
hvd.init() (and again after each init, as ranks may change in an elastic job), so it can be
made, as _state.py makes it, before there is a runtime.
"""

from __future__ import annotations

import json
import math
import sys
import threading
import time
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

PREFIX = "korovod-progress "

# What counted the steps ("source" in a line).
OPTIMIZER = "optimizer"
KERAS = "keras"
TAPE = "tape"
REPORT = "report_progress"


def _stdout_line(line: str) -> None:
    stream = sys.stdout  # looked up per line: pytest and scripts may replace it
    stream.write(line + "\n")
    stream.flush()


def _rounded(value: float) -> float:
    return float(f"{value:.6g}")


def _rfc3339(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def _scalar(name: str, value: Any) -> Any:
    """A Python number from a number, a numpy scalar or a one-element tensor (torch: .item(),
    TensorFlow: .numpy()); TypeError naming the argument for anything else."""
    if isinstance(value, bool):
        raise TypeError(f"report_progress: {name} must be a number or a one-element tensor, not a bool")
    if isinstance(value, (int, float)):
        return value
    try:
        if hasattr(value, "item"):  # numpy scalars and arrays, torch tensors
            value = value.item()
        elif hasattr(value, "numpy"):  # TensorFlow eager tensors
            value = value.numpy()
            value = value.item() if hasattr(value, "item") else value
        else:
            raise TypeError()
    except Exception as error:  # a symbolic tensor, a tensor of several elements, ...
        raise TypeError(f"report_progress: {name} must be a number or a one-element (eager) tensor, not "
                        f"{type(value).__name__}") from error
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"report_progress: {name} must be a number, not {type(value).__name__}")
    return value


def _integer(name: str, value: Any, minimum: int) -> int:
    number = _scalar(name, value)
    if not isinstance(number, int):
        raise TypeError(f"report_progress: {name} must be an integer, not {number!r}")
    if number < minimum:
        raise ValueError(f"report_progress: {name} must be >= {minimum}, not {number}")
    return number


def _finite_or_none(value: Optional[float]) -> Optional[float]:
    if value is None or not math.isfinite(value):
        return None
    return float(value)


class ProgressReporter:
    """This process's progress lines. ``active`` is False once the first use after an init found
    this is not rank 0 or lines are off; until then it is True, so that the first call decides.

    topology() gives (rank, size), or None before hvd.init(); interval() the seconds between
    lines (<= 0: none); clock() monotonic seconds; wall_clock() seconds since the epoch; write()
    takes one line; at_exit() registers the final line for the end of the process."""

    def __init__(self, topology: Callable[[], Optional[Tuple[int, int]]], interval: Callable[[], float],
                 clock: Callable[[], float] = time.monotonic, wall_clock: Callable[[], float] = time.time,
                 write: Callable[[str], None] = _stdout_line, at_exit: Optional[Callable[[Callable], Any]] = None):
        self._topology = topology
        self._interval_source = interval
        self._clock = clock
        self._wall_clock = wall_clock
        self._write = write
        self._at_exit = at_exit
        self._lock = threading.Lock()  # lines and Keras' batch ends (which may run on a pool thread)
        self.active = True
        self._resolved = False
        self._printing = False  # decided: rank 0 with lines on
        self._exit_registered = False
        self._interval = 0.0
        self._world_size = 1
        # What the lines say.
        self._owner: Optional[str] = None  # the source whose steps count; REPORT once step= was given
        self._step: Optional[int] = None
        self._total: Optional[int] = None
        self._loss: Optional[float] = None
        self._batch_size: Optional[int] = None
        self._metrics: Dict[str, Optional[float]] = {}
        self._explicit = set()  # keys report_progress gave: automatic values do not replace them
        self._fit_logs: Optional[Mapping[str, Any]] = None  # the last Keras batch's logs
        self._fit_feeder: Optional[object] = None  # the Keras callback that feeds this fit
        self._fit_fed = False  # the feeder has fed a batch
        self._fit_step = 0  # the fit's last step fed
        # Counters of steps taken where no Python runs (TensorFlow graphs), by source: each has a
        # sync() that hands this reporter the steps it has not seen (add_steps).
        self.deferred: Dict[str, Any] = {}
        # Timing, on clock().
        self._start: Optional[float] = None  # the first update
        self._first_step: Optional[int] = None  # the first step and its time (the first rate)
        self._first_step_at: Optional[float] = None
        self._last_step_at: Optional[float] = None
        self._due = -math.inf  # the next line is due at this time
        self._dirty = False  # something changed since the last line
        self._line_step: Optional[int] = None  # step and step time at the last line (rates)
        self._line_step_at: Optional[float] = None

    # ---------------------------------------------------------------- deciding

    def enabled(self) -> bool:
        """Whether this process prints lines; decides on the first call after hvd.init()."""
        return self.active and (self._resolved or self._resolve())

    def _resolve(self) -> bool:
        topology = self._topology()
        if topology is None:
            return False  # before hvd.init(): nothing to report yet, and no rank to decide by
        rank, size = topology
        interval = float(self._interval_source())
        self._resolved = True
        self._interval = interval
        self._world_size = size
        self.active = self._printing = rank == 0 and interval > 0
        if self.active and not self._exit_registered and self._at_exit is not None:
            self._at_exit(self.finish)
            self._exit_registered = True
        return self.active

    def runtime_changed(self, runtime: Optional[int]) -> None:
        """A listener of the runtime holder (_state.py): called after each init with the runtime
        and before each shutdown with None. Shutdown ends training as far as the script said, so
        it writes the final line; either way the next use decides again (ranks may have moved)."""
        if runtime is None:
            self.finish()
        self._resolved = self._printing = False
        self.active = True

    # ---------------------------------------------------------------- counting

    def count(self, source: str) -> None:
        """One step counted by `source` (OPTIMIZER, TAPE). Steps of another source than the one
        that counted first, of any while a Keras fit feeds steps, and of every source once
        report_progress(step=) was called, are not counted: a step is never counted twice."""
        if not self._printing and not self.enabled():
            return
        if self._owner != source and not self._claim(source):
            return
        now = self._clock()
        step = self._step
        if step is None:
            self._set_step(1, now)
        else:
            self._step = step + 1
            self._last_step_at = now
        self._dirty = True
        if now >= self._due:
            self._line_due(now)

    def add_steps(self, source: str, steps: int, last_step_wall_time: float) -> None:
        """`steps` more steps by `source`, the last at a time.time() (a deferred counter's sync);
        the caller then calls write_if_due(). The same rules as count()."""
        if steps <= 0 or (not self._printing and not self.enabled()):
            return
        if self._owner != source and not self._claim(source):
            return
        now = self._clock()
        at = now - max(0.0, self._wall_clock() - last_step_wall_time)
        with self._lock:
            self._set_step(steps + (self._step or 0), at)
            self._dirty = True

    def _claim(self, source: str) -> bool:
        """Whether steps of `source` count, making it the counting source when there is none.
        Steps a deferred counter holds were taken first: they get to claim before `source`."""
        if self._owner is None:
            for name, counter in list(self.deferred.items()):
                if name != source:
                    counter.sync()
        if self._owner is None:
            self._owner = source
        return self._owner == source

    def next_line_wall_time(self) -> float:
        """When a deferred counter should sync next, as a time.time(): when the next line is due,
        or an interval from now when that has passed with nothing to say (its steps do not
        count); infinity when this process writes no lines."""
        if not self._printing:
            return math.inf
        now = self._clock()
        return self._wall_clock() + (self._due - now if self._due > now else self._interval)

    def write_if_due(self) -> None:
        now = self._clock()
        if self._printing and now >= self._due:
            self._line_due(now)

    def _set_step(self, step: int, now: float) -> None:
        if self._first_step is None:
            self._first_step, self._first_step_at = step, now
        self._step = step
        self._last_step_at = now

    def report(self, step: Any = None, total_steps: Any = None, loss: Any = None, batch_size: Any = None,
               metrics: Optional[Mapping[str, Any]] = None) -> None:
        """hvd.report_progress: values given here win over counted ones from now on."""
        if not self._printing and not self.enabled():
            return
        step_value = None if step is None else _integer("step", step, 0)
        total_value = None if total_steps is None else _integer("total_steps", total_steps, 0)
        loss_value = None if loss is None else _scalar("loss", loss)
        batch_value = None if batch_size is None else _integer("batch_size", batch_size, 1)
        metric_values = {}
        for name, value in (metrics or {}).items():
            metric_values[name] = _scalar(name, value)
        now = self._clock()
        with self._lock:
            if step_value is not None:
                self._owner = REPORT
                self._set_step(step_value, now)
            if total_value is not None:
                self._total = total_value
                self._explicit.add("total_steps")
            if loss_value is not None:
                self._loss = loss_value
                self._explicit.add("loss")
            if batch_value is not None:
                self._batch_size = batch_value
            self._metrics.update(metric_values)
            self._dirty = True
        if now >= self._due:
            self._line_due(now)

    # ---------------------------------------------------------------- Keras fit

    def fit_begin(self, feeder: object, total_steps: Optional[int]) -> bool:
        """A korovod Keras callback's on_train_begin. The first of a fit's callbacks to ask feeds
        the fit's steps (True); the others get False. A feeder of an earlier fit that never ended
        (an exception skips on_train_end) is replaced by the first callback of the next fit."""
        if not self._printing and not self.enabled():
            return False
        for counter in list(self.deferred.values()):
            counter.sync()  # steps taken before the fit count as before
        with self._lock:
            current = self._fit_feeder
            if current is not None and current is not feeder and not self._fit_fed:
                return False
            self._fit_feeder = feeder
            self._fit_fed = False
            if self._owner != REPORT:
                self._owner = KERAS
            if total_steps is not None and "total_steps" not in self._explicit:
                self._total = total_steps
        return True

    def fit_batch(self, step: int, logs: Optional[Mapping[str, Any]]) -> None:
        """The feeder's on_train_batch_end: fit's step count and the batch's logs (loss, metrics)."""
        if not self._printing:
            return  # the runtime changed during the fit, and this is not rank 0 any more
        now = self._clock()
        with self._lock:
            # Batch ends may run on Keras' pool threads, out of order: only a later batch counts.
            if self._fit_fed and step <= self._fit_step:
                return
            self._fit_step = step
            if self._owner == KERAS:
                self._set_step(step, now)
            self._fit_fed = True
            self._fit_logs = logs
            self._dirty = True
        if now >= self._due:
            self._line_due(now)

    def fit_end(self, feeder: object) -> None:
        """The feeder's on_train_end: the final line; then steps are counted as before the fit, and
        the fit's total steps no longer apply."""
        if self._fit_feeder is not feeder:
            return
        self.finish()
        with self._lock:
            self._fit_feeder = None
            self._fit_logs = None
            if "total_steps" not in self._explicit:
                self._total = None  # the fit's
            if self._owner == KERAS:
                self._owner = None

    # ---------------------------------------------------------------- lines

    def finish(self) -> None:
        """The final line: written when anything changed since the last line."""
        if self._printing:
            self._line_due(self._clock(), final=True)

    def _line_due(self, now: float, final: bool = False) -> None:
        for counter in list(self.deferred.values()):
            counter.sync()
        with self._lock:
            if not self._dirty or (not final and now < self._due):
                return  # nothing new, or another thread wrote it
            if self._start is None:
                self._start = now
            line = self._line(now)
            self._due = now + self._interval
            self._dirty = False
            self._line_step, self._line_step_at = self._step, self._last_step_at
            self._write(PREFIX + json.dumps(line, separators=(",", ":"), allow_nan=False))

    def _line(self, now: float) -> Dict[str, Any]:
        line: Dict[str, Any] = {}
        step, total = self._step, self._total
        if step is not None:
            line["step"] = step
        if total is not None:
            line["total_steps"] = total
        rate = self._steps_per_second()
        if rate is not None:
            line["steps_per_second"] = _rounded(rate)
            if self._batch_size is not None:
                line["samples_per_second"] = _rounded(rate * self._batch_size * self._world_size)
        loss, metrics = self._loss_and_metrics()
        if loss is not None:
            line["loss"] = _finite_or_none(loss)
        if metrics:
            line["metrics"] = {name: _finite_or_none(value) for name, value in metrics.items()}
        since = self._start if self._first_step_at is None else self._first_step_at
        line["elapsed_seconds"] = _rounded(max(0.0, now - since))
        if self._last_step_at is not None:
            line["last_step_time"] = _rfc3339(self._wall_clock() - (now - self._last_step_at))
        if rate and step is not None and total is not None:
            line["eta_seconds"] = _rounded(max(0, total - step) / rate)
        if self._owner is not None:
            line["source"] = self._owner
        return line

    def _steps_per_second(self) -> Optional[float]:
        """Over the steps since the last line (since the first step when that line had none), by
        the steps' own times: a final line written long after the last step still gives the
        rate of training."""
        since, since_at = self._line_step, self._line_step_at
        if since is None or since_at is None:
            since, since_at = self._first_step, self._first_step_at
        if since is None or since_at is None or self._step is None or self._last_step_at is None:
            return None
        steps = self._step - since
        seconds = self._last_step_at - since_at
        if steps <= 0 or seconds <= 0:
            return None
        return steps / seconds

    def _loss_and_metrics(self) -> Tuple[Optional[float], Dict[str, Optional[float]]]:
        loss = self._loss
        metrics: Dict[str, Optional[float]] = {}
        logs = self._fit_logs
        if logs:
            for name, value in logs.items():
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    continue  # Keras' logs hold Python floats; anything else is not a metric
                if name == "loss":
                    if "loss" not in self._explicit:
                        loss = value
                else:
                    metrics[name] = value
        metrics.update(self._metrics)
        return loss, metrics
