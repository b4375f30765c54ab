"""korovod.tensorflow.elastic and korovod.keras.elastic: the states (sync makes every rank's values
rank 0's, restore returns to the last commit, commit moves it), run()'s retry after a failure
(eagerly, and from inside a tf.function once the runtime stopped) and the Keras callbacks."""

import ctypes

import keras
import numpy as np
import pytest
import tensorflow as tf

import korovod.keras as hvd_keras
import korovod.tensorflow as hvd
from korovod.common import basics
from tf_helpers import check_on_all_ranks


def _values(variables):
    return [v.numpy() for v in variables]


def test_tensorflow_state_sync_restore_commit():
    v = 1.0 if hvd.rank() == 0 else 2.0
    variables = [tf.Variable(np.full([2, 2], v)), tf.Variable(np.full([2], v))]
    state = hvd.elastic.TensorFlowState(variables, batch=20 + hvd.rank(), epoch=10 + hvd.rank())
    state.sync()
    ok = all(np.array_equal(w, np.ones_like(w)) for w in _values(variables)) and (state.batch, state.epoch) == (20, 10)
    check_on_all_ranks(ok, lambda: f"after sync: {_values(variables)}, batch {state.batch}, epoch {state.epoch}")

    other = [np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([0.0, 0.0])]
    for var, value in zip(variables, other):
        var.assign(value)
    state.batch, state.epoch = 21, 11
    state.restore()
    ok = all(np.array_equal(w, np.ones_like(w)) for w in _values(variables)) and (state.batch, state.epoch) == (20, 10)
    check_on_all_ranks(ok, lambda: f"after restore: {_values(variables)}, batch {state.batch}")

    for var, value in zip(variables, other):
        var.assign(value)
    state.batch, state.epoch = 21, 11
    state.commit()
    state.restore()
    ok = all(np.array_equal(w, o) for w, o in zip(_values(variables), other)) and (state.batch, state.epoch) == (21, 11)
    check_on_all_ranks(ok, lambda: f"after commit + restore: {_values(variables)}, batch {state.batch}")


def _model(seed: int) -> keras.Model:
    keras.utils.set_random_seed(seed)
    model = keras.Sequential([keras.Input([3]), keras.layers.Dense(4), keras.layers.Dense(1)])
    model.compile(optimizer=hvd_keras.DistributedOptimizer(keras.optimizers.Adam(0.01)), loss="mse",
                  jit_compile=False)
    return model


def _all_values(model):
    variables = list(model.variables) + list(model.optimizer.variables)
    return [np.array(keras.ops.convert_to_numpy(v)) for v in variables]


def test_keras_state_holds_model_and_optimizer_variables():
    model = _model(seed=hvd.rank())  # different initial weights on every rank
    state = hvd.elastic.TensorFlowKerasState(model, epoch=hvd.rank())
    check_on_all_ranks(len(model.optimizer.variables) > 0, lambda: "the state did not build the optimizer")
    state.sync()
    synced = _all_values(model)
    reference = hvd.broadcast_object(synced, root_rank=0, name="keras_state.reference")
    ok = all(np.array_equal(a, b) for a, b in zip(synced, reference)) and state.epoch == 0
    check_on_all_ranks(ok, lambda: f"after sync the variables differ from rank 0's (epoch {state.epoch})")

    x = np.random.default_rng(hvd.rank()).normal(size=[8, 3]).astype(np.float32)
    model.fit(x, x[:, :1], batch_size=8, epochs=1, verbose=0)  # moves weights and Adam's moments
    trained = _all_values(model)
    check_on_all_ranks(any(not np.array_equal(a, b) for a, b in zip(trained, synced)), lambda: "fit changed nothing")
    state.restore()
    ok = all(np.array_equal(a, b) for a, b in zip(_all_values(model), synced))
    check_on_all_ranks(ok, lambda: "restore did not return model and optimizer to the last commit")
    model.fit(x, x[:, :1], batch_size=8, epochs=1, verbose=0)
    state.epoch = 5
    state.commit()
    committed = _all_values(model)
    model.fit(x, x[:, :1], batch_size=8, epochs=1, verbose=0)
    state.epoch = 6
    state.restore()
    ok = all(np.array_equal(a, b) for a, b in zip(_all_values(model), committed)) and state.epoch == 5
    check_on_all_ranks(ok, lambda: f"commit then restore: epoch {state.epoch}")


def test_keras_state_needs_a_built_model():
    model = keras.Sequential([keras.layers.Dense(1)])
    with pytest.raises(ValueError, match="built"):
        hvd_keras.elastic.KerasState(model, optimizer=keras.optimizers.SGD())


def test_run_rolls_back_and_retries_after_a_failure():
    variable = tf.Variable(np.full([3], float(hvd.rank())))
    state = hvd.elastic.TensorFlowState([variable], step=0)
    calls = []

    @hvd.elastic.run
    def train(state):
        calls.append(variable.numpy().copy())
        if len(calls) == 1:
            variable.assign(np.full([3], 99.0))
            state.step = 7
            raise hvd.HorovodInternalError("a peer was lost (simulated on every rank)")
        return hvd.allreduce(variable, op=hvd.Sum, name="after.retry").numpy()

    result = train(state)
    # First call: synced to rank 0's zeros. After the failure: restored (zeros), reset, synced.
    ok = (len(calls) == 2 and all(np.array_equal(c, np.zeros(3)) for c in calls) and state.step == 0
          and np.array_equal(result, np.zeros(3)) and hvd.is_initialized())
    check_on_all_ranks(ok, lambda: f"calls {calls}, step {state.step}, result {result}")


def test_run_counts_a_graph_error_as_a_failure_once_the_runtime_stopped():
    variable = tf.Variable(np.ones([2]))
    state = hvd.elastic.TensorFlowState([variable], epoch=0)
    reduce = tf.function(lambda x: hvd.allreduce(x, op=hvd.Sum, name="elastic.graph"))
    reduce(variable)  # traced while the runtime runs
    calls = []

    @hvd.elastic.run
    def train(state):
        calls.append(1)
        if len(calls) == 1:
            # The runtime stops under the script, as on a lost peer (every rank at once here).
            rt = basics.state.runtime
            rt.lib.korovod_shutdown(ctypes.c_void_p(rt.ptr))
            state.epoch = 3
        return reduce(variable).numpy()

    result = train(state)
    ok = len(calls) == 2 and np.array_equal(result, np.full(2, float(hvd.size()))) and state.epoch == 0
    check_on_all_ranks(ok, lambda: f"calls {len(calls)}, result {result}, epoch {state.epoch}")


def test_run_lets_other_errors_through():
    state = hvd.elastic.TensorFlowState([tf.Variable(1.0)])

    @hvd.elastic.run
    def train(state):
        raise KeyError("not korovod's")

    with pytest.raises(KeyError):
        train(state)


def test_keras_callbacks_commit_and_count_batches_and_epochs():
    model = _model(seed=0)
    commits = []

    class CountingState(hvd_keras.elastic.KerasState):
        def commit(self):
            commits.append((self.epoch, self.batch))
            super().commit()

    state = CountingState(model, batch=0, epoch=2)
    x = np.zeros([40, 3], np.float32)
    callbacks = [hvd_keras.elastic.CommitStateCallback(state, batches_per_commit=3),
                 hvd_keras.elastic.UpdateBatchStateCallback(state),
                 hvd_keras.elastic.UpdateEpochStateCallback(state)]
    model.fit(x, x[:, :1], batch_size=8, epochs=2, verbose=0, callbacks=callbacks)  # 5 batches an epoch
    # Commits after batches 3 and 6 (the count runs across epochs, as Horovod's) and at each
    # epoch end; the epoch counts on from the state's 2.
    check_on_all_ranks(state.epoch == 4 and state.batch == 0, lambda: f"epoch {state.epoch}, batch {state.batch}")
    check_on_all_ranks(len(commits) == 5, lambda: f"commits {commits}")
    model.fit(x, x[:, :1], batch_size=8, initial_epoch=state.epoch, epochs=state.epoch + 1, verbose=0,
              callbacks=callbacks)
    check_on_all_ranks(state.epoch == 5, lambda: f"with initial_epoch: epoch {state.epoch}")
