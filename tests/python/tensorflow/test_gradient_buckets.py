"""Gradient reductions in a graph start bucket by bucket while backprop still runs (one op per
bucket starts its allreduces, one op at the end waits for all): the buckets, that the results are
those of one reduction, that a bucket really starts before backprop has finished, and that an
error in one bucket reaches every rank and leaves the runtime usable."""

import time

import numpy as np
import pytest
import tensorflow as tf
import keras

import korovod.keras as hvd_keras
import korovod.tensorflow as hvd
from korovod.common.basics import state
from korovod.tensorflow import _eager, gradients
from tf_helpers import check_on_all_ranks, check_results, raises_on_all_ranks, require_ranks


def _mean_weight():
    return float(np.mean(np.arange(1, hvd.size() + 1)))


def _rank_loss(variables):
    """A loss whose gradient for variable i on rank r is (r + 1) * (i + 1) everywhere."""
    scale = float(hvd.rank() + 1)
    return tf.add_n([tf.reduce_sum(v) * scale * (i + 1) for i, v in enumerate(variables)])


def test_buckets_run_from_the_last_gradient_and_close_at_the_threshold():
    grads = [tf.zeros([256], tf.float32), tf.zeros([64], tf.float64), tf.zeros([128], tf.float16),
             tf.zeros([100], tf.float32), tf.zeros([3], tf.float32)]
    # bytes: 1024, 512, 256, 400, 12 -> from the end: 12+400 (412), 256+512 (768), 1024
    check_on_all_ranks(gradients.backward_buckets(grads, 400) == [[4, 3], [2, 1], [0]],
                       lambda: f"buckets {gradients.backward_buckets(grads, 400)}")
    check_on_all_ranks(gradients.backward_buckets(grads, 1) == [[4], [3], [2], [1], [0]], lambda: "one per gradient")
    check_on_all_ranks(gradients.backward_buckets(grads, 1 << 30) == [[4, 3, 2, 1, 0]], lambda: "one bucket")


def test_a_gradient_of_unknown_size_closes_its_bucket():
    seen = []

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def f(x):
        seen.append(gradients.backward_buckets([x, tf.zeros([2]), tf.zeros([2])], 1 << 20))
        return x

    f(tf.zeros([3]))
    check_on_all_ranks(seen[0] == [[2, 1, 0]], lambda: f"buckets {seen[0]}")


@pytest.mark.parametrize("options", [{}, {"op": hvd.Sum}, {"gradient_predivide_factor": 2.0},
                                     {"compression": hvd.Compression.fp16}],
                         ids=["average", "sum", "predivide", "fp16"])
def test_a_bucket_per_gradient_gives_what_one_reduction_gives(options, monkeypatch):
    monkeypatch.setattr(gradients, "BUCKET_BYTES", 1)
    variables = [tf.Variable(tf.zeros([3])), tf.Variable(tf.zeros([2, 2])), tf.Variable(0.0),
                 tf.Variable(tf.zeros([5], tf.float64))]

    @tf.function
    def f():
        with tf.GradientTape() as tape:
            loss = _rank_loss(variables[:3]) + tf.cast(_rank_loss([variables[3]]), tf.float32) * 4.0
        return hvd.DistributedGradientTape(tape, **options).gradient(loss, variables)

    grads = f()
    factor = _mean_weight() * (hvd.size() if options.get("op") == hvd.Sum else 1)
    check_results([(f"grad {i}", g, np.full(v.shape, factor * (i + 1))) for i, (g, v) in
                   enumerate(zip(grads, variables))])
    check_on_all_ranks(not state.pending, lambda: f"left pending: {list(state.pending)}")


@pytest.mark.parametrize("passes", [1, 2])
def test_keras_optimizer_with_a_bucket_per_gradient(passes, monkeypatch):
    """passes=2: the second step reduces the accumulated gradients inside a tf.cond branch."""
    monkeypatch.setattr(gradients, "BUCKET_BYTES", 1)
    variables = [tf.Variable(tf.zeros([3])), tf.Variable(tf.zeros([2]))]
    optimizer = hvd_keras.DistributedOptimizer(keras.optimizers.SGD(learning_rate=1.0),
                                               backward_passes_per_step=passes)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = _rank_loss(variables)
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))

    for _ in range(passes):
        step()
    check_results([(f"v{i}", v, np.full(v.shape, -passes * _mean_weight() * (i + 1)))
                   for i, v in enumerate(variables)])


def test_tf1_session_optimizer_with_a_bucket_per_gradient(monkeypatch):
    monkeypatch.setattr(gradients, "BUCKET_BYTES", 1)
    graph = tf.Graph()
    with graph.as_default():
        variables = [tf.compat.v1.get_variable(f"v{i}", initializer=tf.zeros([2 + i]), use_resource=True)
                     for i in range(3)]
        train = hvd.DistributedOptimizer(tf.compat.v1.train.GradientDescentOptimizer(1.0)).minimize(
            _rank_loss(variables))
        with tf.compat.v1.Session(graph=graph) as session:
            session.run(tf.compat.v1.global_variables_initializer())
            session.run(train)
            values = session.run(variables)
    check_results([(f"v{i}", tf.constant(v), np.full(2 + i, -_mean_weight() * (i + 1))) for i, v in enumerate(values)])


def test_the_last_gradients_start_before_backprop_reaches_the_first_layer(monkeypatch):
    """The first variable's gradient passes through an op that holds backprop until korovod has
    started an allreduce of this step (at most 20 s): with one op for all gradients at the end
    (the design before buckets) nothing starts while it waits, and it reports the timeout."""
    require_ranks(2)
    monkeypatch.setattr(gradients, "BUCKET_BYTES", 1)
    started_while_waiting = []

    def hold(x):
        deadline = time.monotonic() + 20.0
        while not state.pending and time.monotonic() < deadline:
            time.sleep(0.001)
        started_while_waiting.append(bool(state.pending))
        return x

    @tf.custom_gradient
    def held_in_backprop(x):
        def grad(upstream):
            return tf.numpy_function(hold, [upstream], tf.float32, stateful=False)
        return tf.identity(x), grad

    variables = [tf.Variable(tf.ones([4])), tf.Variable(tf.zeros([3])), tf.Variable(tf.zeros([2]))]

    @tf.function
    def f():
        with tf.GradientTape() as tape:
            first = held_in_backprop(variables[0])
            loss = tf.reduce_sum(first * first) * float(hvd.rank() + 1) + _rank_loss(variables[1:])
        return hvd.DistributedGradientTape(tape).gradient(loss, variables)

    grads = f()
    check_on_all_ranks(started_while_waiting == [True],
                       lambda: f"an allreduce started while backprop was held: {started_while_waiting}")
    check_results([("held", grads[0], np.full(4, 2.0 * _mean_weight())),
                   ("v1", grads[1], np.full(3, _mean_weight())), ("v2", grads[2], np.full(2, 2 * _mean_weight()))])


def test_a_mismatch_in_one_bucket_raises_on_every_rank_and_the_runtime_recovers(monkeypatch):
    require_ranks(2)
    monkeypatch.setattr(gradients, "BUCKET_BYTES", 1)
    variables = [tf.Variable(tf.zeros([3])), tf.Variable(tf.zeros([2 + hvd.rank()])), tf.Variable(tf.zeros([2]))]

    @tf.function
    def f():
        with tf.GradientTape() as tape:
            loss = _rank_loss(variables)
        return hvd.DistributedGradientTape(tape).gradient(loss, variables)

    text = raises_on_all_ranks(tf.errors.OpError, f)
    check_on_all_ranks("DistributedGradientTape.grad_1" in text, lambda: f"error text: {text}")
    check_on_all_ranks(not state.pending, lambda: f"left pending: {list(state.pending)}")
    check_results([("after", hvd.allreduce(tf.ones([3]), op=hvd.Sum), np.full(3, float(hvd.size())))])


def test_waiting_for_an_unknown_start_says_what_happened():
    with pytest.raises(RuntimeError, match="shut down or initialized again"):
        _eager.finish_allreduces([2 ** 40])
