#!/usr/bin/env korovod-tf-python
"""Data-parallel Keras 3 training on scikit-learn's digits with korovod.keras, in the shape of
Horovod's examples/tensorflow2/tensorflow2_keras_mnist.py.

The data set (1797 8x8 images of handwritten digits, 10 classes) ships inside scikit-learn, so
nothing is downloaded. Every rank splits it the same way and trains model.fit on its own shard
of the training set; DistributedOptimizer averages the gradients, the callbacks broadcast rank
0's initial state, average the epoch metrics and warm the learning rate up. Run it with any MPI
launcher, for example:

    mpirun -n 2 --bind-to none keras_digits.py --epochs 12

or as an MPIJob (examples/tensorflow/keras_digits.yaml). The shebang runs `korovod-tf-python`
from PATH: the Python that has TensorFlow (examples/tensorflow/README.md).
"""

import argparse
import os
import time


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="Train a convnet on scikit-learn's digits with korovod.keras (Keras 3 model.fit, "
        "data parallel: run under mpirun / korovodrun / an MPIJob).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--epochs", type=int, default=12, help="passes over the training set")
    p.add_argument("--batch-size", type=int, default=32, help="samples per step on each rank")
    p.add_argument("--lr", type=float, default=0.05, help="learning rate for one rank; scaled by the number of ranks")
    p.add_argument("--warmup-epochs", type=int, default=2, help="epochs of gradual learning-rate warmup")
    p.add_argument("--test-fraction", type=float, default=0.2, help="share of the data set held out for testing")
    p.add_argument("--seed", type=int, default=42, help="seed of the split, the shuffling and the initial weights")
    p.add_argument("--num-threads", type=int, default=1,
                   help="TensorFlow intra-op threads per rank (ranks share a node's cores; 0 leaves the default)")
    p.add_argument("--fp16-allreduce", action="store_true", help="compress gradients to float16 for the allreduce")
    p.add_argument("--checkpoint", metavar="PATH", default="",
                   help="rank 0 saves the model here (.keras) after every epoch")
    return p.parse_args(argv)


def set_threads(num_threads: int) -> None:
    """num_threads intra-op threads (and at least 2 inter-op threads, so a collective that waits
    never holds the only one) per rank; 0 leaves TensorFlow's defaults. Ranks share the cores."""
    import tensorflow as tf

    if num_threads > 0:
        tf.config.threading.set_intra_op_parallelism_threads(num_threads)
        tf.config.threading.set_inter_op_parallelism_threads(max(2, num_threads))


def load_split(test_fraction: float, seed: int):
    """(x_train, y_train), (x_test, y_test): the same split on every rank."""
    import numpy as np
    from sklearn.datasets import load_digits  # bundled with scikit-learn, read from disk

    digits = load_digits()
    images = (digits.images[..., None] / 16.0).astype("float32")
    order = np.random.default_rng(seed).permutation(len(images))
    n_test = int(len(images) * test_fraction)
    test, train = order[:n_test], order[n_test:]
    return (images[train], digits.target[train]), (images[test], digits.target[test])


def build_model():
    import keras

    return keras.Sequential([
        keras.Input((8, 8, 1)),
        keras.layers.Conv2D(32, 3, padding="same", activation="relu"),
        keras.layers.Conv2D(64, 3, padding="same", activation="relu"),
        keras.layers.MaxPooling2D(2),
        keras.layers.Dropout(0.25),
        keras.layers.Flatten(),
        keras.layers.Dense(128, activation="relu"),
        keras.layers.Dense(10),
    ])


def main(argv=None) -> None:
    args = parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import keras

    import korovod.keras as hvd

    hvd.init()
    set_threads(args.num_threads)
    keras.utils.set_random_seed(args.seed + hvd.rank())  # differs per rank: the broadcast aligns them
    is_root = hvd.rank() == 0
    (x_train, y_train), (x_test, y_test) = load_split(args.test_fraction, args.seed)
    # Each rank trains on every size-th sample; equal shard sizes keep the ranks' step counts equal.
    per_rank = len(x_train) // hvd.size()
    x_shard = x_train[hvd.rank()::hvd.size()][:per_rank]
    y_shard = y_train[hvd.rank()::hvd.size()][:per_rank]

    model = build_model()
    scaled_lr = args.lr * hvd.size()
    compression = hvd.Compression.fp16 if args.fp16_allreduce else hvd.Compression.none
    optimizer = hvd.DistributedOptimizer(keras.optimizers.SGD(scaled_lr, momentum=0.9), compression=compression)
    # jit_compile=False: korovod's collectives are graph ops XLA cannot compile (Keras turns XLA on
    # by itself on GPUs).
    model.compile(optimizer=optimizer, jit_compile=False, metrics=["accuracy"],
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    callbacks = [
        hvd.callbacks.BroadcastGlobalVariablesCallback(0),  # every rank continues from rank 0's state
        hvd.callbacks.MetricAverageCallback(),  # epoch metrics are the mean over the ranks
        hvd.callbacks.LearningRateWarmupCallback(initial_lr=scaled_lr, warmup_epochs=args.warmup_epochs),
    ]
    if args.checkpoint and is_root:
        callbacks.append(keras.callbacks.ModelCheckpoint(args.checkpoint))  # rank 0 alone writes

    class EpochLog(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.start = time.monotonic()

        def on_epoch_end(self, epoch, logs=None):
            if is_root:
                print(f"epoch {epoch + 1:2d}/{args.epochs}: train loss {logs['loss']:.4f} accuracy "
                      f"{logs['accuracy']:.4f} | lr {logs.get('lr', 0):.4f} ({time.monotonic() - self.start:.1f}s)",
                      flush=True)

    callbacks.append(EpochLog())
    if is_root:
        print(f"digits: {len(x_train)} training and {len(x_test)} test samples, {hvd.size()} rank(s), "
              f"batch {args.batch_size} per rank, lr {scaled_lr:g}, {model.count_params()} parameters", flush=True)
    start = time.monotonic()
    model.fit(x_shard, y_shard, batch_size=args.batch_size, epochs=args.epochs, callbacks=callbacks, verbose=0)
    # Every rank scores every size-th test sample; the sums over ranks are exact.
    mine = slice(hvd.rank(), None, hvd.size())
    logits = model.predict(x_test[mine], verbose=0)
    correct = float((logits.argmax(axis=1) == y_test[mine]).sum())
    totals = keras.ops.convert_to_numpy(hvd.allreduce([correct, float(len(y_test[mine]))], op=hvd.Sum,
                                                      name="test_accuracy"))
    if is_root:
        print(f"final test accuracy: {totals[0] / totals[1]:.4f} ({int(totals[0])}/{int(totals[1])} test samples, "
              f"{hvd.size()} rank(s), {time.monotonic() - start:.1f}s)", flush=True)


if __name__ == "__main__":
    main()
