#!/usr/bin/env python3
"""One process of the Keras training-throughput benchmark (bench/tensorflow/run starts it).

--mode alone-fit / alone-loop: one process, plain Keras (the compute-only references)
--mode korovod-fit:   a rank of an mpirun job: model.fit with korovod.keras.DistributedOptimizer
--mode korovod-loop:  a rank of an mpirun job: tf.function step with DistributedGradientTape
--mode mwms-loop:     a worker of tf.distribute.MultiWorkerMirroredStrategy (TF_CONFIG set by the
                      runner): strategy.run of the same step

The same Keras model, per-rank batch, SGD and synthetic batch everywhere; one intra-op and one
inter-op thread per process. --warmup steps, then --steps timed steps; rank 0 prints one JSON
line: {"mode", "ranks", "batch", "steps", "seconds", "samples_per_second"} (samples over all
ranks).
"""

import argparse
import json
import os
import sys
import time


MODES = ("alone-fit", "korovod-fit", "alone-loop", "korovod-loop", "mwms-loop")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--mode", choices=MODES, required=True)
    p.add_argument("--batch", type=int, default=64, help="samples per step on each rank")
    p.add_argument("--steps", type=int, default=40, help="timed steps")
    p.add_argument("--warmup", type=int, default=5, help="steps before the timed ones")
    p.add_argument("--width", type=int, default=2048, help="MLP width (2048: 12.6 M parameters)")
    p.add_argument("--threads", type=int, default=1, help="intra-op and inter-op threads per process")
    return p.parse_args(argv)


def build_model(keras, width: int):
    layers = [keras.Input((width,))] + [keras.layers.Dense(width, activation="relu") for _ in range(3)]
    return keras.Sequential(layers + [keras.layers.Dense(10)])


def main(argv=None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    import keras

    ranks, rank, strategy, hvd = 1, 0, None, None
    if args.mode.startswith("korovod"):
        import korovod.keras as hvd

        hvd.init()
        ranks, rank = hvd.size(), hvd.rank()
    elif args.mode == "mwms-loop":
        strategy = tf.distribute.MultiWorkerMirroredStrategy()
        ranks = strategy.num_replicas_in_sync
        rank = json.loads(os.environ["TF_CONFIG"])["task"]["index"]

    # The same initial weights everywhere, each rank its own batch: the ranks' weights stay equal
    # only if the gradients were reduced, which the checksum every rank prints lets the runner check.
    keras.utils.set_random_seed(1)
    x = tf.random.stateless_uniform([args.batch, args.width], seed=[rank, 7])
    y = tf.random.stateless_uniform([args.batch], seed=[rank, 8], maxval=10, dtype=tf.int64)
    if args.mode.endswith("-fit"):
        run_steps, weights_of = _fit_runner(args, keras, tf, hvd, x, y)
    elif strategy is not None:
        run_steps, weights_of = _mwms_runner(args, keras, tf, strategy, x, y)
    else:
        run_steps, weights_of = _loop_runner(args, keras, tf, hvd, x, y)
    seconds = run_steps(args.warmup, args.steps)
    checksum = float(sum(float(tf.reduce_sum(tf.cast(w, tf.float64))) for w in weights_of()))
    print(json.dumps({"mode": args.mode, "rank": rank, "ranks": ranks, "batch": args.batch, "steps": args.steps,
                      "seconds": seconds, "samples_per_second": args.batch * ranks * args.steps / seconds,
                      "weights_checksum": checksum}), flush=True)
    return 0


def _timed(run):
    """run(count) runs `count` steps: the seconds of `steps` timed steps after `warmup` ones."""
    def run_steps(warmup, steps):
        run(warmup)
        start = time.perf_counter()
        run(steps)
        return time.perf_counter() - start

    return run_steps


def _fit_runner(args, keras, tf, hvd, x, y):
    """model.fit (korovod.keras or plain Keras): one call of warmup + steps steps, timed by a
    callback from the first timed step's start to the last one's end. Not around fit(): when
    fit() returns TensorFlow deletes its tf.data iterator, which waits for the autotune thread's
    next wake-up (up to ~10 s here with two processes, korovod or not; docs/benchmarks.md)."""
    model = build_model(keras, args.width)
    optimizer = keras.optimizers.SGD(0.01)
    callbacks = []
    if hvd is not None:
        optimizer = hvd.DistributedOptimizer(optimizer)
        callbacks = [hvd.callbacks.BroadcastGlobalVariablesCallback(0)]
    model.compile(optimizer=optimizer, jit_compile=False,
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    data = tf.data.Dataset.from_tensors((x, y)).repeat()

    class StepClock(keras.callbacks.Callback):
        def __init__(self, first):
            super().__init__()
            self.first, self.start, self.end = first, None, None

        def on_train_batch_begin(self, batch, logs=None):
            if batch == self.first:
                self.start = time.perf_counter()

        def on_train_batch_end(self, batch, logs=None):
            self.end = time.perf_counter()

    def run_steps(warmup, steps):
        clock = StepClock(warmup)
        model.fit(data, steps_per_epoch=warmup + steps, epochs=1, verbose=0, callbacks=callbacks + [clock])
        return clock.end - clock.start

    return run_steps, lambda: model.trainable_variables


def _loop_runner(args, keras, tf, hvd, x, y):
    """A tf.function step with a GradientTape (korovod: DistributedGradientTape)."""
    model = build_model(keras, args.width)
    optimizer = keras.optimizers.SGD(0.01)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        if hvd is not None:
            import korovod.tensorflow as hvd_tf

            tape = hvd_tf.DistributedGradientTape(tape)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))

    def run(steps):
        for _ in range(steps):
            step()

    return _timed(run), lambda: model.trainable_variables


def _mwms_runner(args, keras, tf, strategy, x, y):
    """MultiWorkerMirroredStrategy's custom training loop (strategy.run in a tf.function): Keras
    3.15's model.fit fails under it on TensorFlow 2.21 (docs/benchmarks.md)."""
    with strategy.scope():
        model = build_model(keras, args.width)
        optimizer = keras.optimizers.SGD(0.01)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None)
    global_batch = args.batch * strategy.num_replicas_in_sync

    def replica_step():
        with tf.GradientTape() as tape:
            loss = tf.nn.compute_average_loss(loss_fn(y, model(x, training=True)), global_batch_size=global_batch)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))

    @tf.function
    def step():
        strategy.run(replica_step)

    def run(steps):
        for _ in range(steps):
            step()

    return _timed(run), lambda: model.trainable_variables


if __name__ == "__main__":
    sys.exit(main())
