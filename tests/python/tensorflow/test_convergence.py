"""Convergence: model.fit on N ranks with korovod.keras ends where one process training on the
combined batches ends (the reference runs on every rank, locally, with plain Keras).

Stated tolerance: weights and final loss agree to a relative 1e-4 (float32 sums in another
order; the training itself is deterministic)."""

import numpy as np
import keras

import korovod.keras as hvd
from tf_helpers import check_on_all_ranks

ROWS, FEATURES, BATCH_PER_RANK, EPOCHS = 96, 8, 8, 4
TOLERANCE = 1e-4


def _data():
    rng = np.random.default_rng(7)
    x = rng.normal(size=(ROWS, FEATURES)).astype("float32")
    w = rng.normal(size=(FEATURES, 1)).astype("float32")
    return x, np.tanh(x @ w) + 0.1 * x[:, :1]


def _model():
    keras.utils.set_random_seed(11)
    return keras.Sequential([keras.Input((FEATURES,)), keras.layers.Dense(16, activation="tanh"),
                             keras.layers.Dense(1)])


def _shard(array, rank, size):
    """Rank r's rows of every global batch (BATCH_PER_RANK * size rows), in step order."""
    step_rows = BATCH_PER_RANK * size
    steps = len(array) // step_rows
    return np.concatenate([array[s * step_rows + rank * BATCH_PER_RANK:s * step_rows + (rank + 1) * BATCH_PER_RANK]
                           for s in range(steps)])


def test_distributed_fit_matches_one_process_on_the_combined_batch():
    n, r = hvd.size(), hvd.rank()
    x, y = _data()

    distributed = _model()
    distributed.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.05, momentum=0.9)), loss="mse")
    distributed.fit(_shard(x, r, n), _shard(y, r, n), batch_size=BATCH_PER_RANK, epochs=EPOCHS, shuffle=False,
                    verbose=0, callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0)])

    reference = _model()
    reference.compile(optimizer=keras.optimizers.SGD(0.05, momentum=0.9), loss="mse")
    rows = (ROWS // (BATCH_PER_RANK * n)) * BATCH_PER_RANK * n
    reference.fit(x[:rows], y[:rows], batch_size=BATCH_PER_RANK * n, epochs=EPOCHS, shuffle=False, verbose=0)

    loss_distributed = float(distributed.evaluate(x, y, verbose=0))
    loss_reference = float(reference.evaluate(x, y, verbose=0))
    weights_ok = all(np.allclose(a, b, rtol=TOLERANCE, atol=TOLERANCE)
                     for a, b in zip(distributed.get_weights(), reference.get_weights()))
    check_on_all_ranks(abs(loss_distributed - loss_reference) <= TOLERANCE * max(1.0, loss_reference) and weights_ok,
                       lambda: f"{n} ranks: loss {loss_distributed:.7f}, one process: {loss_reference:.7f}, "
                               f"weights equal: {weights_ok}")
    print(f"convergence: {n} rank(s) loss {loss_distributed:.7f}, one process {loss_reference:.7f}")
