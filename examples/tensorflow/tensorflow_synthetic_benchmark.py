#!/usr/bin/env korovod-tf-python
"""Synthetic training throughput with korovod.tensorflow, in the shape of Horovod's
examples/tensorflow2/tensorflow2_synthetic_benchmark.py: fixed random data, a Keras model defined
here (the same two as examples/pytorch/pytorch_synthetic_benchmark.py), a tf.function training
step with DistributedGradientTape, and images (samples) per second per rank and in total with a
95% spread (1.96 x the standard deviation of the iterations).

    mpirun -n 2 --bind-to none tensorflow_synthetic_benchmark.py --model mlp --batch-size 64

or as an MPIJob (examples/tensorflow/tensorflow_synthetic_benchmark.yaml).
"""

import argparse
import os
import statistics
import sys
import timeit

NUM_CLASSES = 1000


def mlp(keras, width: int = 2048, hidden_layers: int = 3):
    """width -> width x hidden_layers -> 1000 classes: 14.6 M parameters at the defaults."""
    layers = [keras.Input((width,))] + [keras.layers.Dense(width, activation="relu") for _ in range(hidden_layers)]
    return keras.Sequential(layers + [keras.layers.Dense(NUM_CLASSES)])


def convnet(keras):
    """A VGG-style network for 64x64x3 images: four conv blocks and a classifier (2.1 M)."""
    layers = [keras.Input((64, 64, 3))]
    for width in (64, 128, 256, 512):
        layers += [keras.layers.Conv2D(width, 3, padding="same", use_bias=False), keras.layers.BatchNormalization(),
                   keras.layers.ReLU(), keras.layers.MaxPooling2D(2)]
    return keras.Sequential(layers + [keras.layers.GlobalAveragePooling2D(), keras.layers.Dense(NUM_CLASSES)])


MODELS = {"mlp": (mlp, (2048,)), "convnet": (convnet, (64, 64, 3))}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="TensorFlow synthetic benchmark on korovod.tensorflow",
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--fp16-allreduce", action="store_true", help="use fp16 compression during allreduce")
    p.add_argument("--model", choices=sorted(MODELS), default="mlp", help="model to benchmark")
    p.add_argument("--batch-size", type=int, default=32, help="input batch size per rank")
    p.add_argument("--num-warmup-batches", type=int, default=10,
                   help="number of warm-up batches that don't count towards the benchmark")
    p.add_argument("--num-batches-per-iter", type=int, default=10, help="number of batches per benchmark iteration")
    p.add_argument("--num-iters", type=int, default=10, help="number of benchmark iterations")
    p.add_argument("--num-threads", type=int, default=0,
                   help="TensorFlow intra-op threads per rank (0: TensorFlow's default)")
    p.add_argument("--eager", action="store_true", help="run the training step eagerly, not as a tf.function")
    p.add_argument("--no-cuda", action="store_true", help="run on the CPU even where a GPU is visible")
    p.add_argument("--use-adasum", action="store_true",
                   help="reduce gradients with Adasum instead of averaging them (a power-of-2 number of ranks; "
                        "the learning rate is not scaled by the size)")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if args.no_cuda:
        os.environ["CUDA_VISIBLE_DEVICES"] = ""
    import keras
    import tensorflow as tf

    import korovod.tensorflow as hvd

    hvd.init()
    gpus = tf.config.list_physical_devices("GPU")
    if gpus:  # one GPU per rank on the node
        tf.config.experimental.set_memory_growth(gpus[hvd.local_rank() % len(gpus)], True)
        tf.config.set_visible_devices(gpus[hvd.local_rank() % len(gpus)], "GPU")
    if args.num_threads > 0:
        tf.config.threading.set_intra_op_parallelism_threads(args.num_threads)
        tf.config.threading.set_inter_op_parallelism_threads(max(2, args.num_threads))
    build, sample_shape = MODELS[args.model]
    model = build(keras)
    optimizer = keras.optimizers.SGD(0.01 * (1 if args.use_adasum else hvd.size()))
    compression = hvd.Compression.fp16 if args.fp16_allreduce else hvd.Compression.none
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    data = tf.random.uniform([args.batch_size, *sample_shape])
    target = tf.random.uniform([args.batch_size], minval=0, maxval=NUM_CLASSES, dtype=tf.int64)

    def step(first_batch):
        with tf.GradientTape() as tape:
            loss = loss_fn(target, model(data, training=True))
        tape = hvd.DistributedGradientTape(tape, compression=compression,
                                           op=hvd.Adasum if args.use_adasum else hvd.Average)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        if first_batch:
            hvd.broadcast_variables(model.variables, root_rank=0)
            hvd.broadcast_variables(optimizer.variables, root_rank=0)

    step_fn = step if args.eager else tf.function(step)

    def log(s: str) -> None:
        if hvd.rank() == 0:
            print(s, flush=True)

    device = "GPU" if gpus else "CPU"
    step_fn(True)
    log(f"Model: {args.model} ({model.count_params()} parameters)")
    log(f"Batch size: {args.batch_size}")
    log(f"Number of {device}s: {hvd.size()}")
    log("Running warmup...")
    timeit.timeit(lambda: step_fn(False), number=args.num_warmup_batches)
    log("Running benchmark...")
    img_secs = []
    for i in range(args.num_iters):
        seconds = timeit.timeit(lambda: step_fn(False), number=args.num_batches_per_iter)
        img_sec = args.batch_size * args.num_batches_per_iter / seconds
        log(f"Iter #{i}: {img_sec:.1f} img/sec per {device}")
        img_secs.append(img_sec)
    mean = statistics.fmean(img_secs)
    conf = 1.96 * statistics.pstdev(img_secs)
    log(f"Img/sec per {device}: {mean:.1f} +-{conf:.1f}")
    log(f"Total img/sec on {hvd.size()} {device}(s): {hvd.size() * mean:.1f} +-{hvd.size() * conf:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
