"""The elastic TensorFlow training the Spark and Ray runners' elastic tests check in the
TensorFlow venv (torch_elastic_training's counterpart, with korovod.tensorflow).

Full-batch gradient descent of a Keras linear model (Dense(1)) on 16 rows, one committed step at
a time under ``hvd.elastic.run`` with a TensorFlowKerasState (the model's and the optimizer's
variables, the step and the world sizes seen): on N ranks (N = 1, 2 or 4) each takes its share of
the rows and hvd.DistributedGradientTape averages the gradients inside a tf.function, so every
step is the full batch's step whatever the world's size. A worker lost mid-training sends the
others back to the last commit, and training goes on in new rounds with the same traced step; the
model at the end must still be one process's model after STEPS steps, and the optimizer's step
counter (restored with the commit) must be STEPS. Each worker writes "<rank> <step>" to
progress_dir/<pid> after each step, for the test to pick a victim (elastic_checks). A runner's test registers this
module for pickling by value (its workers cannot import tests/python/shared)."""

from __future__ import annotations

import os
import time

import numpy as np

STEPS = 60
LEARNING_RATE = 0.05


def data():
    rng = np.random.default_rng(11)
    x = rng.standard_normal((16, 5)).astype(np.float32)
    y = (x @ np.array([[1.0], [-2.0], [0.5], [3.0], [0.0]], dtype=np.float32) + 0.25).astype(np.float32)
    return x, y


def _model():
    """Dense(1) on 5 features with fixed initial weights (the same in every process)."""
    import keras
    model = keras.Sequential([keras.Input(shape=(5,)), keras.layers.Dense(1)])
    rng = np.random.default_rng(0)
    model.set_weights([(0.1 * rng.standard_normal((5, 1))).astype(np.float32), np.array([0.1], np.float32)])
    return model


def _params(model):
    return [np.array(v.numpy()) for v in model.trainable_variables]


def single_process(x, y):
    """[kernel, bias] after STEPS full-batch SGD steps in this process."""
    import keras
    import tensorflow as tf
    model = _model()
    opt = keras.optimizers.SGD(learning_rate=LEARNING_RATE)
    for _ in range(STEPS):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x) - y))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
    return _params(model)


def train_fn(x, y, progress_dir: str, step_seconds: float = 0.1):
    import keras
    import tensorflow as tf

    import korovod.tensorflow as hvd
    hvd.init()
    model = _model()
    opt = keras.optimizers.SGD(learning_rate=LEARNING_RATE)

    # autograph=False: the step has no Python control flow to convert, and a function pickled by
    # value has no source for AutoGraph to read (it would warn and run it as-is anyway).
    @tf.function(autograph=False)
    def train_step(xs, ys):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(xs) - ys))
        tape = hvd.DistributedGradientTape(tape)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    # No collective between here and train(): a worker that joins syncs while the others do.
    state = hvd.elastic.TensorFlowKerasState(model, opt, step=0, sizes=[])

    @hvd.elastic.run
    def train(state):
        while state.step < STEPS:
            share = x.shape[0] // hvd.size()
            rows = slice(hvd.rank() * share, (hvd.rank() + 1) * share)
            train_step(x[rows], y[rows])
            state.step += 1
            state.sizes = sorted(set(state.sizes) | {hvd.size()})
            state.commit()
            with open(os.path.join(progress_dir, str(os.getpid())), "w") as f:
                f.write(f"{hvd.rank()} {state.step}\n")
            time.sleep(step_seconds)

    train(state)
    return {"rank": hvd.rank(), "size": hvd.size(), "step": state.step, "sizes": state.sizes,
            "iterations": int(opt.iterations.numpy()), "params": _params(model)}


def assert_finished_as_one_process(results, x, y, size: int) -> None:
    """Every worker of the last round ends at STEPS (its optimizer's step counter too) with one
    process's model, to rtol 1e-5 / atol 1e-6 (float32; averaging per-rank means reorders sums)."""
    from elastic_checks import assert_last_round
    assert_last_round(results, size, STEPS)
    want = single_process(x, y)
    for r in results:
        assert r["iterations"] == STEPS, {k: v for k, v in r.items() if k != "params"}
        for got, exp in zip(r["params"], want):
            np.testing.assert_allclose(got, exp, rtol=1e-5, atol=1e-6)
