"""The TensorFlow training both engines' tests check: each rank takes its share of the rows,
hvd.DistributedGradientTape averages the gradients, and the model must equal one process's on
all rows."""

from __future__ import annotations

import numpy as np


def data():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((16, 5)).astype(np.float32)
    y = (x @ np.array([[1.0], [-2.0], [0.5], [3.0], [0.0]], dtype=np.float32) + 0.25).astype(np.float32)
    return x, y


def train(x, y, distributed: bool):
    """20 SGD steps of a linear model; returns [kernel, bias] as numpy arrays."""
    import tensorflow as tf
    w = tf.Variable(tf.zeros([5, 1]))
    b = tf.Variable(tf.zeros([1]))
    opt = tf.keras.optimizers.SGD(learning_rate=0.05)
    if distributed:
        import korovod.tensorflow as hvd
        hvd.init()
        hvd.broadcast_variables([w, b], root_rank=0)
        share = x.shape[0] // hvd.size()
        x, y = x[hvd.rank() * share:(hvd.rank() + 1) * share], y[hvd.rank() * share:(hvd.rank() + 1) * share]
    for _ in range(20):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
        if distributed:
            tape = hvd.DistributedGradientTape(tape)
        grads = tape.gradient(loss, [w, b])
        opt.apply_gradients(zip(grads, [w, b]))
    return [w.numpy(), b.numpy()]


def train_fn(x, y):
    return train(x, y, distributed=True)


def whoami():
    import tensorflow as tf
    import korovod.tensorflow as hvd
    hvd.init()
    total = float(hvd.allreduce(tf.constant([float(hvd.rank() + 1)]), op=hvd.Sum).numpy()[0])
    return hvd.rank(), hvd.size(), total


def fail_on_rank_one():
    import korovod.tensorflow as hvd
    hvd.init()
    if hvd.rank() == 1:
        raise KeyError("rank one has no such feature")
    return "ok"


def assert_same_model(results, x, y) -> None:
    single = train(x, y, distributed=False)
    assert len(results) == 2
    for rank_params in results:
        for got, want in zip(rank_params, single):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def arrive_late():
    """Rank 1 calls hvd.init() 8 s after rank 0 (the start timeout is shorter)."""
    import os
    import time

    import korovod.tensorflow as hvd
    if int(os.environ["KOROVOD_RANK"]) == 1:
        time.sleep(8)
    hvd.init()
    return "arrived"


def kill_rank_one(*_):
    """Rank 1's process dies (SIGKILL) after hvd.init(); rank 0 then waits in an allreduce."""
    import os
    import signal

    import tensorflow as tf

    import korovod.tensorflow as hvd
    hvd.init()
    if hvd.rank() == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    hvd.allreduce(tf.ones([1]), name="after_the_kill")
