#!/usr/bin/python3
"""One measurement of bench/training/run: synthetic data-parallel SGD steps of a 12.6 M-parameter
MLP with one framework, one torch thread per process. Rank 0 prints one JSON line.

  --framework korovod   korovod.torch DistributedOptimizer   (start under mpirun)
  --framework horovod   horovod.torch DistributedOptimizer   (start under mpirun, Horovod's venv)
  --framework ddp       torch DistributedDataParallel, gloo  (env://: under torchrun, or under
                        mpirun, which gives the rank and size; MASTER_ADDR defaults to
                        127.0.0.1, MASTER_PORT must be set)
  --framework alone     one process, the same steps, no communication (compute-only)

Timing: warm-up steps, then every rank synchronizes once (a one-element allreduce or barrier),
runs --steps steps, and synchronizes again; samples/s = ranks x batch x steps / elapsed on rank 0.
cpu_seconds: rank 0's process CPU time (all its threads) over the same steps.
"""

import argparse
import json
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

INPUT, WIDTH, LAYERS, CLASSES = 2048, 2048, 3, 10


def mlp() -> nn.Module:
    """2048 -> 3 x (2048 ReLU) -> 10: 12.61 M parameters, 50 MB of float32 gradients a step."""
    layers = []
    for i in range(LAYERS):
        layers += [nn.Linear(INPUT if i == 0 else WIDTH, WIDTH), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(WIDTH, CLASSES))


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--framework", required=True, choices=["korovod", "horovod", "ddp", "alone"])
    p.add_argument("--batch-size", type=int, default=64, help="samples per step on each rank")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps first")
    p.add_argument("--steps", type=int, default=20, help="timed steps")
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads per process")
    p.add_argument("--label", default="", help="name of the configuration, copied to the output")
    return p.parse_args(argv)


class Comm:
    """What the timing needs of a framework: rank, size, a synchronization, the optimizer."""

    def __init__(self, framework: str):
        self.framework = framework
        self.hvd = None
        if framework in ("korovod", "horovod"):
            if framework == "korovod":
                import korovod.torch as hvd
            else:
                import horovod.torch as hvd
            hvd.init()
            self.hvd = hvd
            self.rank, self.size = hvd.rank(), hvd.size()
        elif framework == "ddp":
            import torch.distributed as dist
            # Debian's torchrun (torch 1.13 on Python 3.11) fails in its own argument handling,
            # so mpirun may start the ranks: env:// reads RANK and WORLD_SIZE.
            for ours, ompi in (("RANK", "OMPI_COMM_WORLD_RANK"),
                               ("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE")):
                if ours not in os.environ and ompi in os.environ:
                    os.environ[ours] = os.environ[ompi]
            os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
            dist.init_process_group("gloo", init_method="env://")
            self.rank, self.size = dist.get_rank(), dist.get_world_size()
        else:
            self.rank, self.size = 0, 1

    def wrap(self, model: nn.Module):
        """(model to call, optimizer to step) for this framework."""
        if self.framework == "ddp":
            from torch.nn.parallel import DistributedDataParallel
            model = DistributedDataParallel(model)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        if self.hvd is not None:
            optimizer = self.hvd.DistributedOptimizer(
                optimizer, named_parameters=model.named_parameters())
            self.hvd.broadcast_parameters(model.state_dict(), root_rank=0)
        return model, optimizer

    def sync(self, name: str) -> None:
        if self.hvd is not None:
            self.hvd.allreduce(torch.zeros(1), name=name)
        elif self.framework == "ddp":
            import torch.distributed as dist
            dist.barrier()

    def version(self) -> str:
        if self.framework == "horovod":
            import horovod
            return "horovod " + horovod.__version__
        if self.framework == "korovod":
            import korovod
            return "korovod " + getattr(korovod, "__version__", "?")
        return "torch " + torch.__version__


def main(argv=None) -> int:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    comm = Comm(args.framework)
    model, optimizer = comm.wrap(mlp())
    data = torch.randn(args.batch_size, INPUT)
    target = torch.randint(0, CLASSES, (args.batch_size,))

    def step() -> None:
        optimizer.zero_grad()
        F.cross_entropy(model(data), target).backward()
        optimizer.step()

    for _ in range(args.warmup):
        step()
    comm.sync("bench.start")
    cpu_start = time.process_time()
    start = time.perf_counter()
    for _ in range(args.steps):
        step()
    comm.sync("bench.end")
    seconds = time.perf_counter() - start
    # CPU time of every thread of this process over the timed steps: above 1 per second of
    # wall time, threads besides the compute thread (communication, polling) were running.
    cpu_seconds = time.process_time() - cpu_start
    if comm.rank == 0:
        print(json.dumps({
            "label": args.label or args.framework, "framework": args.framework,
            "version": comm.version(), "ranks": comm.size, "batch": args.batch_size,
            "steps": args.steps, "threads": args.threads, "seconds": round(seconds, 4),
            "cpu_seconds": round(cpu_seconds, 4),
            "samples_per_second": round(comm.size * args.batch_size * args.steps / seconds, 2),
            "parameters": sum(p.numel() for p in model.parameters()),
            "pid": os.getpid()}), flush=True)
    if args.framework == "ddp":
        import torch.distributed as dist
        dist.destroy_process_group()
    elif comm.hvd is not None:
        comm.hvd.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
