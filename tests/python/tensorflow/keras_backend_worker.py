"""One rank of a 2-process korovod.keras job on the Keras backend named by KERAS_BACKEND
(test_keras_backends.py starts it): model.fit with DistributedOptimizer and the callbacks, then
checks on every rank that (1) the broadcast made the differing initial weights equal, (2) the
metric average is the mean, (3) the result equals one process training on the combined batches,
(4) rank 0 alone wrote progress lines: the callbacks' (every batch, with fit's total and loss),
then, in a fit without them, the optimizer's (a host callback in jax's jitted step).
Prints KERAS-OK <backend> ... or KERAS-FAIL <reason>. Its argument lists the
backward_passes_per_step values to train with, one model.fit each (e.g. "1,2")."""

import json
import sys

import numpy as np
import keras

import korovod.keras as hvd
from korovod.common._state import state
from korovod.common.progress import PREFIX, ProgressReporter

BATCH, STEPS, EPOCHS = 8, 4, 3


def model(seed):
    keras.utils.set_random_seed(seed)
    return keras.Sequential([keras.Input((6,)), keras.layers.Dense(8, activation="tanh"), keras.layers.Dense(1)])


def main(passes_list) -> int:
    hvd.init()
    for passes in passes_list:
        if train(passes):
            return 1
    hvd.shutdown()
    return 0


def train(passes: int) -> int:
    n, r = hvd.size(), hvd.rank()
    rng = np.random.default_rng(3)
    x = rng.normal(size=(BATCH * n * STEPS, 6)).astype("float32")
    y = np.sin(x.sum(axis=1, keepdims=True))
    shard = np.concatenate([np.arange(s * BATCH * n + r * BATCH, s * BATCH * n + (r + 1) * BATCH)
                            for s in range(STEPS)])

    class RankMetric(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            logs["rank_metric"] = float(r + 1)

    seen = {}

    class Record(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            seen.update(logs)

    distributed = model(seed=100 + r)  # differs per rank until the broadcast
    distributed.compile(loss="mse", optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.1),
                                                                       backward_passes_per_step=passes))
    # The reference starts from rank 0's initial weights, which the callback broadcasts.
    reference = model(seed=100)
    reference.compile(loss="mse", optimizer=keras.optimizers.SGD(0.1))
    callbacks = [hvd.callbacks.BroadcastGlobalVariablesCallback(0), RankMetric(), hvd.callbacks.MetricAverageCallback(),
                 Record()]
    # The broadcast happens after the first batch (Horovod's timing): start both from rank 0's
    # weights so the comparison with one process is exact.
    hvd.callbacks.broadcast_variables(distributed.variables, 0)
    lines = []  # this process's progress lines, one per step
    state.progress = ProgressReporter(state._rank_and_size, lambda: 1e-9, write=lines.append)
    distributed.fit(x[shard], y[shard], batch_size=BATCH, epochs=EPOCHS, shuffle=False, verbose=0, callbacks=callbacks)
    reference.fit(x, y, batch_size=BATCH * n * passes, epochs=EPOCHS, shuffle=False, verbose=0)
    gathered = keras.ops.convert_to_numpy(hvd.allgather(distributed.get_weights()[0][None]))
    if not all(np.allclose(gathered[0], g) for g in gathered):
        print("KERAS-FAIL weights differ across ranks")
        return 1
    if abs(seen["rank_metric"] - (n + 1) / 2) > 1e-9:
        print(f"KERAS-FAIL metric average {seen['rank_metric']}")
        return 1
    loss_d = float(distributed.evaluate(x, y, verbose=0))
    loss_r = float(reference.evaluate(x, y, verbose=0))
    scale = 1.0 if passes == 1 else None
    if scale is not None and (abs(loss_d - loss_r) > 1e-4 * max(1.0, loss_r) or not all(
            np.allclose(a, b, rtol=1e-4, atol=1e-4) for a, b in zip(distributed.get_weights(),
                                                                    reference.get_weights()))):
        print(f"KERAS-FAIL loss {loss_d} vs one process {loss_r}")
        return 1
    distributed.fit(x[shard], y[shard], batch_size=BATCH, epochs=1, shuffle=False, verbose=0)
    problem = progress_problem([json.loads(line[len(PREFIX):]) for line in lines], r)
    if problem:
        print(f"KERAS-FAIL progress: {problem}")
        return 1
    print(f"KERAS-OK {keras.backend.backend()} passes={passes} loss {loss_d:.6f} one-process {loss_r:.6f}")
    return 0


def progress_problem(lines, rank: int) -> str:
    if rank != 0:
        return f"rank {rank} wrote {lines}" if lines else ""
    fit = [(line["step"], line["source"], line.get("total_steps")) for line in lines if line["source"] == "keras"]
    if fit != [(step, "keras", EPOCHS * STEPS) for step in range(1, EPOCHS * STEPS + 1)]:
        return f"the callbacks' lines: {fit}"
    if not all(isinstance(line.get("loss"), float) for line in lines[:len(fit)]):
        return f"a callbacks' line without a loss: {lines[:len(fit)]}"
    after = [(line["step"], line["source"]) for line in lines[len(fit):]]
    if after != [(EPOCHS * STEPS + step, "optimizer") for step in range(1, STEPS + 1)]:
        return f"the optimizer's lines after the fit with callbacks: {after}"
    return ""


if __name__ == "__main__":
    sys.exit(main([int(p) for p in (sys.argv[1] if len(sys.argv) > 1 else "1").split(",")]))
