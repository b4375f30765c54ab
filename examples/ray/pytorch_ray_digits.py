#!/usr/bin/env python3
"""examples/pytorch/pytorch_digits.py's convnet trained with korovod.ray.RayExecutor: each rank is
a Ray actor (docs/ray.md), the ranks meet at the driver's rendezvous store, and the driver prints
every rank's final test accuracy. Nothing is downloaded (scikit-learn's bundled digits).
examples/ray/README.md gives the command."""

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

DIGITS_DIR = str(Path(__file__).resolve().parent.parent / "pytorch")


def train(argv):
    """One rank: the digits script's main() (it calls hvd.init()); its final test accuracy."""
    sys.path.insert(0, DIGITS_DIR)
    import pytorch_digits
    return pytorch_digits.main(argv)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--address", default=None,
                   help="a running Ray cluster's address (host:port); default: start a local Ray instance")
    p.add_argument("--num-workers", type=int, default=2, help="ranks (Ray actors, one CPU each)")
    p.add_argument("--epochs", type=int, default=15, help="passes over the training set")
    args = p.parse_args()

    import ray
    from korovod.ray import RayExecutor

    temp = None
    if args.address:
        ray.init(address=args.address)
    else:
        # A local instance with a CPU per rank, its sockets and logs in a directory of its own.
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        temp = tempfile.mkdtemp(prefix="korovod-ray-", dir="/tmp")
        ray.init(num_cpus=args.num_workers, include_dashboard=False, _temp_dir=temp)
    executor = RayExecutor(RayExecutor.create_settings(timeout_s=60), num_workers=args.num_workers)
    try:
        executor.start()
        accuracies = executor.run(train, args=[["--epochs", str(args.epochs)]])
    finally:
        executor.shutdown()
        ray.shutdown()
        if temp:
            shutil.rmtree(temp, ignore_errors=True)
    print("ray digits: final test accuracy by rank: " + ", ".join(f"{a:.4f}" for a in accuracies), flush=True)


if __name__ == "__main__":
    main()
