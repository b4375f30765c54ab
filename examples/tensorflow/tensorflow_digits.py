#!/usr/bin/env korovod-tf-python
"""Data-parallel training with a tf.GradientTape loop and korovod.tensorflow, in the shape of
Horovod's examples/tensorflow2/tensorflow2_mnist.py, on scikit-learn's digits (bundled; nothing
is downloaded).

The training step is a tf.function: DistributedGradientTape averages the gradients inside it
(one graph op for all of them), and after the first step every rank takes rank 0's model and
optimizer variables (hvd.broadcast_variables). Run it with any MPI launcher:

    mpirun -n 2 --bind-to none tensorflow_digits.py --epochs 12

or as an MPIJob (examples/tensorflow/tensorflow_digits.yaml).
"""

import argparse
import os
import time


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="Train a convnet on scikit-learn's digits with a tf.GradientTape loop and korovod.tensorflow "
        "(data parallel: run under mpirun / korovodrun / an MPIJob).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--epochs", type=int, default=12, help="passes over the training set")
    p.add_argument("--batch-size", type=int, default=32, help="samples per step on each rank")
    p.add_argument("--lr", type=float, default=0.001, help="Adam learning rate for one rank; scaled by the ranks")
    p.add_argument("--test-fraction", type=float, default=0.2, help="share of the data set held out for testing")
    p.add_argument("--seed", type=int, default=42, help="seed of the split, the shuffling and the initial weights")
    p.add_argument("--num-threads", type=int, default=1,
                   help="TensorFlow intra-op threads per rank (0 leaves TensorFlow's default)")
    p.add_argument("--fp16-allreduce", action="store_true", help="compress gradients to float16 for the allreduce")
    return p.parse_args(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import keras
    import tensorflow as tf

    import korovod.tensorflow as hvd
    from keras_digits import build_model, load_split, set_threads

    hvd.init()
    set_threads(args.num_threads)
    keras.utils.set_random_seed(args.seed + hvd.rank())
    is_root = hvd.rank() == 0
    (x_train, y_train), (x_test, y_test) = load_split(args.test_fraction, args.seed)
    per_rank = len(x_train) // hvd.size()
    dataset = (tf.data.Dataset.from_tensor_slices((x_train[hvd.rank()::hvd.size()][:per_rank],
                                                   y_train[hvd.rank()::hvd.size()][:per_rank]))
               .shuffle(per_rank, seed=args.seed).batch(args.batch_size, drop_remainder=True))

    model = build_model()
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    optimizer = keras.optimizers.Adam(args.lr * hvd.size())
    compression = hvd.Compression.fp16 if args.fp16_allreduce else hvd.Compression.none

    @tf.function
    def train_step(images, labels, first_batch):
        with tf.GradientTape() as tape:
            logits = model(images, training=True)
            loss = loss_fn(labels, logits)
        tape = hvd.DistributedGradientTape(tape, compression=compression)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        # After the first step (when the optimizer's state exists) every rank takes rank 0's.
        if first_batch:
            hvd.broadcast_variables(model.variables, root_rank=0)
            hvd.broadcast_variables(optimizer.variables, root_rank=0)
        return loss, tf.reduce_sum(tf.cast(tf.argmax(logits, axis=1) == tf.cast(labels, tf.int64), tf.float32))

    if is_root:
        print(f"digits: {len(x_train)} training and {len(x_test)} test samples, {hvd.size()} rank(s), "
              f"batch {args.batch_size} per rank, lr {args.lr * hvd.size():g}", flush=True)
    start, first = time.monotonic(), True
    for epoch in range(1, args.epochs + 1):
        t0 = time.monotonic()
        loss_sum = correct = seen = 0.0
        for images, labels in dataset:
            loss, hits = train_step(images, labels, first)
            first = False
            loss_sum += float(loss) * len(labels)
            correct += float(hits)
            seen += len(labels)
        totals = hvd.allreduce(tf.constant([loss_sum, correct, seen], tf.float64), op=hvd.Sum,
                               name=f"train_metrics.{epoch}").numpy()
        if is_root:
            print(f"epoch {epoch:2d}/{args.epochs}: train loss {totals[0] / totals[2]:.4f} accuracy "
                  f"{totals[1] / totals[2]:.4f} ({time.monotonic() - t0:.1f}s)", flush=True)
    mine = slice(hvd.rank(), None, hvd.size())
    logits = model(x_test[mine], training=False)
    hits = float(tf.reduce_sum(tf.cast(tf.argmax(logits, axis=1) == y_test[mine], tf.float64)))
    totals = hvd.allreduce(tf.constant([hits, len(y_test[mine])], tf.float64), op=hvd.Sum, name="test").numpy()
    if is_root:
        print(f"final test accuracy: {totals[0] / totals[1]:.4f} ({int(totals[0])}/{int(totals[1])} test samples, "
              f"{hvd.size()} rank(s), {time.monotonic() - start:.1f}s)", flush=True)


if __name__ == "__main__":
    main()
