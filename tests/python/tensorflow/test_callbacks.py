"""korovod.keras callbacks inside model.fit (Keras 3, tensorflow backend): what each one changes."""

import numpy as np
import keras
import tensorflow as tf

import korovod.keras as hvd
import korovod.tensorflow.keras as hvd_tf_keras
from tf_helpers import check_on_all_ranks, check_results


def _model(seed: int):
    keras.utils.set_random_seed(seed)
    return keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, activation="tanh"), keras.layers.Dense(1)])


def _data(rank: int, rows: int = 16):
    rng = np.random.default_rng(100 + rank)
    x = rng.normal(size=(rows, 3)).astype("float32")
    return x, x.sum(axis=1, keepdims=True)


class _Record(keras.callbacks.Callback):
    """Records the logs and learning rate the callbacks before it left."""

    def __init__(self):
        super().__init__()
        self.epoch_logs, self.batch_lrs = [], []

    def on_train_batch_begin(self, batch, logs=None):
        self.batch_lrs.append(float(keras.ops.convert_to_numpy(self.model.optimizer.learning_rate)))

    def on_epoch_end(self, epoch, logs=None):
        self.epoch_logs.append(dict(logs))


def test_korovod_tensorflow_keras_is_the_same_module():
    check_on_all_ranks(hvd_tf_keras.DistributedOptimizer is hvd.DistributedOptimizer
                       and hvd_tf_keras.callbacks.MetricAverageCallback is hvd.callbacks.MetricAverageCallback,
                       lambda: "korovod.tensorflow.keras differs from korovod.keras")


def test_broadcast_callback_makes_differing_initial_weights_equal():
    r = hvd.rank()
    model = _model(seed=r)  # a different initialisation on every rank
    model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.Adam(0.01)), loss="mse")
    before = model.get_weights()[0]
    spread_before = hvd.allgather(before[None])
    x, y = _data(r)
    model.fit(x, y, batch_size=8, epochs=1, verbose=0,
              callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0)])
    weights = [w for w in model.get_weights()] + [keras.ops.convert_to_numpy(v) for v in model.optimizer.variables]
    gathered = [keras.ops.convert_to_numpy(hvd.allgather(np.asarray(w)[None])) for w in weights]
    differing = [i for i, g in enumerate(gathered) if not all(np.allclose(g[0], g[k]) for k in range(len(g)))]
    check_on_all_ranks(hvd.size() == 1 or not np.allclose(spread_before[0], spread_before[-1]),
                       lambda: "the ranks started equal: the test proves nothing")
    check_on_all_ranks(not differing, lambda: f"variables {differing} differ across ranks after the broadcast")


def test_metric_average_callback_gives_the_mean_over_ranks():
    r, n = hvd.rank(), hvd.size()

    class _RankMetric(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            logs["rank_metric"] = float(r + 1)

    recorder = _Record()
    model = _model(seed=1)
    model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.01)), loss="mse")
    x, y = _data(r)
    model.fit(x, y, batch_size=8, epochs=1, verbose=0,
              callbacks=[_RankMetric(), hvd.callbacks.MetricAverageCallback(), recorder])
    logs = recorder.epoch_logs[0]
    losses = keras.ops.convert_to_numpy(hvd.allgather(np.array([logs["loss"]])))
    check_on_all_ranks(abs(logs["rank_metric"] - (n + 1) / 2) < 1e-9, lambda: f"rank_metric {logs['rank_metric']}")
    check_on_all_ranks(np.allclose(losses, losses[0]), lambda: f"averaged losses differ: {losses}")


def test_learning_rate_warmup_goes_from_lr_over_size_to_lr():
    n = hvd.size()
    recorder = _Record()
    model = _model(seed=2)
    model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.1)), loss="mse")
    x, y = _data(hvd.rank())
    model.fit(x, y, batch_size=4, epochs=3, verbose=0,
              callbacks=[hvd.callbacks.LearningRateWarmupCallback(0.1, warmup_epochs=2), recorder])
    steps = 4
    expected = [0.1 / n * ((e + (b + 1) / steps) * (n - 1) / 2 + 1) for e in range(2) for b in range(steps)]
    expected += [expected[-1]] * steps  # after the warmup the rate stays where it ended
    check_results([("lr per batch", tf.constant(recorder.batch_lrs, tf.float64), np.array(expected))],
                  dtype=tf.float32)
    check_on_all_ranks(abs(recorder.epoch_logs[-1]["lr"] - 0.1) < 1e-6, lambda: f"logs {recorder.epoch_logs}")


def test_learning_rate_schedule_with_momentum_correction_scales_the_momentum():
    """Staircase x0.5 per epoch from epoch 1; the momentum buffers follow the rate change."""
    model = _model(seed=3)
    optimizer = hvd.DistributedOptimizer(keras.optimizers.SGD(0.2, momentum=0.9))
    model.compile(optimizer=optimizer, loss="mse")
    x, y = _data(hvd.rank(), rows=8)
    recorder = _Record()
    schedule = hvd.callbacks.LearningRateScheduleCallback(0.2, 0.5, start_epoch=1)
    model.fit(x, y, batch_size=8, epochs=1, verbose=0, callbacks=[schedule, recorder])
    momentum_before = keras.ops.convert_to_numpy(optimizer.momentums[0]).copy()
    schedule._adjust_learning_rate(2)  # what on_batch_begin does at epoch 2: 0.2 * 0.5 ** (2 - 1)
    momentum_after = keras.ops.convert_to_numpy(optimizer.momentums[0])
    lr = float(keras.ops.convert_to_numpy(optimizer.learning_rate))
    check_on_all_ranks(abs(lr - 0.1) < 1e-7, lambda: f"lr {lr}")
    check_on_all_ranks(np.allclose(momentum_after, momentum_before * 0.5) and np.any(momentum_before != 0),
                       lambda: f"momentum {momentum_before} -> {momentum_after}")
