"""Counting a training step for rank 0's progress lines (korovod/common/progress.py) from code that
may run eagerly or be traced into a graph: DistributedGradientTape.gradient() and, on Keras'
tensorflow backend, DistributedOptimizer.apply().

Eagerly the step is counted then and there. In a tf.function the traced code runs once, so the
graph counts each call itself (GraphSteps): it adds one to a variable, notes tf.timestamp() and
calls into Python (a tf.py_function) only when a line is due, so a step costs a few small ops
rather than a Python call (a tf.py_function per step cost 50-100 us on the 2-core test machine).
This is on rank 0 only, with progress lines on (decided at trace time), and never under XLA,
which cannot compile the call into Python (a step of an XLA-compiled function is not counted; a
Keras fit still counts through korovod's callbacks).
"""

from __future__ import annotations

import threading

import tensorflow as tf
from tensorflow.python.ops.resource_variable_ops import ResourceVariable

from korovod.common._state import state
from korovod.common.progress import ProgressReporter


class GraphSteps:
    """The steps `source` takes in TensorFlow graphs, kept in variables those graphs update; the
    reporter keeps one per source (reporter.deferred) and syncs it before each line."""

    def __init__(self, source: str, reporter: ProgressReporter):
        self._source = source
        self._reporter = reporter
        self._lock = threading.Lock()
        self._synced = 0  # the count the reporter has
        # Made eagerly, outside the function being traced, and as ResourceVariable itself: a
        # tf.Variable made while tracing a function's second signature is refused by tf.function.
        with tf.init_scope(), tf.device("/CPU:0"):
            self._count = ResourceVariable(0, dtype=tf.int64, trainable=False, name=f"korovod_{source}_steps")
            self._last = ResourceVariable(0.0, dtype=tf.float64, trainable=False, name=f"korovod_{source}_last")
            self._due = ResourceVariable(float("-inf"), dtype=tf.float64, trainable=False,
                                         name=f"korovod_{source}_due")

    def add_to_graph(self) -> None:
        """The ops that count one step each time the graph being traced runs."""
        count = self._count.assign_add(1)
        now = tf.timestamp()
        self._last.assign(now)

        def call_python():
            tf.py_function(self._line_due, [count, now], [], name="korovod_progress_line")
            return tf.constant(True)

        tf.cond(now >= self._due, call_python, lambda: tf.constant(False), name="korovod_progress_step")

    def _line_due(self, count: tf.Tensor, now: tf.Tensor) -> None:
        self._hand_over(int(count), float(now))
        self._reporter.write_if_due()
        self._due.assign(self._reporter.next_line_wall_time())

    def sync(self) -> None:
        """Hands the reporter the steps counted since the last sync (eagerly, outside any graph)."""
        self._hand_over(int(self._count.numpy()), float(self._last.numpy()))

    def _hand_over(self, count: int, last_step_wall_time: float) -> None:
        with self._lock:
            steps = count - self._synced
            self._synced = max(self._synced, count)
        self._reporter.add_steps(self._source, steps, last_step_wall_time)


def _in_xla() -> bool:
    from tensorflow.python.ops import control_flow_util

    return control_flow_util.GraphOrParentsInXlaContext(tf.compat.v1.get_default_graph())


def count_step(source: str) -> None:
    reporter = state.progress
    if not reporter.active:
        return
    if tf.executing_eagerly():
        reporter.count(source)
    elif reporter.enabled() and not _in_xla():
        counter = reporter.deferred.get(source)
        if counter is None:
            counter = reporter.deferred[source] = GraphSteps(source, reporter)
        counter.add_to_graph()
