#!/usr/bin/env python3
"""examples/pytorch/pytorch_digits.py's convnet trained with korovod.spark.run: each rank is a
task of a local Spark session (docs/spark.md), the ranks meet at the driver's rendezvous store,
and the driver prints every rank's final test accuracy. Nothing is downloaded (scikit-learn's
bundled digits). examples/spark/README.md gives the command."""

import argparse
import os
import sys
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
    p.add_argument("--master", default="local[2]", help="the Spark master")
    p.add_argument("--num-proc", type=int, default=2, help="ranks (Spark tasks, all at once)")
    p.add_argument("--epochs", type=int, default=15, help="passes over the training set")
    args = p.parse_args()

    # The executors run this interpreter (the one with torch, pyspark and korovod), not Spark's
    # default `python3` on PATH.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    import korovod.spark

    spark = (SparkSession.builder.master(args.master).appName("korovod-spark-digits")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    try:
        accuracies = korovod.spark.run(train, args=(["--epochs", str(args.epochs)],), num_proc=args.num_proc)
    finally:
        spark.stop()
    print("spark digits: final test accuracy by rank: " + ", ".join(f"{a:.4f}" for a in accuracies), flush=True)


if __name__ == "__main__":
    main()
