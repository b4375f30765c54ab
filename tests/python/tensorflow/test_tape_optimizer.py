"""DistributedGradientTape and the distributed optimizers (Keras 3, tf.compat.v1), eagerly and in
tf.function: the gradients they use are every rank's gradients reduced as asked."""

import numpy as np
import pytest
import tensorflow as tf
import keras

import korovod.keras as hvd_keras
import korovod.tensorflow.keras as hvd_tf_keras
import korovod.tensorflow as hvd
from tf_helpers import MODES, check_on_all_ranks, check_results, run


def _rank_gradients(variables):
    """A loss whose gradient for variable i on rank r is (r + 1) * (i + 1) everywhere."""
    scale = float(hvd.rank() + 1)
    return tf.add_n([tf.reduce_sum(v) * scale * (i + 1) for i, v in enumerate(variables)])


def _mean_weight():
    return float(np.mean(np.arange(1, hvd.size() + 1)))


def _tape_gradients(mode, variables, **kwargs):
    def f():
        with tf.GradientTape() as tape:
            loss = _rank_gradients(variables)
        return hvd.DistributedGradientTape(tape, **kwargs).gradient(loss, variables)

    return run(mode, f)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("options", [{}, {"op": hvd.Sum}, {"gradient_predivide_factor": 2.0}, {"groups": 2},
                                     {"compression": hvd.Compression.fp16}, {"num_groups": 1}, {"op": hvd.Adasum}],
                         ids=["average", "sum", "predivide", "groups2", "fp16", "num_groups", "adasum"])
def test_tape_reduces_every_gradient(options, mode):
    variables = [tf.Variable(tf.zeros([3])), tf.Variable(tf.zeros([2, 2])), tf.Variable(0.0)]
    grads = _tape_gradients(mode, variables, **options)
    n = hvd.size()
    # Each rank's gradients are multiples of one another's: their Adasum is their mean, too.
    factor = _mean_weight() * (n if options.get("op") == hvd.Sum else 1)
    check_results([(f"grad {i}", g, np.full(v.shape, factor * (i + 1))) for i, (g, v) in
                   enumerate(zip(grads, variables))])


@pytest.mark.parametrize("mode", MODES)
def test_tape_groups_given_as_variables(mode):
    variables = [tf.Variable(tf.zeros([2])) for _ in range(4)]
    grads = _tape_gradients(mode, variables, groups=[[variables[0], variables[2]], [variables[3]]])
    check_results([(f"grad {i}", g, np.full(2, _mean_weight() * (i + 1))) for i, g in enumerate(grads)])


@pytest.mark.parametrize("mode", MODES)
def test_tape_keeps_the_structure_of_sources_and_none_gradients(mode):
    used, unused = tf.Variable(tf.zeros([2])), tf.Variable(tf.zeros([2]))

    def f():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(used) * float(hvd.rank() + 1)
        return hvd.DistributedGradientTape(tape).gradient(loss, {"used": used, "unused": unused})

    grads = run(mode, f)
    check_on_all_ranks(grads["unused"] is None, lambda: f"unused gradient {grads['unused']}")
    check_results([("used", grads["used"], np.full(2, _mean_weight()))])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("sparse_as_dense", [False, True])
def test_tape_sparse_gradients_of_an_embedding(sparse_as_dense, mode):
    n, r = hvd.size(), hvd.rank()
    table = tf.Variable(tf.zeros([n, 2]))

    def f():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.gather(table, [r])) * float(r + 1)
        return hvd.DistributedGradientTape(tape, sparse_as_dense=sparse_as_dense).gradient(loss, [table])[0]

    grad = run(mode, f)
    check_on_all_ranks(isinstance(grad, tf.IndexedSlices) != sparse_as_dense, lambda: f"got {type(grad)}")
    expected = np.array([[(k + 1) / n] * 2 for k in range(n)])
    check_results([("dense", tf.convert_to_tensor(grad), expected)])


@pytest.mark.parametrize("mode", MODES)
def test_partial_tape_leaves_local_layers_local_and_scaled(mode):
    layer = keras.layers.Dense(1, use_bias=False, kernel_initializer="zeros")
    layer.build((None, 2))
    shared = tf.Variable(tf.zeros([2]))

    def f():
        with tf.GradientTape() as tape:
            loss = (tf.reduce_sum(layer(tf.ones([1, 2]))) + tf.reduce_sum(shared)) * float(hvd.rank() + 1)
        tape = hvd.PartialDistributedGradientTape(tape, local_layers=[layer])
        return tape.gradient(loss, [shared, layer.kernel])

    grads = run(mode, f)
    local = float(hvd.rank() + 1) / hvd.size()
    check_results([("shared", grads[0], np.full(2, _mean_weight())), ("local", grads[1], np.full([2, 1], local))])


@pytest.mark.parametrize("mode", MODES)
def test_keras_optimizer_applies_the_averaged_gradient(mode):
    variables = [tf.Variable(tf.zeros([3])), tf.Variable(tf.zeros([2]))]
    optimizer = hvd_keras.DistributedOptimizer(keras.optimizers.SGD(learning_rate=1.0))

    def step():
        with tf.GradientTape() as tape:
            loss = _rank_gradients(variables)
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))

    run(mode, step)
    check_on_all_ranks(isinstance(optimizer, keras.optimizers.SGD) and type(optimizer).__name__ == "SGD",
                       lambda: f"wrapper is {type(optimizer)}")
    check_results([(f"v{i}", v, np.full(v.shape, -_mean_weight() * (i + 1))) for i, v in enumerate(variables)])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("package", [hvd_keras, hvd_tf_keras], ids=["keras", "tensorflow.keras"])
@pytest.mark.parametrize("scale_local", [True, False])
def test_keras_partial_optimizer_leaves_local_layers_local(package, scale_local, mode):
    """Horovod's PartialDistributedOptimizer: the local layer's weights get this rank's own
    gradient (divided by the size when scale_local_gradients), the shared one the average."""
    local_layer = keras.layers.Dense(1, use_bias=False, kernel_initializer="zeros")
    local_layer.build((None, 2))
    shared = tf.Variable(tf.zeros([2]))
    optimizer = package.PartialDistributedOptimizer(keras.optimizers.SGD(learning_rate=1.0),
                                                    local_layers=local_layer, scale_local_gradients=scale_local)
    variables = [shared, local_layer.kernel]

    def step():
        with tf.GradientTape() as tape:
            loss = (tf.reduce_sum(local_layer(tf.ones([1, 2]))) + tf.reduce_sum(shared)) * float(hvd.rank() + 1)
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))

    run(mode, step)
    local = float(hvd.rank() + 1) / (hvd.size() if scale_local else 1)
    check_results([("shared", shared, np.full(2, -_mean_weight())), ("local", local_layer.kernel,
                                                                      np.full([2, 1], -local))])


def test_keras_partial_optimizer_refuses_a_non_layer():
    with pytest.raises(ValueError, match=r"local_layers\[1\] is a \w*Variable"):
        hvd_keras.PartialDistributedOptimizer(keras.optimizers.SGD(), local_layers=[keras.layers.Dense(1),
                                                                                    tf.Variable(0.0)])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("average_aggregated", [False, True])
def test_keras_optimizer_backward_passes_per_step(average_aggregated, mode):
    """Two passes: the first only accumulates (and counts an iteration), the second applies the
    sum (or mean) of both passes' gradients, averaged across ranks."""
    variable = tf.Variable(tf.zeros([2]))
    optimizer = hvd_keras.DistributedOptimizer(keras.optimizers.SGD(learning_rate=1.0), backward_passes_per_step=2,
                                               average_aggregated_gradients=average_aggregated)
    step_fn = None

    def step(scale):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(variable) * float(hvd.rank() + 1) * scale
        optimizer.apply_gradients([(tape.gradient(loss, variable), variable)])

    if mode == "function":
        step_fn = tf.function(step)
    else:
        step_fn = step
    step_fn(tf.constant(1.0))
    after_first = variable.numpy().copy()
    step_fn(tf.constant(2.0))
    summed = 3.0 * _mean_weight() / (2 if average_aggregated else 1)
    check_results([("after first pass", tf.constant(after_first), np.zeros(2)),
                   ("after second pass", variable, np.full(2, -summed))])
    check_on_all_ranks(int(optimizer.iterations) == 2, lambda: f"iterations {int(optimizer.iterations)}")


def test_tensorflow_distributed_optimizer_picks_the_keras_wrapper():
    optimizer = hvd.DistributedOptimizer(keras.optimizers.Adam(0.1))
    check_on_all_ranks(hasattr(optimizer, "_korovod_reducer") and isinstance(optimizer, keras.optimizers.Adam),
                       lambda: f"got {type(optimizer)}")


def test_legacy_optimizer_in_a_tf1_graph_session():
    graph = tf.Graph()
    with graph.as_default():
        variable = tf.compat.v1.get_variable("v", initializer=tf.zeros([2]), use_resource=True)
        loss = tf.reduce_sum(variable) * float(hvd.rank() + 1)
        optimizer = hvd.DistributedOptimizer(tf.compat.v1.train.GradientDescentOptimizer(1.0))
        train = optimizer.minimize(loss)
        with tf.compat.v1.Session(graph=graph) as session:
            session.run(tf.compat.v1.global_variables_initializer())
            session.run(train)
            value = session.run(variable)
    check_results([("v", tf.constant(value), np.full(2, -_mean_weight()))])
