#!/usr/bin/env python3
"""What op=Adasum costs next to op=Sum: the same tensor, the same ranks, the same run.

For each size, alternating rounds of N allreduces with op=Sum and N with op=Adasum (korovod.torch
or, with --module horovod.torch, Horovod), median time per allreduce; rank 0 prints one line per
size and the ratio Adasum / Sum. Adasum's tree swaps halves pairwise and adds one small float64
allreduce per level, so it should cost a small multiple of the Sum allreduce, not a multiple of
the number of ranks.

  PYTHONPATH=build/python mpirun -np 2 --bind-to none /usr/bin/python3 bench/training/adasum_cost.py
  PYTHONPATH=build/python mpirun -np 4 --oversubscribe --bind-to none /usr/bin/python3 bench/training/adasum_cost.py
"""

import argparse
import importlib
import statistics
import time


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--module", default="korovod.torch", help="korovod.torch (default) or horovod.torch")
    p.add_argument("--sizes", default="16K,256K,4M,32M", help="tensor sizes in bytes (K, M suffixes), float32")
    p.add_argument("--iters", type=int, default=10, help="allreduces per op per round")
    p.add_argument("--rounds", type=int, default=5, help="rounds; the op that goes first alternates")
    return p.parse_args()


def size_bytes(text: str) -> int:
    scale = {"K": 1 << 10, "M": 1 << 20}.get(text[-1].upper(), 1)
    return int(text[:-1] if scale > 1 else text) * scale


def main() -> int:
    args = parse_args()
    import torch
    hvd = importlib.import_module(args.module)
    hvd.init()
    torch.set_num_threads(1)
    ops = {"sum": hvd.Sum, "adasum": hvd.Adasum}
    if hvd.rank() == 0:
        print(f"{args.module}, {hvd.size()} ranks, median of {args.rounds} rounds x {args.iters} allreduces",
              flush=True)
        print(f"{'bytes':>10} {'sum us':>10} {'adasum us':>10} {'adasum/sum':>10}", flush=True)
    for text in args.sizes.split(","):
        n = size_bytes(text) // 4
        tensor = torch.randn(n, generator=torch.Generator().manual_seed(hvd.rank()))
        times = {name: [] for name in ops}
        for r in range(args.rounds):
            order = list(ops) if r % 2 == 0 else list(reversed(list(ops)))
            for name in order:
                hvd.allreduce(tensor, op=ops[name], name=f"cost.{name}.{n}")  # warm (negotiation cached)
                hvd.barrier()
                start = time.perf_counter()
                for _ in range(args.iters):
                    hvd.allreduce(tensor, op=ops[name], name=f"cost.{name}.{n}")
                times[name].append((time.perf_counter() - start) / args.iters * 1e6)
        if hvd.rank() == 0:
            s, a = statistics.median(times["sum"]), statistics.median(times["adasum"])
            print(f"{n * 4:>10} {s:>10.0f} {a:>10.0f} {a / s:>10.2f}", flush=True)
    hvd.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
