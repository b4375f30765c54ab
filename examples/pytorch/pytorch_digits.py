#!/usr/bin/python3
"""Data-parallel training of a small convnet on scikit-learn's digits with korovod.torch.

The data set (1797 8x8 images of handwritten digits, 10 classes) ships inside scikit-learn,
so nothing is downloaded at run time. Every rank holds the whole data set, splits it into the
same train and test sets (fixed seed), and trains on its own shard of the training set; the
gradients are averaged across ranks by DistributedOptimizer, so all ranks keep identical
weights. Run it with any MPI launcher, for example:

    mpirun -n 2 --bind-to none pytorch_digits.py --epochs 15

or as an MPIJob (examples/pytorch/pytorch_digits.yaml). The shebang names /usr/bin/python3,
the Python that has torch both in the korovod worker image and on a Debian machine with
python3-torch (see examples/pytorch/README.md).
"""

import argparse
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.data
import torch.utils.data.distributed

import korovod.torch as hvd


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="Train a convnet on scikit-learn's digits with korovod.torch "
        "(data parallel: run under mpirun / korovodrun / an MPIJob).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--epochs", type=int, default=15, help="passes over the training set")
    p.add_argument("--batch-size", type=int, default=32, help="samples per step on each rank")
    p.add_argument("--lr", type=float, default=0.05,
                   help="learning rate for one rank; scaled by the number of ranks")
    p.add_argument("--momentum", type=float, default=0.9, help="SGD momentum")
    p.add_argument("--test-fraction", type=float, default=0.2,
                   help="share of the data set held out for testing")
    p.add_argument("--seed", type=int, default=42,
                   help="seed of the split, the shuffling and the initial weights")
    p.add_argument("--num-threads", type=int, default=1,
                   help="torch intra-op threads per rank (ranks usually share a node's cores; "
                   "0 leaves torch's default)")
    p.add_argument("--fp16-allreduce", action="store_true",
                   help="compress gradients to float16 for the allreduce")
    p.add_argument("--checkpoint", metavar="PATH", default="",
                   help="rank 0 writes the model and optimizer state here after every epoch")
    return p.parse_args(argv)


class DigitsNet(nn.Module):
    """Two 3x3 convolutions and a classifier for 1x8x8 images (about 150 k parameters)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, padding=1)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
        self.fc1 = nn.Linear(64 * 4 * 4, 128)
        self.fc2 = nn.Linear(128, 10)
        self.dropout = nn.Dropout(0.25)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = self.dropout(torch.flatten(x, 1))
        return self.fc2(F.relu(self.fc1(x)))


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


def global_sums(values, name: str) -> torch.Tensor:
    """Sums a few per-rank numbers over all ranks (loss sums, correct counts, sample counts)."""
    return hvd.allreduce(torch.tensor(values, dtype=torch.float64), name=name, op=hvd.Sum)


def train_epoch(model, optimizer, loader, epoch: int, epochs: int):
    model.train()
    loader.sampler.set_epoch(epoch)  # a new shuffle every epoch, the same on every rank
    loss_sum, correct, seen = 0.0, 0, 0
    for images, labels in loader:
        optimizer.zero_grad()
        out = model(images)
        loss = F.cross_entropy(out, labels)
        loss.backward()
        optimizer.step()  # korovod counts the step for the job's progress (docs/progress.md)
        # What only the script knows, for the progress: total steps, loss and batch size.
        hvd.report_progress(total_steps=epochs * len(loader), loss=loss, batch_size=loader.batch_size)
        loss_sum += loss.item() * len(labels)
        correct += int((out.argmax(1) == labels).sum())
        seen += len(labels)
    total_loss, total_correct, total_seen = global_sums(
        [loss_sum, correct, seen], f"train_metrics.{epoch}").tolist()
    return total_loss / total_seen, total_correct / total_seen


def evaluate(model, test_set, epoch: int):
    """Each rank scores every size-th test sample from its rank on; the sums are exact."""
    model.eval()
    images, labels = test_set.tensors
    mine = slice(hvd.rank(), None, hvd.size())
    with torch.no_grad():
        out = model(images[mine])
        loss_sum = F.cross_entropy(out, labels[mine], reduction="sum").item()
        correct = int((out.argmax(1) == labels[mine]).sum())
    total_loss, total_correct, total = global_sums(
        [loss_sum, correct, len(labels[mine])], f"test_metrics.{epoch}").tolist()
    return total_loss / total, total_correct / total, int(total_correct), int(total)


def main(argv=None) -> float:
    """Trains; returns the final test accuracy (korovod.spark.run's example collects it)."""
    args = parse_args(argv)
    hvd.init()
    torch.manual_seed(args.seed)
    if args.num_threads > 0:
        torch.set_num_threads(args.num_threads)
    is_root = hvd.rank() == 0

    def log(message: str) -> None:
        if is_root:
            print(message, flush=True)

    train_set, test_set = load_split(args.test_fraction, args.seed)
    # DistributedSampler pads the shards to equal length: every rank takes the same number of
    # steps, so every allreduce of the optimizer has a partner on every rank.
    sampler = torch.utils.data.distributed.DistributedSampler(
        train_set, num_replicas=hvd.size(), rank=hvd.rank(), shuffle=True, seed=args.seed)
    loader = torch.utils.data.DataLoader(train_set, batch_size=args.batch_size, sampler=sampler)

    model = DigitsNet()
    # The gradients are averaged over size ranks, so one step covers size x batch samples:
    # scale the learning rate with the number of ranks.
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr * hvd.size(),
                                momentum=args.momentum)
    compression = hvd.Compression.fp16 if args.fp16_allreduce else hvd.Compression.none
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters(),
                                         compression=compression, op=hvd.Average)
    # Start every rank from rank 0's weights and optimizer state.
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)
    # Cosine decay to zero over the run: the last epochs settle instead of jumping around.
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)

    log(f"digits: {len(train_set)} training and {len(test_set)} test samples, "
        f"{hvd.size()} rank(s), batch {args.batch_size} per rank, "
        f"lr {args.lr * hvd.size():g}, {sum(p.numel() for p in model.parameters())} parameters")
    start = time.monotonic()
    for epoch in range(1, args.epochs + 1):
        t0 = time.monotonic()
        train_loss, train_acc = train_epoch(model, optimizer, loader, epoch, args.epochs)
        schedule.step()
        test_loss, test_acc, _, _ = evaluate(model, test_set, epoch)
        log(f"epoch {epoch:2d}/{args.epochs}: train loss {train_loss:.4f} "
            f"accuracy {train_acc:.4f} | test loss {test_loss:.4f} accuracy {test_acc:.4f} "
            f"({time.monotonic() - t0:.1f}s)")
        if args.checkpoint and is_root:
            # Only rank 0 writes: the ranks hold the same weights, and concurrent writers would
            # corrupt the file.
            tmp = args.checkpoint + ".tmp"
            torch.save({"epoch": epoch, "model": model.state_dict(),
                        "optimizer": optimizer.state_dict()}, tmp)
            os.replace(tmp, args.checkpoint)
    _, test_acc, correct, total = evaluate(model, test_set, args.epochs + 1)
    log(f"final test accuracy: {test_acc:.4f} ({correct}/{total} test samples, "
        f"{hvd.size()} rank(s), {time.monotonic() - start:.1f}s)")
    if args.checkpoint:
        log(f"checkpoint: {args.checkpoint}")
    return test_acc


if __name__ == "__main__":
    main()
