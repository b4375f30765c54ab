#!/usr/bin/env korovod-tf-python
"""Elastic data-parallel training on scikit-learn's digits with korovod.tensorflow.elastic.

The shape of Horovod's examples/elastic/tensorflow2/tensorflow2_mnist_elastic.py on the digits
data set that ships inside scikit-learn (nothing is downloaded). Workers may join, leave or die
while it trains: the training function runs inside hvd.elastic.run with a TensorFlowKerasState
holding the model, the optimizer and the counters (epoch, step, and `offset`: the samples of the
epoch already used). Every --batches-per-commit steps the state is committed; a worker that dies
makes the others roll back to the last commit, and a worker that joins gets the others' state
from rank 0. A step takes the next batch-size x workers samples of the epoch's permutation, so a
partly done epoch resumes on the new set of workers without repeating or skipping samples; a
reset callback rescales the learning rate with the number of workers.

Run it under korovodrun's elastic driver, for example with a discovery script:

    korovodrun -np 2 --min-np 1 --max-np 4 --host-discovery-script ./discover_hosts.sh \\
        tensorflow_elastic_digits.py --epochs 20

It also runs as a fixed-size job (mpirun, korovodrun -np N) or alone. See docs/elastic.md.
"""

import argparse
import hashlib
import json
import os
import time


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="Train a convnet on scikit-learn's digits with korovod.tensorflow.elastic "
        "(run under korovodrun's elastic driver, or any launcher).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--epochs", type=int, default=15, help="passes over the training set")
    p.add_argument("--batch-size", type=int, default=32, help="samples per step on each rank")
    p.add_argument("--lr", type=float, default=0.02,
                   help="SGD learning rate for one rank; scaled by the number of ranks after every reset")
    p.add_argument("--momentum", type=float, default=0.9, help="SGD momentum")
    p.add_argument("--batches-per-commit", type=int, default=5,
                   help="steps between commits of the elastic state (a failure redoes at most this many)")
    p.add_argument("--test-fraction", type=float, default=0.2, help="share of the data set held out for testing")
    p.add_argument("--seed", type=int, default=42, help="seed of the split, the shuffling and the initial weights")
    p.add_argument("--num-threads", type=int, default=1,
                   help="TensorFlow intra-op threads per rank (0 leaves TensorFlow's default)")
    p.add_argument("--stop-file", metavar="PATH", default="",
                   help="end training at the next epoch end once this file exists (rank 0 looks, all ranks follow)")
    p.add_argument("--events", metavar="DIR", default="",
                   help="each worker process appends one JSON line per resume, commit and end to "
                   "DIR/<pid>.jsonl (what the elastic tests check)")
    return p.parse_args(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import keras
    import numpy as np
    import tensorflow as tf

    import korovod.tensorflow as hvd
    from keras_digits import build_model, load_split, set_threads

    hvd.init()
    set_threads(args.num_threads)
    keras.utils.set_random_seed(args.seed)  # the same initial weights everywhere (rank 0's win anyway)
    (x_train, y_train), (x_test, y_test) = load_split(args.test_fraction, args.seed)
    x_train, x_test = x_train.astype(np.float32), x_test.astype(np.float32)

    model = build_model()
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    optimizer = keras.optimizers.SGD(args.lr * hvd.size(), momentum=args.momentum)

    @tf.function
    def train_step(images, labels):
        with tf.GradientTape() as tape:
            loss = loss_fn(labels, model(images, training=True))
        tape = hvd.DistributedGradientTape(tape)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    def evaluate(name: str):
        """Test loss and accuracy over the whole test set (each rank scores every size-th sample)."""
        mine = slice(hvd.rank(), None, hvd.size())
        logits = model(x_test[mine], training=False)
        sums = np.array([float(loss_fn(y_test[mine], logits)) * len(y_test[mine]),
                         float(np.sum(np.argmax(logits, axis=1) == y_test[mine])), float(len(y_test[mine]))])
        loss_sum, correct, total = hvd.allreduce(tf.constant(sums), op=hvd.Sum, name=name).numpy().tolist()
        return loss_sum / total, correct / total

    def digest() -> str:
        h = hashlib.sha256()
        for variable in model.variables:
            h.update(np.ascontiguousarray(variable.numpy()).tobytes())
        return h.hexdigest()[:16]

    events_path = os.path.join(args.events, f"{os.getpid()}.jsonl") if args.events else ""
    if events_path:
        os.makedirs(args.events, exist_ok=True)

    def event(kind: str, state, **fields) -> None:
        if events_path:
            record = dict(event=kind, time=time.time(), pid=os.getpid(),
                          worker=os.environ.get("KOROVOD_ELASTIC_WORKER_ID", ""), rank=hvd.rank(),
                          size=hvd.size(), epoch=state.epoch, step=state.step, **fields)
            with open(events_path, "a") as f:
                f.write(json.dumps(record) + "\n")

    def on_state_reset():
        # One step averages the gradients of size ranks: scale the learning rate with them.
        optimizer.learning_rate.assign(args.lr * hvd.size())

    def stop_requested() -> bool:
        return bool(args.stop_file) and hvd.broadcast_object(
            os.path.exists(args.stop_file) if hvd.rank() == 0 else None, root_rank=0, name="stop_file")

    # No collective may run between here and train(): a worker that joins runs the state's sync
    # first, while the others are in theirs.
    state = hvd.elastic.TensorFlowKerasState(model, optimizer, epoch=0, step=0, offset=0)
    state.register_reset_callbacks([on_state_reset])

    @hvd.elastic.run
    def train(state):
        event("resume", state, digest=digest())
        if hvd.rank() == 0:
            print(f"{hvd.size()} worker(s): epoch {state.epoch}, step {state.step}, "
                  f"{state.offset} of {len(x_train)} samples of the epoch done", flush=True)
        while state.epoch < args.epochs:
            order = np.random.default_rng(args.seed + state.epoch).permutation(len(x_train))
            while state.offset + args.batch_size * hvd.size() <= len(order):
                chunk = order[state.offset:state.offset + args.batch_size * hvd.size()]
                mine = chunk[hvd.rank()::hvd.size()]
                train_step(x_train[mine], y_train[mine])
                state.offset += len(chunk)
                state.step += 1
                if state.step % args.batches_per_commit == 0:
                    state.commit()
                    event("commit", state)
            test_loss, test_acc = evaluate(f"test.{state.epoch}")
            if hvd.rank() == 0:
                print(f"epoch {state.epoch + 1}/{args.epochs}: test loss {test_loss:.4f} accuracy "
                      f"{test_acc:.4f} ({hvd.size()} worker(s), step {state.step})", flush=True)
            state.epoch += 1
            state.offset = 0
            state.commit()
            event("commit", state)
            if stop_requested():
                break
        return evaluate("test.final")

    start = time.monotonic()
    test_loss, test_acc = train(state)
    final = digest()
    event("end", state, digest=final, accuracy=test_acc)
    print(f"rank {hvd.rank()} of {hvd.size()}: final test accuracy {test_acc:.4f} (loss {test_loss:.4f}), "
          f"{state.epoch} epochs, {state.step} steps in {time.monotonic() - start:.1f}s, weights {final}",
          flush=True)


if __name__ == "__main__":
    main()
