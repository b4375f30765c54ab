#!/usr/bin/python3
"""Elastic data-parallel training of a small convnet on scikit-learn's digits (korovod.torch.elastic).

The shape of Horovod's examples/elastic/pytorch/pytorch_mnist_elastic.py on the digits data set
that ships inside scikit-learn (nothing is downloaded). Workers may join, leave or die while it
trains: the training function runs inside hvd.elastic.run with a TorchState holding the model,
the optimizer, an ElasticSampler and the epoch and step counters. Every --batches-per-commit
steps the state is committed; a worker that dies makes the others roll back to the last commit,
and a worker that joins is brought to the others' state from rank 0. The ElasticSampler resumes
a partly done epoch on the new set of workers without repeating or skipping samples, and a
reset callback rescales the learning rate with the number of workers.

Run it under korovodrun's elastic driver, for example with a discovery script:

    korovodrun -np 2 --min-np 1 --max-np 4 --host-discovery-script ./discover_hosts.sh \\
        pytorch_elastic_digits.py --epochs 40

or as an MPIJob (examples/pytorch/pytorch_elastic_digits.yaml). It also runs as a fixed-size job
(mpirun, korovodrun -np N) or alone. See docs/elastic.md.
"""

import argparse
import hashlib
import json
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.data

import korovod.torch as hvd


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="Train a convnet on scikit-learn's digits with korovod.torch.elastic "
        "(run under korovodrun's elastic driver, or any launcher).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--epochs", type=int, default=15, help="passes over the training set")
    p.add_argument("--batch-size", type=int, default=32, help="samples per step on each rank")
    p.add_argument("--lr", type=float, default=0.02,
                   help="learning rate for one rank; scaled by the number of ranks after every reset")
    p.add_argument("--momentum", type=float, default=0.9, help="SGD momentum")
    p.add_argument("--batches-per-commit", type=int, default=5,
                   help="steps between commits of the elastic state (a failure redoes at most this many)")
    p.add_argument("--test-fraction", type=float, default=0.2,
                   help="share of the data set held out for testing")
    p.add_argument("--seed", type=int, default=42,
                   help="seed of the split, the shuffling and the initial weights")
    p.add_argument("--num-threads", type=int, default=1,
                   help="torch intra-op threads per rank (0 leaves torch's default)")
    p.add_argument("--stop-file", metavar="PATH", default="",
                   help="end training at the next epoch end once this file exists (rank 0 looks, "
                   "all ranks follow)")
    p.add_argument("--events", metavar="DIR", default="",
                   help="each worker process appends one JSON line per resume, commit and end to "
                   "DIR/<pid>.jsonl (what the elastic tests check)")
    return p.parse_args(argv)


class DigitsNet(nn.Module):
    """Two 3x3 convolutions and a classifier for 1x8x8 images (as in pytorch_digits.py)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, padding=1)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
        self.fc1 = nn.Linear(64 * 4 * 4, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(F.relu(self.fc1(torch.flatten(x, 1))))


def load_split(test_fraction: float, seed: int):
    """The digits as (train, test) TensorDatasets; the same split on every rank."""
    from sklearn.datasets import load_digits  # bundled with scikit-learn, read from disk

    digits = load_digits()
    images = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
    labels = torch.tensor(digits.target, dtype=torch.int64)
    order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(seed))
    n_test = int(len(labels) * test_fraction)
    test, train = order[:n_test], order[n_test:]
    return (torch.utils.data.TensorDataset(images[train], labels[train]),
            torch.utils.data.TensorDataset(images[test], labels[test]))


def evaluate(model, test_set, name: str):
    """Test loss and accuracy over the whole test set (each rank scores every size-th sample)."""
    model.eval()
    images, labels = test_set.tensors
    mine = slice(hvd.rank(), None, hvd.size())
    with torch.no_grad():
        out = model(images[mine])
        sums = torch.tensor([F.cross_entropy(out, labels[mine], reduction="sum").item(),
                             float((out.argmax(1) == labels[mine]).sum()), float(len(labels[mine]))],
                            dtype=torch.float64)
    loss_sum, correct, total = hvd.allreduce(sums, name=name, op=hvd.Sum).tolist()
    model.train()
    return loss_sum / total, correct / total


def weights_digest(model) -> str:
    """A hash of every parameter's bytes: equal on all ranks iff the weights are identical."""
    h = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(tensor.detach().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


class EventLog:
    """--events: JSON lines of what this process did, for tests (a no-op without the flag)."""

    def __init__(self, directory: str):
        self.path = os.path.join(directory, f"{os.getpid()}.jsonl") if directory else ""
        if self.path:
            os.makedirs(directory, exist_ok=True)

    def write(self, event: str, state, **fields) -> None:
        if not self.path:
            return
        record = dict(event=event, time=time.time(), pid=os.getpid(),
                      worker=os.environ.get("KOROVOD_ELASTIC_WORKER_ID", ""), rank=hvd.rank(),
                      size=hvd.size(), epoch=state.epoch, step=state.step, **fields)
        with open(self.path, "a") as f:
            f.write(json.dumps(record) + "\n")


def main(argv=None) -> None:
    args = parse_args(argv)
    hvd.init()
    torch.manual_seed(args.seed)
    if args.num_threads > 0:
        torch.set_num_threads(args.num_threads)
    events = EventLog(args.events)

    train_set, test_set = load_split(args.test_fraction, args.seed)
    # ElasticSampler: shards what is left of the epoch over the current workers after a reset.
    sampler = hvd.elastic.ElasticSampler(train_set, shuffle=True, seed=args.seed)
    loader = torch.utils.data.DataLoader(train_set, batch_size=args.batch_size, sampler=sampler)

    model = DigitsNet()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr * hvd.size(), momentum=args.momentum)
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())

    def on_state_reset():
        # One step averages the gradients of size ranks: scale the learning rate with them.
        for group in optimizer.param_groups:
            group["lr"] = args.lr * hvd.size()

    def stop_requested() -> bool:
        return bool(args.stop_file) and hvd.broadcast_object(
            os.path.exists(args.stop_file) if hvd.rank() == 0 else None, root_rank=0, name="stop_file")

    # No collective may run between here and train(): a worker that joins runs the state's sync
    # first, while the others are in theirs.
    state = hvd.elastic.TorchState(model=model, optimizer=optimizer, sampler=sampler, epoch=0, step=0)
    state.register_reset_callbacks([on_state_reset])

    @hvd.elastic.run
    def train(state):
        events.write("resume", state, digest=weights_digest(model))
        if hvd.rank() == 0:
            print(f"{hvd.size()} worker(s): epoch {state.epoch}, step {state.step}, "
                  f"{sampler.processed_num} of {len(train_set)} samples of the epoch done", flush=True)
        while state.epoch < args.epochs:
            for images, labels in loader:
                optimizer.zero_grad()
                F.cross_entropy(model(images), labels).backward()
                optimizer.step()
                state.step += 1
                sampler.record_batch(0, args.batch_size)
                if state.step % args.batches_per_commit == 0:
                    state.commit()
                    events.write("commit", state)
            test_loss, test_acc = evaluate(model, test_set, f"test.{state.epoch}")
            if hvd.rank() == 0:
                print(f"epoch {state.epoch + 1}/{args.epochs}: test loss {test_loss:.4f} accuracy "
                      f"{test_acc:.4f} ({hvd.size()} worker(s), step {state.step})", flush=True)
            state.epoch += 1
            sampler.set_epoch(state.epoch)  # at the END of the epoch, as ElasticSampler wants
            state.commit()
            events.write("commit", state)
            if stop_requested():
                break
        return evaluate(model, test_set, "test.final")

    start = time.monotonic()
    test_loss, test_acc = train(state)
    digest = weights_digest(model)
    events.write("end", state, digest=digest, accuracy=test_acc)
    print(f"rank {hvd.rank()} of {hvd.size()}: final test accuracy {test_acc:.4f} (loss {test_loss:.4f}), "
          f"{state.epoch} epochs, {state.step} steps in {time.monotonic() - start:.1f}s, weights {digest}",
          flush=True)


if __name__ == "__main__":
    main()
