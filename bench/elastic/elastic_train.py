"""The training loop bench/elastic/run starts under korovodrun's elastic driver (usage: --help).

A small classifier on a fixed synthetic data set, trained with korovod.torch's
DistributedOptimizer (every step allreduces the gradients) inside hvd.elastic.run with a
TorchState committed every --commit-every steps. It prints one machine-readable line per event,
`KBENCH {json}`, with wall-clock times (time.time(), the same clock as the run script's):

  start   once per process, after hvd.init(): proc_start (the process's start time from
          /proc/self/stat, i.e. when korovodrun started it), script_start (first line of this
          file), imports_done (torch and korovod.torch imported), init_done (hvd.init() returned:
          the worker joined a round); its worker id, pid, round, rank, size.
  reset   after every reset (shutdown + init into the driver's next round), before the sync.
  step    the first completed step of every call of the training function (the first one, and
          the first one after each reset): `optimizer.step()` returned, i.e. the allreduce of
          the step's gradients completed; with the runtime's round, rank and size.
  done    the job's end (the file named by --stop-file exists; rank 0 decides and broadcasts).
"""

import time

_SCRIPT_START = time.time()

import argparse  # noqa: E402
import ctypes  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402


def process_start_time() -> float:
    """When this process was started (korovodrun's fork), as a time.time() value.

    /proc/self/stat gives the start in clock ticks after boot; CLOCK_BOOTTIME is the same clock
    now (btime in /proc/stat is rounded to whole seconds, too coarse)."""
    with open("/proc/self/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    started_after_boot = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22 of stat
    return time.time() - (time.clock_gettime(time.CLOCK_BOOTTIME) - started_after_boot)


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--stop-file", required=True, help="training ends once this file exists")
    p.add_argument("--commit-every", type=int, default=10, help="steps between state.commit() (default 10)")
    p.add_argument("--step-sleep", type=float, default=0.02,
                   help="seconds each step sleeps besides its compute (data loading stand-in; default 0.02)")
    p.add_argument("--batch-size", type=int, default=64)
    return p.parse_args()


def main() -> None:
    args = parse_args()
    proc_start = process_start_time()
    import torch
    import korovod.torch as hvd
    from korovod.common import basics

    imports_done = time.time()
    sys.stdout.reconfigure(line_buffering=True)
    torch.set_num_threads(1)
    worker_id = os.environ.get("KOROVOD_ELASTIC_WORKER_ID", "?")

    def joined_round() -> int:
        # The runtime's round (C ABI korovod_elastic_round): tells a step of the new round from
        # one that completed just after a kill in the old one.
        rt = basics.state.require()
        fn = rt.lib.korovod_elastic_round
        fn.argtypes, fn.restype = [ctypes.c_void_p], ctypes.c_int64
        return int(fn(rt.ptr))

    def emit(event: str, **fields) -> None:
        print("KBENCH " + json.dumps(dict(event=event, id=worker_id, pid=os.getpid(), **fields)), flush=True)

    hvd.init()
    emit("start", proc_start=proc_start, script_start=_SCRIPT_START, imports_done=imports_done, init_done=time.time(),
         round=joined_round(), rank=hvd.rank(), size=hvd.size())

    generator = torch.Generator().manual_seed(0)
    features = torch.randn(4096, 64, generator=generator)
    labels = (features[:, :10].argmax(dim=1)).long()
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.05),
                                         named_parameters=model.named_parameters())
    state = hvd.elastic.TorchState(model=model, optimizer=optimizer, batch=0)
    state.register_reset_callbacks([lambda: emit("reset", t=time.time(), round=joined_round(),
                                                 rank=hvd.rank(), size=hvd.size())])

    @hvd.elastic.run
    def train(state) -> None:
        first = True
        while True:
            stop = hvd.broadcast_object(os.path.exists(args.stop_file), root_rank=0, name="stop")
            if stop:
                return
            at = (state.batch * args.batch_size * hvd.size() + hvd.rank() * args.batch_size) % len(features)
            x, y = features[at:at + args.batch_size], labels[at:at + args.batch_size]
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()  # waits for the allreduce of every gradient
            if first:
                emit("step", t=time.time(), round=joined_round(), rank=hvd.rank(), size=hvd.size(),
                     batch=state.batch, loss=round(loss.item(), 4))
                first = False
            state.batch += 1
            if state.batch % args.commit_every == 0:
                state.commit()
            time.sleep(args.step_sleep)

    train(state)
    emit("done", t=time.time(), batch=state.batch)


if __name__ == "__main__":
    main()
