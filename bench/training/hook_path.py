#!/usr/bin/python3
"""Many small gradients against one big one, through DistributedOptimizer's hook path.

Two models with the same number of gradient bytes (4 MiB of float32 by default): one with
--tensors parameters of --tensor-kib KiB each (256 x 16 KiB), one with a single parameter of the
same total size. Each step is loss.backward() on a trivial loss (every gradient becomes known in
the same backward pass, as in training) and optimizer.synchronize(), which waits for the
allreduces the gradient hooks started. The same steps without korovod (plain backward) give the
compute-only time, so

    communication = step - compute-only        ratio = communication(many) / communication(one)

The four measurements alternate within each round (--rounds), so all of them see the same speed
spells of a shared machine; the medians over rounds are printed by rank 0, one JSON line at the
end. Each measurement also takes the training thread's CPU time (time.thread_time): on a machine
more loaded than it has cores, wall time mostly measures the scheduler, while

    cpu_per_gradient = (cpu(many) - cpu(many compute-only) - cpu(one) + cpu(one compute-only)) / 255

still says what each extra gradient costs the thread that runs backward (hooks, hand-over, waits;
with inline cycles also the engine work that thread does). A fifth measurement, the many-tensor
backward with a no-op hook on each parameter (registered as DistributedOptimizer registers its
own), gives the floor of any binding that starts allreduces from per-parameter Python hooks:

    hook_calls = step(no-op hooks) - many compute-only    floor_ratio = (communication(one) + hook_calls) / communication(one)

Start it under a launcher, e.g.

    mpirun -np 2 --bind-to none /usr/bin/python3 bench/training/hook_path.py
    build/bin/korovodrun -np 2 /usr/bin/python3 bench/training/hook_path.py --rounds 9

with PYTHONPATH=build/python (or an installed korovod). Goal (issue 12): ratio <= 1.2.
"""

import argparse
import json
import statistics
import time

import importlib

import torch

hvd = None  # korovod.torch, or --module's (Horovod 0.28.1's horovod.torch as the peer)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tensors", type=int, default=256, help="parameters of the many-tensor model (default 256)")
    p.add_argument("--tensor-kib", type=int, default=16, help="KiB of float32 per parameter (default 16)")
    p.add_argument("--steps", type=int, default=20, help="timed steps per measurement (default 20)")
    p.add_argument("--warmup", type=int, default=5, help="untimed steps before each measurement (default 5)")
    p.add_argument("--rounds", type=int, default=7, help="alternating rounds; medians are reported (default 7)")
    p.add_argument("--module", default="korovod.torch",
                   help="the binding to measure (default korovod.torch; horovod.torch with Horovod's venv, "
                        "bench/training/setup-peers, as the peer)")
    return p.parse_args(argv)


class Model(torch.nn.Module):
    def __init__(self, count: int, numel: int):
        super().__init__()
        self.weights = torch.nn.ParameterList(torch.nn.Parameter(torch.full((numel,), 0.5)) for _ in range(count))

    def loss(self):
        # d(loss)/dw = 1 for every element: negligible compute, every gradient known in one pass.
        return sum(w.sum() for w in self.weights)


def timed(step, steps: int, warmup: int):
    """(wall, thread CPU) seconds per step; the wall time between two barriers, so every rank's
    time covers the same steps."""
    for _ in range(warmup):
        step()
    hvd.barrier()
    start, cpu_start = time.perf_counter(), time.thread_time()
    for _ in range(steps):
        step()
    cpu = time.thread_time() - cpu_start
    hvd.barrier()
    return (time.perf_counter() - start) / steps, cpu / steps


def measurements(args):
    numel = args.tensor_kib * 1024 // 4
    setups = {"many": Model(args.tensors, numel), "one": Model(1, numel * args.tensors)}
    steps = {}
    for label, model in setups.items():
        opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.0),
                                       named_parameters=[(f"{label}.{n}", p) for n, p in model.named_parameters()])

        def distributed(model=model, opt=opt):
            opt.zero_grad()
            model.loss().backward()
            opt.synchronize()

        # Its own copy of the model: the DistributedOptimizer's gradient hooks sit on the
        # parameters above and would allreduce in the compute-only steps too.
        plain = Model(args.tensors, numel) if label == "many" else Model(1, numel * args.tensors)

        def alone(model=plain):
            for p in model.parameters():
                p.grad = None
            model.loss().backward()

        steps[label] = distributed
        steps[label + "_compute"] = alone
        if label == "many":
            # The floor: the same backward with a no-op hook per parameter, registered as
            # DistributedOptimizer registers its hooks. No binding that starts each gradient's
            # allreduce from a per-parameter Python hook can cost less than this.
            hooked, keep = Model(args.tensors, numel), []
            for p in hooked.parameters():
                keep.append(_noop_hook(p))

            def with_hooks(model=hooked, keep=keep):
                for p in model.parameters():
                    p.grad = None
                model.loss().backward()

            steps["many_hooks"] = with_hooks
    return steps


def _noop(*_):
    return None


def _noop_hook(p):
    """A hook that does nothing, where korovod.torch puts its own (see optimizer.py)."""
    if hasattr(p, "register_post_accumulate_grad_hook"):
        return p.register_post_accumulate_grad_hook(_noop)
    grad_acc = p.expand_as(p).grad_fn.next_functions[0][0]
    grad_acc.register_hook(_noop)
    return grad_acc


def main(argv=None) -> int:
    args = parse_args(argv)
    global hvd
    hvd = importlib.import_module(args.module)
    torch.set_num_threads(1)
    hvd.init()
    steps = measurements(args)
    samples = {name: [] for name in steps}
    cpu = {name: [] for name in steps}
    for r in range(args.rounds):
        order = list(steps) if r % 2 == 0 else list(reversed(steps))
        for name in order:
            wall, thread_cpu = timed(steps[name], args.steps, args.warmup)
            samples[name].append(wall)
            cpu[name].append(thread_cpu)
    med = {name: statistics.median(v) * 1e6 for name, v in samples.items()}
    cpu_med = {name: statistics.median(v) * 1e6 for name, v in cpu.items()}
    cpu_extra = (cpu_med["many"] - cpu_med["many_compute"]) - (cpu_med["one"] - cpu_med["one_compute"])
    comm_many = med["many"] - med["many_compute"]
    comm_one = med["one"] - med["one_compute"]
    hooks = med["many_hooks"] - med["many_compute"]  # what the per-parameter hook calls alone cost
    per_round = [(m - mc) / (o - oc) for m, mc, o, oc in
                 zip(samples["many"], samples["many_compute"], samples["one"], samples["one_compute"])]
    if hvd.rank() == 0:
        print(json.dumps({
            "module": args.module, "ranks": hvd.size(), "tensors": args.tensors, "tensor_kib": args.tensor_kib,
            "step_us": {k: round(v, 1) for k, v in med.items()},
            "communication_us": {"many": round(comm_many, 1), "one": round(comm_one, 1)},
            "ratio_many_over_one": round(comm_many / comm_one, 3),
            "ratio_per_round": [round(x, 3) for x in per_round],
            "hook_calls_us": round(hooks, 1),
            "floor_ratio": round((comm_one + hooks) / comm_one, 3),
            "hook_cpu_per_gradient_us": round((cpu_med["many_hooks"] - cpu_med["many_compute"]) / args.tensors, 2),
            "thread_cpu_us": {k: round(v, 1) for k, v in cpu_med.items()},
            "cpu_per_gradient_us": round(cpu_extra / max(args.tensors - 1, 1), 2),
        }))
    hvd.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
