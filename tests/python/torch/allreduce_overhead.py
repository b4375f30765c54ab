#!/usr/bin/env python3
"""What korovod.torch adds to one small synchronous allreduce over a C caller of the same runtime.

Compiles a small C file (with `cc`, against worker-runtime/include/korovod/c_api.h) holding
  - a loop of korovod_enqueue / korovod_wait / korovod_release on a 1-element float32 tensor, the
    C ABI's own cost (a thin layer over the C++ Runtime API), run on the runtime hvd.init() made;
  - no-op stand-ins with the C ABI's signatures, to time the Python side alone (--stubbed).
Then, in the same process and interleaved rep by rep, times that C loop against hvd.allreduce(t).
Wall time is what a training step pays; process CPU time excludes time the OS gave to other
processes, which keeps the difference readable on a busy host.

Run under the launcher you measure, e.g.
  mpirun -np 2 --bind-to none python3 tests/python/torch/allreduce_overhead.py
Rank 0 prints the per-call numbers (minimum and median over the reps, in microseconds).
"""

import argparse
import ctypes
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from pathlib import Path

import torch

import korovod.torch as hvd
from korovod.common import _lib, basics, settings

C_SOURCE = r"""
#include <time.h>
#include "korovod/c_api.h"

/* n synchronous allreduces of a 1-element float32 tensor through the C ABI. */
void c_allreduce_loop(korovod_runtime* rt, int n, float* in, float* out) {
  const int64_t shape[1] = {1};
  for (int i = 0; i < n; i++) {
    int64_t h = korovod_enqueue(rt, KOROVOD_OP_ALLREDUCE, 0, in, out, KOROVOD_FLOAT32, 1, shape, -1,
                                KOROVOD_AVERAGE, 1.0, 1.0, 0, 0, 0, 0, 0);
    if (h < 0 || korovod_wait(rt, h) != 0) return;
    korovod_release(rt, h);
  }
}

/* No-op stand-ins with the signatures the hot path calls. */
int64_t stub_enqueue(void* rt, int type, const char* name, void* input, void* output, int dtype, int ndim,
                     const int64_t* shape, int device, int op, double prescale, double postscale, int root,
                     const int32_t* splits, int num_splits, int process_set, void* ready) { return 1; }
int stub_wait_for(void* rt, int64_t handle, double timeout) { return 0; }
void stub_release(void* rt, int64_t handle) {}
"""


def build_helper(directory: Path) -> ctypes.CDLL:
    include = Path(__file__).resolve().parents[3] / "worker-runtime" / "include"
    library = _lib.library_path(settings.current().library)
    source = directory / "overhead.c"
    target = directory / "liboverhead.so"
    source.write_text(C_SOURCE)
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", f"-I{include}", "-o", str(target), str(source),
                    str(library), f"-Wl,-rpath,{library.parent}"], check=True)
    helper = ctypes.CDLL(str(target))
    helper.c_allreduce_loop.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
    helper.c_allreduce_loop.restype = None
    return helper


def timed(fn, calls):
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return (time.perf_counter() - wall) / calls * 1e6, (time.process_time() - cpu) / calls * 1e6


def compare_with_c(helper, calls, reps):
    t, out = torch.ones(1), torch.empty(1)

    def c_loop():
        helper.c_allreduce_loop(basics.state.runtime.ptr, calls, t.data_ptr(), out.data_ptr())

    def python_loop():
        for _ in range(calls):
            hvd.allreduce(t)

    c_loop(), python_loop()  # warm up (caches, first-call negotiation)
    results = {"C ABI loop": [], "hvd.allreduce": []}
    for _ in range(reps):
        results["C ABI loop"].append(timed(c_loop, calls))
        results["hvd.allreduce"].append(timed(python_loop, calls))
    return results


def stubbed_python_cost(helper, calls, reps):
    """CPU time of hvd.allreduce's own work per call, with the C ABI replaced by no-ops."""
    real = basics.state.runtime

    class StubLibrary:
        korovod_enqueue_unchecked = helper["stub_enqueue"]
        korovod_enqueue_unchecked.restype = ctypes.c_int64
        korovod_wait_for = helper["stub_wait_for"]
        korovod_wait_for.argtypes = real.lib.korovod_wait_for.argtypes
        korovod_wait_for.restype = ctypes.c_int
        korovod_release = helper["stub_release"]
        korovod_release.argtypes = real.lib.korovod_release.argtypes
        korovod_release.restype = None

        @staticmethod
        def korovod_destroy(ptr):
            pass

    t = torch.ones(1)
    basics.state.runtime = basics.NativeRuntime(StubLibrary(), 1)
    try:
        timer = timeit.Timer(lambda: hvd.allreduce(t), timer=time.thread_time)
        return min(timer.repeat(number=calls, repeat=reps)) / calls * 1e6
    finally:
        basics.state.runtime = real


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog=__doc__.split("\n\n", 1)[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=3000, help="allreduces per rep (default 3000)")
    parser.add_argument("--reps", type=int, default=15, help="reps, C and Python interleaved (default 15)")
    parser.add_argument("--stubbed", action="store_true",
                        help="also time the Python side alone, against no-op C stand-ins")
    args = parser.parse_args()
    hvd.init()
    with tempfile.TemporaryDirectory(prefix="korovod-overhead-") as directory:
        helper = build_helper(Path(directory))
        results = compare_with_c(helper, args.calls, args.reps)
        stubbed = stubbed_python_cost(helper, args.calls * 10, 7) if args.stubbed else None
    if hvd.rank() == 0:
        print(f"{hvd.size()} rank(s), torch {torch.__version__}, python {sys.version.split()[0]}, "
              f"{args.reps} reps x {args.calls} calls, 1-element float32, us per call:")
        for what, samples in results.items():
            walls, cpus = [s[0] for s in samples], [s[1] for s in samples]
            print(f"  {what:14s} wall min {min(walls):7.2f} median {statistics.median(walls):7.2f}   "
                  f"process cpu min {min(cpus):7.2f} median {statistics.median(cpus):7.2f}")
        c, py = results["C ABI loop"], results["hvd.allreduce"]
        print(f"  overhead of hvd.allreduce: wall {min(s[0] for s in py) - min(s[0] for s in c):.2f} (min), "
              f"{statistics.median(s[0] for s in py) - statistics.median(s[0] for s in c):.2f} (median); "
              f"process cpu {min(s[1] for s in py) - min(s[1] for s in c):.2f} (min), "
              f"{statistics.median(s[1] for s in py) - statistics.median(s[1] for s in c):.2f} (median)")
        if stubbed is not None:
            print(f"  Python side alone (C ABI stubbed, thread cpu, min): {stubbed:.2f}")
    hvd.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
