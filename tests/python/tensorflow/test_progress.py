"""Rank 0's progress lines from korovod.tensorflow and korovod.keras (docs/progress.md), on the job's
real ranks: DistributedGradientTape.gradient() counts a step per call, eagerly and in a
tf.function (counter ops that rank 0's graph alone holds); model.fit with korovod callbacks
counts each batch once (however many callbacks), with fit's total steps and loss, and writes the
final line at on_train_end; without them the DistributedOptimizer counts. Every other rank writes
nothing. The reporter itself: tests/python/torch/test_progress.py."""

import numpy as np
import pytest
import keras
import tensorflow as tf

import korovod.keras as hvd_keras
import korovod.tensorflow as hvd
from korovod.common import basics
from korovod.common.progress import TAPE
from korovod.tensorflow._progress import count_step
from progress_lines import capture, parse
from tf_helpers import MODES, check_on_all_ranks

ROWS, BATCH, EPOCHS = 12, 4, 2
STEPS = ROWS // BATCH * EPOCHS


def _only_rank_0_wrote(lines, check_rank_0) -> None:
    """check_rank_0(parsed lines) -> problem or "" on rank 0; every other rank must have none."""
    if hvd.rank() == 0:
        try:
            problem = check_rank_0(parse(lines))
        except (AssertionError, KeyError, IndexError, TypeError) as error:  # still meet the other ranks
            problem = f"{error!r} in {lines}"
    else:
        problem = f"wrote {lines}" if lines else ""
    check_on_all_ranks(not problem, lambda: problem)


def _tape_step(variable):
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(variable * variable) * float(hvd.rank() + 1)
    return hvd.DistributedGradientTape(tape).gradient(loss, [variable])


@pytest.mark.parametrize("mode", MODES)
def test_each_tape_gradient_call_counts_one_step(monkeypatch, mode):
    lines = capture(monkeypatch)
    variable = tf.Variable([1.0, 2.0])
    step = (lambda: _tape_step(variable)) if mode == "eager" else tf.function(lambda: _tape_step(variable))
    for _ in range(3):
        step()
    _only_rank_0_wrote(lines, lambda got: "" if [(g["step"], g["source"]) for g in got] ==
                       [(1, "tape"), (2, "tape"), (3, "tape")] else f"lines {got}")


def _has_counter(function) -> bool:
    graph = function.get_concrete_function().graph
    return any("korovod_progress_step" in op.name for op in graph.get_operations())


def test_only_rank_0_traces_the_counter_and_none_with_lines_off(monkeypatch):
    variable = tf.Variable([1.0, 2.0])
    capture(monkeypatch)
    traced = _has_counter(tf.function(lambda: _tape_step(variable)))
    check_on_all_ranks(traced == (hvd.rank() == 0), lambda: f"counter in the graph: {traced}")
    capture(monkeypatch, interval=0.0)
    check_on_all_ranks(not _has_counter(tf.function(lambda: _tape_step(variable))),
                       lambda: "a counter in the graph with lines off")


def test_no_counter_under_xla(monkeypatch):
    capture(monkeypatch)
    compiled = tf.function(lambda: (count_step(TAPE), tf.constant(0))[1], jit_compile=True)
    check_on_all_ranks(not _has_counter(compiled), lambda: "a counter in an XLA-compiled function")


def _fit(callbacks, epochs=EPOCHS):
    keras.utils.set_random_seed(5)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, activation="tanh"), keras.layers.Dense(1)])
    model.compile(loss="mse", optimizer=hvd_keras.DistributedOptimizer(keras.optimizers.SGD(0.01)),
                  metrics=["mae"], jit_compile=False)
    rng = np.random.default_rng(hvd.rank())
    x = rng.normal(size=(ROWS, 3)).astype("float32")
    model.fit(x, x.sum(axis=1, keepdims=True), batch_size=BATCH, epochs=epochs, shuffle=False, verbose=0,
              callbacks=callbacks)


def _korovod_callbacks():
    return [hvd_keras.callbacks.BroadcastGlobalVariablesCallback(0), hvd_keras.callbacks.MetricAverageCallback(),
            hvd_keras.callbacks.LearningRateWarmupCallback(initial_lr=0.01, warmup_epochs=1)]


def test_fit_with_korovod_callbacks_counts_each_batch_once_with_total_and_loss(monkeypatch):
    lines = capture(monkeypatch)  # a line per step: a batch fed twice would show twice
    _fit(_korovod_callbacks())

    def check(got):
        if [g["step"] for g in got] != list(range(1, STEPS + 1)):
            return f"steps {[g['step'] for g in got]}, expected 1..{STEPS}"
        bad = [g for g in got if g.get("total_steps") != STEPS or g["source"] != "keras"
               or not isinstance(g.get("loss"), float) or "mae" not in g.get("metrics", {})]
        return f"lines without total, loss or metrics: {bad}" if bad else ""
    _only_rank_0_wrote(lines, check)


def test_fit_writes_the_first_line_and_the_final_one_at_train_end(monkeypatch):
    lines = capture(monkeypatch, interval=3600.0)
    _fit(_korovod_callbacks()[:1])
    _only_rank_0_wrote(lines, lambda got: "" if [(g["step"], g["total_steps"]) for g in got] ==
                       [(1, STEPS), (STEPS, STEPS)] and "steps_per_second" in got[1] else f"lines {got}")


def test_fit_without_korovod_callbacks_counts_optimizer_applies(monkeypatch):
    lines = capture(monkeypatch)
    _fit([], epochs=1)
    basics.state.progress.finish()
    _only_rank_0_wrote(lines, lambda got: "" if [(g["step"], g["source"]) for g in got] ==
                       [(i, "optimizer") for i in range(1, ROWS // BATCH + 1)] else f"lines {got}")


def test_report_progress_reads_tensorflow_tensors_and_refuses_symbolic_ones(monkeypatch):
    lines = capture(monkeypatch)
    hvd.report_progress(step=tf.constant(3), loss=tf.constant(0.5), accuracy=tf.constant(0.25, tf.float64))
    problem = ""
    try:
        tf.function(lambda: hvd.report_progress(loss=tf.constant(1.0) * 2))()
        if hvd.rank() == 0:
            problem = "a symbolic loss was taken"
    except TypeError as error:
        if hvd.rank() != 0 or "report_progress: loss must be" not in str(error):
            problem = f"TypeError on rank {hvd.rank()}: {error}"
    check_on_all_ranks(not problem, lambda: problem)
    _only_rank_0_wrote(lines, lambda got: "" if [(g["step"], g["loss"], g["metrics"]) for g in got] ==
                       [(3, 0.5, {"accuracy": 0.25})] else f"lines {got}")


def test_report_progress_is_exported_by_both_bindings():
    check_on_all_ranks(hvd.report_progress is basics.report_progress is hvd_keras.report_progress
                       and "report_progress" in hvd.__all__ and "report_progress" in hvd_keras.__all__)
