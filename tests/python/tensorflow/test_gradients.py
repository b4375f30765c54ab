"""Gradients through korovod.tensorflow's collectives, as Horovod defines them, taken with a
GradientTape eagerly and inside tf.function. Each rank weighs the op's output by c_r = rank + 1,
so the expected gradients tell the ranks' contributions apart."""

import numpy as np
import pytest
import tensorflow as tf

import korovod.tensorflow as hvd
from tf_helpers import MODES, check_results, run


def _gradient(mode, forward, x):
    """d/dx of sum(forward(x) * (rank + 1))."""
    weight = float(hvd.rank() + 1)

    def f(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = forward(x)
            loss = tf.reduce_sum(tf.cast(y, tf.float64) * weight)
        return tape.gradient(loss, x)

    return run(mode, f, x)


def _weights():
    n = hvd.size()
    return np.arange(1, n + 1, dtype=np.float64)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op_name", ["Sum", "Average"])
def test_allreduce_gradient_is_the_same_allreduce_of_the_incoming_gradient(op_name, mode):
    op = getattr(hvd, op_name)
    grad = _gradient(mode, lambda x: hvd.allreduce(x, op=op), tf.ones([3], tf.float64))
    c = _weights()
    check_results([("grad", grad, np.full(3, c.sum() if op == hvd.Sum else c.mean()))])


@pytest.mark.parametrize("mode", MODES)
def test_allreduce_gradient_keeps_the_scale_factors(mode):
    grad = _gradient(mode, lambda x: hvd.allreduce(x, op=hvd.Sum, prescale_factor=2.0, postscale_factor=0.5),
                     tf.ones([2], tf.float64))
    check_results([("grad", grad, np.full(2, _weights().sum()))])


@pytest.mark.parametrize("mode", MODES)
def test_grouped_allreduce_gradient(mode):
    grad = _gradient(mode, lambda x: tf.add_n(hvd.grouped_allreduce([x, 2.0 * x], op=hvd.Sum)),
                     tf.ones([2], tf.float64))
    check_results([("grad", grad, np.full(2, 3.0 * _weights().sum()))])


@pytest.mark.parametrize("mode", MODES)
def test_allgather_gradient_is_this_ranks_block_of_the_averaged_gradient(mode):
    r = hvd.rank()
    grad = _gradient(mode, lambda x: hvd.allgather(x), tf.ones([r + 1, 2], tf.float64))
    check_results([("grad", grad, np.full([r + 1, 2], _weights().mean()))])


@pytest.mark.parametrize("mode", MODES)
def test_broadcast_gradient_goes_to_the_root_only(mode):
    root = hvd.size() - 1
    grad = _gradient(mode, lambda x: hvd.broadcast(x, root), tf.ones([2], tf.float64))
    expected = _weights().mean() if hvd.rank() == root else 0.0
    check_results([("grad", grad, np.full(2, expected))])


@pytest.mark.parametrize("mode", MODES)
def test_alltoall_gradient_returns_along_the_received_splits(mode):
    n = hvd.size()
    splits = tf.constant([k + 1 for k in range(n)], tf.int32)
    grad = _gradient(mode, lambda x: hvd.alltoall(x, splits=splits)[0],
                     tf.ones([sum(range(1, n + 1)), 2], tf.float64))
    # The rows sent to rank k come back weighted by c_k = k + 1.
    expected = np.concatenate([np.full([k + 1, 2], float(k + 1)) for k in range(n)])
    check_results([("grad", grad, expected)])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op_name", ["Sum", "Average"])
def test_reducescatter_gradient_allgathers_as_horovod(op_name, mode):
    """Horovod's gradient: the allgather of the incoming gradients, times size() for Sum."""
    n = hvd.size()
    op = getattr(hvd, op_name)
    grad = _gradient(mode, lambda x: hvd.reducescatter(x, op=op), tf.ones([n, 2], tf.float64))
    scale = n if op == hvd.Sum else 1
    expected = np.concatenate([np.full([1, 2], float(k + 1) * scale) for k in range(n)])
    check_results([("grad", grad, expected)])


def test_tf1_style_graph_gradients_through_allreduce():
    """tf.compat.v1.gradients in a graph run by a Session."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.constant([1.0, 2.0], tf.float64)
        y = hvd.allreduce(x, op=hvd.Sum)
        loss = tf.reduce_sum(y * float(hvd.rank() + 1))
        grad = tf.compat.v1.gradients(loss, x)[0]
        with tf.compat.v1.Session(graph=graph) as session:
            value = session.run(grad)
    check_results([("grad", tf.constant(value), np.full(2, _weights().sum()))])
