#!/usr/bin/env python3
"""Cost of korovod's collectives inside a tf.function, 2 ranks on this machine: korovod's own
asynchronous graph ops (libkorovod_tf_ops.so) against the tf.py_function path they replaced
(KOROVOD_TF_NATIVE_OPS=0), in the same run, alternating order, and eager calls as a third row.

Each run is `mpirun -np 2` of this file with --worker: a tf.function holding --ops independent
allreduces of --elements float32 each (and one with a single allreduce) is called --calls times
after a warmup; the time per call is the median over rounds of each rank's mean. Prints a table
and, with --json, every run's numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
ROOT = HERE.parents[2]
CONFIGS = ("graph-native", "graph-py_function", "eager")


def parse_args(argv):
    p = argparse.ArgumentParser(prog="bench/tensorflow/graph_ops.py", description=__doc__.split("\n\n")[0],
                                epilog=__doc__.split("\n\n", 1)[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--python", default=str(Path.home() / ".cache/korovod/venv-tf2.21.0/bin/python"),
                   help="interpreter with tensorflow-cpu (default: the venv scripts/test makes)")
    p.add_argument("--build-dir", type=Path, default=ROOT / "build", help="build tree with python/korovod")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--calls", type=int, default=300, help="timed calls of the function per run")
    p.add_argument("--ops", type=int, default=16, help="independent allreduces in the many-op function")
    p.add_argument("--elements", type=int, default=1024, help="float32 elements per allreduce")
    p.add_argument("--json", type=Path, default=None, help="also write every run's results here")
    p.add_argument("--worker", choices=CONFIGS, help=argparse.SUPPRESS)
    p.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def worker(args) -> None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import numpy as np
    import tensorflow as tf

    import korovod.tensorflow as hvd
    from korovod.tensorflow import _graph

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(2)
    hvd.init()
    xs = [tf.constant(np.full(args.elements, float(hvd.rank() + i), np.float32)) for i in range(args.ops)]

    def one(x):
        return hvd.allreduce(x, op=hvd.Sum, name="bench.one")

    def many(*values):
        return [hvd.allreduce(v, op=hvd.Sum, name=f"bench.many.{i}") for i, v in enumerate(values)]

    if args.worker != "eager":
        one, many = tf.function(one), tf.function(many)
    results = {}
    for label, fn, inputs in (("one", one, xs[:1]), ("many", many, xs)):
        for _ in range(20):
            fn(*inputs)
        hvd.allreduce(tf.zeros([1]), name=f"bench.align.{label}")
        start = time.perf_counter()
        for _ in range(args.calls):
            out = fn(*inputs)
        (out[0] if isinstance(out, list) else out).numpy()
        results[label] = (time.perf_counter() - start) / args.calls * 1e6
    status = _graph.native_status() if args.worker != "eager" else "eager"
    # A file per rank: mpirun interleaves the ranks' stdout.
    (args.out / f"rank{hvd.rank()}.json").write_text(
        json.dumps(dict(rank=hvd.rank(), config=args.worker, status=status, **results)))


def run(args, config: str) -> list:
    env = dict(os.environ, PYTHONPATH=str(args.build_dir / "python"), TF_CPP_MIN_LOG_LEVEL="2",
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMP_NUM_THREADS="1",
               KOROVOD_TF_NATIVE_OPS="0" if config == "graph-py_function" else "1")
    env.pop("KOROVOD_LIBRARY", None)
    with tempfile.TemporaryDirectory(prefix="korovod-graph-ops-") as out:
        command = ["mpirun", "-np", "2", "--oversubscribe", "--bind-to", "none", "-x", "KOROVOD_TF_NATIVE_OPS",
                   args.python, str(HERE), "--worker", config, "--calls", str(args.calls), "--ops", str(args.ops),
                   "--elements", str(args.elements), "--out", out]
        subprocess.run(command, env=env, stdout=subprocess.DEVNULL, timeout=900, check=True)
        rows = [json.loads(path.read_text()) for path in sorted(Path(out).glob("rank*.json"))]
    if len(rows) != 2:
        raise SystemExit(f"{config}: expected 2 ranks' results, got {len(rows)}")
    expected = "" if config == "graph-native" else ("eager" if config == "eager" else "KOROVOD_TF_NATIVE_OPS=0")
    if any(r["status"] != expected for r in rows):
        raise SystemExit(f"{config}: ran on the wrong path: {[r['status'] for r in rows]}")
    return rows


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.worker:
        worker(args)
        return 0
    runs = []
    for round_index in range(args.rounds):
        order = CONFIGS if round_index % 2 == 0 else tuple(reversed(CONFIGS))
        for config in order:
            rows = run(args, config)
            runs.append(dict(round=round_index, config=config, rows=rows))
            print(f"round {round_index + 1}/{args.rounds} {config}: " +
                  ", ".join(f"rank {r['rank']}: one {r['one']:.0f} us, many {r['many']:.0f} us" for r in rows),
                  file=sys.stderr, flush=True)
    medians = {}
    for config in CONFIGS:
        mine = [r for run_ in runs if run_["config"] == config for r in run_["rows"]]
        medians[config] = {k: statistics.median(r[k] for r in mine) for k in ("one", "many")}
    print(f"| path | 1 allreduce per call (µs) | {args.ops} independent allreduces per call (µs) |")
    print("| --- | --- | --- |")
    for config in CONFIGS:
        print(f"| {config} | {medians[config]['one']:.0f} | {medians[config]['many']:.0f} |")
    base = medians["graph-py_function"]
    print(f"\nnative / py_function: one {medians['graph-native']['one'] / base['one']:.2f}x, "
          f"many {medians['graph-native']['many'] / base['many']:.2f}x "
          f"({args.elements} float32 per allreduce, {args.rounds} rounds, medians of both ranks)")
    if args.json:
        args.json.write_text(json.dumps(dict(args=vars(args) | {"build_dir": str(args.build_dir), "json": None},
                                             runs=runs, medians=medians), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
