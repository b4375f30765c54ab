"""One rank of a small job that test_ops_tcp_jobs.py starts without mpirun (korovod's TCP
rendezvous, as a non-MPI launcher would). Prints "<SCENARIO>-OK <details>" when the scenario
behaved as it must.

  python tcp_job_worker.py lost_peer   rank 1 dies after one allreduce; rank 0's next one must raise
                                       HorovodInternalError in bounded time
  python tcp_job_worker.py interrupt   rank 1 never joins; SIGINT must reach rank 0's blocked
                                       allreduce as KeyboardInterrupt within about a second of the
                                       signal (the wait looks every second)
  python tcp_job_worker.py reinit      init -> shutdown -> init without mpirun
  python tcp_job_worker.py sum         a Sum allreduce of rank + 1 (test_rendezvous_host.py: the
                                       store hosted by the test's own process)
  python tcp_job_worker.py init_error  hvd.init() must fail: prints the exception's type and text
"""

import argparse
import os
import signal
import threading
import time

import torch

import korovod.torch as hvd


def lost_peer() -> None:
    hvd.init()
    hvd.allreduce(torch.ones(4), name="before")
    if hvd.rank() == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    start = time.monotonic()
    try:
        hvd.allreduce(torch.ones(4), name="after")
    except hvd.HorovodInternalError as e:
        print(f"LOST_PEER-OK {time.monotonic() - start:.1f}s: {e}", flush=True)
        os._exit(0)  # the peer is gone: skip the shutdown handshake


def interrupt() -> None:
    hvd.init()
    hvd.allreduce(torch.ones(1), name="warm_up")
    if hvd.rank() == 1:
        time.sleep(5)
        os._exit(0)
    # The time is taken from the moment the signal is sent, not from the start of the wait: on a
    # loaded machine the timer's thread may run late, which is not the wait's doing.
    sent = []

    def send_sigint() -> None:
        sent.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)

    threading.Timer(1.0, send_sigint).start()
    start = time.monotonic()
    try:
        hvd.allreduce(torch.ones(1), name="never_joined")
    except KeyboardInterrupt:
        now = time.monotonic()
        print(f"INTERRUPT-OK {now - sent[0]:.2f}s after the SIGINT ({now - start:.2f}s into the wait)", flush=True)
        os._exit(0)


def reinit() -> None:
    results = []
    for cycle in range(2):
        hvd.init()
        results.append(hvd.allreduce(torch.full((2,), float(cycle + 1)), op=hvd.Sum, name="cycle").tolist())
        hvd.shutdown()
    expected = [[float(c * 2)] * 2 for c in (1, 2)]  # two ranks
    if results == expected:
        print(f"REINIT-OK {results}", flush=True)
    else:
        print(f"REINIT-WRONG {results}, expected {expected}", flush=True)


def sum_of_ranks() -> None:
    hvd.init()
    result = hvd.allreduce(torch.full((3,), float(hvd.rank() + 1)), op=hvd.Sum, name="sum").tolist()
    print(f"SUM-OK rank {hvd.rank()} of {hvd.size()}: {result}", flush=True)
    hvd.shutdown()


def init_error() -> None:
    try:
        hvd.init()
    except Exception as e:  # what a user sees: the type and the text
        print(f"INIT-ERROR {type(e).__name__}: {e}", flush=True)
        return
    print("INIT-SUCCEEDED", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    scenarios = {"lost_peer": lost_peer, "interrupt": interrupt, "reinit": reinit, "sum": sum_of_ranks,
                 "init_error": init_error}
    parser.add_argument("scenario", choices=sorted(scenarios))
    scenarios[parser.parse_args().scenario]()


if __name__ == "__main__":
    main()
