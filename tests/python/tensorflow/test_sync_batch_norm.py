"""hvd.SyncBatchNormalization (Horovod's, on Keras 3): each rank normalizing its own batch gets
what plain BatchNormalization gives on all ranks' batches together (outputs, moving statistics
and the gradient with respect to the input), eagerly and in tf.function."""

import numpy as np
import pytest
import tensorflow as tf
import keras

import korovod.tensorflow as hvd
from tf_helpers import MODES, check_on_all_ranks, check_results, raises_on_all_ranks, run

ROWS, COLUMNS = 4, 3


def _rank_batch(rank: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(1000 * seed + rank)
    return rng.normal(size=(ROWS, COLUMNS)) * (rank + 1) + rank


def _normalize(layer, x, weights):
    """The layer's training output and d(sum(output * weights))/d(input)."""
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = layer(x, training=True)
        loss = tf.reduce_sum(y * weights)
    return y, tape.gradient(loss, x)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_each_rank_gets_batch_norm_of_the_combined_batch(dtype, mode):
    n, r = hvd.size(), hvd.rank()
    inputs = [_rank_batch(k, 1) for k in range(n)]
    weights = [_rank_batch(k, 2) for k in range(n)]
    plain = keras.layers.BatchNormalization(momentum=0.5, dtype=dtype)
    synced = hvd.SyncBatchNormalization(momentum=0.5, dtype=dtype)
    expected_y, expected_grad = run(mode, _normalize, plain, tf.constant(np.concatenate(inputs), dtype),
                                    tf.constant(np.concatenate(weights), dtype))
    y, grad = run(mode, _normalize, synced, tf.constant(inputs[r], dtype), tf.constant(weights[r], dtype))
    mine = slice(r * ROWS, (r + 1) * ROWS)
    # float32: E[x^2] - E[x]^2 (Horovod's formula) against Keras' two-pass variance.
    check = tf.float32 if dtype == "float64" else tf.float16
    check_results([("output", y, expected_y.numpy()[mine]), ("input gradient", grad, expected_grad.numpy()[mine]),
                   ("moving_mean", synced.moving_mean, plain.moving_mean.numpy()),
                   ("moving_variance", synced.moving_variance, plain.moving_variance.numpy())], dtype=check)


def test_inference_uses_the_moving_statistics_and_fused_is_refused_as_horovod():
    layer = hvd.SyncBatchNormalization()
    x = tf.constant(_rank_batch(hvd.rank(), 3), tf.float32)
    check_results([("inference", layer(x, training=False), x.numpy() / np.sqrt(1.0 + layer.epsilon))],
                  dtype=tf.float16)
    check_on_all_ranks(layer.name.startswith("sync_batch_normalization"), lambda: f"name {layer.name}")
    raises_on_all_ranks(ValueError, lambda: hvd.SyncBatchNormalization(fused=True))
    hvd.SyncBatchNormalization(fused=False)


def test_in_a_keras_model_the_ranks_train_alike_on_different_batches():
    """Two ranks, different batches, same initial weights: with synchronized statistics and
    averaged gradients every rank ends with the same weights."""
    keras.utils.set_random_seed(7)
    model = keras.Sequential([keras.Input((COLUMNS,)), keras.layers.Dense(4), hvd.SyncBatchNormalization(),
                              keras.layers.Dense(1)])
    model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.1)), loss="mse", jit_compile=False)
    x = _rank_batch(hvd.rank(), 4)
    model.fit(x, x.sum(axis=1), batch_size=ROWS, epochs=3, verbose=0)
    weights = np.concatenate([w.numpy().ravel() for w in model.weights])
    gathered = hvd.allgather_object(weights, name="syncbn.weights")
    check_on_all_ranks(all(np.allclose(w, gathered[0], rtol=1e-6, atol=1e-6) for w in gathered),
                       lambda: "ranks' weights differ")
