"""The process's korovod runtime as Python sees it: init/shutdown and queries.

Framework-neutral (every binding uses it). The runtime holder and the error mapping are in
_state.py (re-exported here: scripts and tests reach for basics.state), process sets in
process_sets.py.
"""

from __future__ import annotations

import atexit
import ctypes
import os
from typing import List, Sequence

from korovod.common import _lib, settings
from korovod.common import process_sets as ps_module
from korovod.common._state import NativeRuntime, error_for, last_error, query, state  # noqa: F401 (re-exported)

# Horovod's reduction op values (hvd.Average ...): plain ints, as Horovod's are.
Average = _lib.AVERAGE
Sum = _lib.SUM
Adasum = _lib.ADASUM
Min = _lib.MIN
Max = _lib.MAX
Product = _lib.PRODUCT
_REDUCE_OPS = (Average, Sum, Adasum, Min, Max, Product)


def check_reduce_op(op: int) -> None:
    """A reduction op both bindings accept; the runtime decides what it can reduce with it."""
    if op not in _REDUCE_OPS:
        raise ValueError(f"unknown reduction op {op!r}; use hvd.Average, Sum, Adasum, Min, Max or Product")


# ---------------------------------------------------------------- lifecycle


def _library():
    return _lib.load(settings.current().library)


# An elastic init that waited for a peer of a round the driver has since replaced fails with this
# in its text (transport/tcp/tcp_transport.cc, wait_for_peer_key); init then joins the newer
# round, at most this many times in a row.
SUPERSEDED = "while this worker waited at the rendezvous of round"
SUPERSEDED_RETRIES = 10


def init(comm=None, process_sets=None) -> None:
    """Initializes korovod (Horovod's hvd.init). Idempotent while the runtime is running.

    comm: None (every rank), a list of world ranks to run on, or an mpi4py communicator.
    process_sets: None, a list of ProcessSet (static sets; every rank passes the same list), or
    "dynamic" (sets HOROVOD_DYNAMIC_PROCESS_SETS=1 so add_process_set works later).
    """
    with state.lock:
        if state.runtime is not None:
            if state.runtime.lib.korovod_is_initialized(state.runtime.ptr):
                return
            _drop_runtime()  # it died (peer lost, timed out): start a fresh one
        sets = _normalize_process_sets(process_sets)
        lib = _library()
        options = _lib.InitOptions()
        options.controller = _lib.CONTROLLER_AUTO
        keep_alive = _fill_comm(options, comm)
        static_ranks = ps_module.static_set_ranks(sets, comm)
        keep_alive += _fill_sets(options, static_ranks)
        out = ctypes.c_void_p()
        err = _lib.error_buffer()
        for _ in range(SUPERSEDED_RETRIES):
            code = lib.korovod_init_ex(ctypes.byref(out), ctypes.byref(options), err, len(err))
            # Elastic: the round was superseded while a peer never came: join the newer one.
            if code != _lib.ERR_ABORTED or SUPERSEDED not in _lib.decode(err.value):
                break
        del keep_alive
        if code != _lib.OK or not out.value:
            raise ValueError(f"Horovod initialization failed: {_lib.decode(err.value)}")
        state.runtime = NativeRuntime(lib, out.value)
        state.pending.clear()
        for listener in state.listeners:
            listener(out.value)
        if not state.exit_hook_registered:
            atexit.register(shutdown)
            state.exit_hook_registered = True
        ps_module.assign_ids(sets)


def _normalize_process_sets(process_sets) -> list:
    if process_sets is None:
        return []
    if isinstance(process_sets, str):
        if process_sets.lower() != "dynamic":
            raise ValueError(f"process_sets must be a list of ProcessSet or 'dynamic', not {process_sets!r}")
        # Horovod's own init does exactly this, and its docstring promises it: the variable stays
        # set for the rest of the process and for the processes it starts. The C ABI has no field
        # for it (korovod_init_options is frozen); the runtime reads it at init like any setting.
        os.environ["HOROVOD_DYNAMIC_PROCESS_SETS"] = "1"
        return []
    return list(process_sets)


def _int32_array(values: Sequence[int]):
    return (ctypes.c_int32 * max(len(values), 1))(*values)


def _fill_comm(options: _lib.InitOptions, comm) -> list:
    if comm is None:
        return []
    if _is_rank_list(comm):
        ranks = [int(r) for r in comm]
        if not ranks:
            return []
        array = _int32_array(ranks)
        options.comm_ranks = ctypes.cast(array, ctypes.POINTER(ctypes.c_int32))
        options.num_comm_ranks = len(ranks)
        return [array]
    from mpi4py import MPI  # only for a communicator: importing it initializes MPI

    if not isinstance(comm, MPI.Comm):
        raise ValueError("Invalid type of argument comm. Expected list of rank integers or mpi4py.MPI.Comm object.")
    options.mpi_comm = MPI._addressof(comm)
    options.controller = _lib.CONTROLLER_MPI
    return [comm]


def _is_rank_list(value) -> bool:
    try:
        iter(value)
    except TypeError:
        return False
    return not isinstance(value, (str, bytes))


def _fill_sets(options: _lib.InitOptions, set_ranks: List[List[int]]) -> list:
    if not set_ranks:
        return []
    flat = _int32_array([r for ranks in set_ranks for r in ranks])
    sizes = _int32_array([len(ranks) for ranks in set_ranks])
    options.set_ranks = ctypes.cast(flat, ctypes.POINTER(ctypes.c_int32))
    options.set_sizes = ctypes.cast(sizes, ctypes.POINTER(ctypes.c_int32))
    options.num_sets = len(set_ranks)
    return [flat, sizes]


def shutdown() -> None:
    """Shuts korovod down (any rank's shutdown ends the job's collectives, as in Horovod)."""
    with state.lock:
        if state.runtime is not None:
            _drop_runtime()


def _drop_runtime() -> None:
    rt = state.runtime
    state.runtime = None
    for listener in state.listeners:
        listener(None)
    code = rt.lib.korovod_shutdown(rt.ptr)
    if code != _lib.OK:
        # The background thread may still be inside a collective writing to these tensors.
        state.abandoned.extend(state.pending.values())
    state.pending.clear()
    # rt is destroyed here unless a waiting thread or an abandoned operation still holds it.


def is_initialized() -> bool:
    rt = state.runtime
    return rt is not None and bool(rt.lib.korovod_is_initialized(rt.ptr))


# ---------------------------------------------------------------- queries


def size() -> int:
    """The number of processes."""
    return query("korovod_size")


def rank() -> int:
    """This process's rank in [0, size())."""
    return query("korovod_rank")


def local_size() -> int:
    """The number of processes on this host."""
    return query("korovod_local_size")


def local_rank() -> int:
    """This process's rank among the processes on its host."""
    return query("korovod_local_rank")


def cross_size() -> int:
    """The number of hosts that have a process with this process's local rank."""
    return query("korovod_cross_size")


def cross_rank() -> int:
    """The index of this process's host among the hosts with its local rank."""
    return query("korovod_cross_rank")


def is_homogeneous() -> bool:
    """True when every host runs the same number of processes."""
    return bool(query("korovod_is_homogeneous"))


def transport_name() -> str:
    """The control plane in use (e.g. "MPI" or "TCP"); korovod's addition."""
    rt = state.require()
    return _lib.decode(rt.lib.korovod_transport_name(rt.ptr))


def backend_names() -> List[str]:
    """The data planes in use, first preferred (e.g. ["SHM", "TCP"]); korovod's addition."""
    rt = state.require()
    names = _lib.decode(rt.lib.korovod_backend_names(rt.ptr))
    return [n for n in names.split(",") if n]


def mpi_enabled() -> bool:
    """True when this job's control plane is MPI."""
    rt = state.runtime
    return rt is not None and bool(rt.lib.korovod_mpi_enabled(rt.ptr))


def mpi_built() -> bool:
    """True when korovod's MPI support (libkorovod_mpi.so) was built."""
    return bool(_library().korovod_mpi_built())


def mpi_threads_supported() -> bool:
    """True when MPI was initialised with MPI_THREAD_MULTIPLE (so mpi4py may be mixed in)."""
    if not mpi_enabled():
        raise ValueError("Horovod MPI is not enabled; Please make sure it's installed and enabled.")
    return bool(state.require().lib.korovod_mpi_threads_supported())


def gloo_enabled() -> bool:
    """True when the job runs without MPI over korovod's TCP rendezvous (Horovod's Gloo mode)."""
    rt = state.runtime
    return rt is not None and _lib.decode(rt.lib.korovod_transport_name(rt.ptr)) == "TCP"


def gloo_built() -> bool:
    """True when the MPI-free TCP control plane (korovod's counterpart of Gloo) was built."""
    return bool(_library().korovod_gloo_built())


def nccl_built() -> int:
    """NCCL_VERSION_CODE of the NCCL korovod was built with, 0 without NCCL."""
    return int(_library().korovod_nccl_built())


def cuda_built() -> bool:
    """True when korovod was built with CUDA support."""
    return bool(_library().korovod_cuda_built())


def ddl_built() -> bool:
    """Always False: korovod has no IBM DDL backend."""
    return False


def ccl_built() -> bool:
    """Always False: korovod has no oneCCL backend."""
    return False


def rocm_built() -> bool:
    """Always False: korovod has no ROCm backend."""
    return False


# ---------------------------------------------------------------- progress


def report_progress(step=None, total_steps=None, loss=None, batch_size=None, **metrics) -> None:
    """Tells korovod's progress lines (docs/progress.md) what the script knows; call it on every
    rank, as often as every step: only global rank 0 does anything, the others return at once.

    step: steps completed; given once, it replaces the steps korovod counts by itself from then
    on. total_steps: the steps of the whole run (with a rate it gives the ETA). loss: this step's
    loss. batch_size: samples per step on each rank (gives samples per second). metrics: named
    numbers (e.g. accuracy=0.93). Values may be Python numbers, numpy scalars or one-element
    torch or TensorFlow (eager) tensors, read on rank 0 only (a tensor's .item() waits for it);
    a value of another type is a TypeError naming it. A line is written when
    KOROVOD_PROGRESS_INTERVAL_SECONDS (10) passed since the last one. Nothing happens before
    hvd.init() or with lines off.

        hvd.report_progress(step=epoch * steps + batch + 1, total_steps=epochs * steps,
                            loss=loss, batch_size=32, accuracy=accuracy)
    """
    reporter = state.progress
    if reporter.active:
        reporter.report(step, total_steps, loss, batch_size, metrics)


# ---------------------------------------------------------------- timeline


def start_timeline(file_path: str, mark_cycles: bool = False) -> None:
    """Starts writing a Chrome-trace timeline to file_path (rank 0 writes)."""
    rt = state.require()
    code = rt.lib.korovod_start_timeline(rt.ptr, os.fspath(file_path).encode(), int(bool(mark_cycles)))
    if code != _lib.OK:
        raise last_error(rt, code)


def stop_timeline() -> None:
    """Stops the timeline and closes its file."""
    rt = state.require()
    code = rt.lib.korovod_stop_timeline(rt.ptr)
    if code != _lib.OK:
        raise last_error(rt, code)
