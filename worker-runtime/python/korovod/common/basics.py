"""The process's korovod runtime as Python sees it: init/shutdown, queries, error mapping.

Framework-neutral (korovod.torch uses it; a TensorFlow binding would share it). All mutable state
lives in one holder object, ``state``; the native runtime is freed when the last Python object
that still needs it (the holder, a pending handle, a thread inside a wait) lets go of it.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import threading
from typing import Callable, Dict, List, Optional, Sequence

from korovod.common import _lib
from korovod.common.exceptions import HorovodInternalError

NOT_INITIALIZED_MESSAGE = "Horovod has not been initialized; use hvd.init()."

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


class NativeRuntime:
    """One korovod_runtime*. korovod_destroy runs once nothing refers to this object any more, so a
    thread still inside a wait or a pending handle never sees freed memory after shutdown()."""

    __slots__ = ("ptr", "lib", "ptr_arg")

    def __init__(self, lib: ctypes.CDLL, ptr: int):
        self.lib = lib
        self.ptr = ptr
        self.ptr_arg = ctypes.c_void_p(ptr)  # for calls without declared argument types

    def __del__(self):
        ptr, self.ptr = self.ptr, None
        if ptr:
            self.lib.korovod_destroy(ptr)


class RuntimeState:
    """The single holder of mutable state (Horovod keeps one such object per framework)."""

    __slots__ = ("runtime", "lock", "pending", "abandoned", "exit_hook_registered", "shape_arrays", "listeners")

    def __init__(self):
        self.runtime: Optional[NativeRuntime] = None
        self.lock = threading.RLock()  # init/shutdown/process-set changes
        # handle -> what an asynchronous operation keeps alive until synchronize (the binding's
        # entries); cleared by init and shutdown as Horovod clears its handle map.
        self.pending: Dict[int, object] = {}
        # Operations whose wait was interrupted (Ctrl-C): the runtime may still write their
        # tensors, so they stay referenced for the life of the process.
        self.abandoned: List[object] = []
        self.exit_hook_registered = False
        # Bindings pass shapes as int64 arrays, cached by shape (tuple -> ctypes array).
        self.shape_arrays: Dict[tuple, object] = {}
        # Called with the korovod_runtime* after init and with None before shutdown: native code
        # that queues on the runtime by itself (korovod.tensorflow's graph ops).
        self.listeners: List[Callable[[Optional[int]], None]] = []

    def require(self) -> NativeRuntime:
        rt = self.runtime
        if rt is None:
            raise ValueError(NOT_INITIALIZED_MESSAGE)
        return rt


state = RuntimeState()


def error_for(code: int, text: str) -> Exception:
    """The Python exception for a C ABI error code (c_api.h documents the mapping). It carries the
    code as `korovod_code`, for a binding whose framework has error types of its own (TensorFlow)."""
    if code == _lib.ERR_INVALID_ARGUMENT:
        error: Exception = ValueError(text)
    elif code == _lib.ERR_PRECONDITION:
        error = RuntimeError(text)  # ranks disagree; Horovod's torch tests catch RuntimeError
    elif code == _lib.ERR_NOT_INITIALIZED:
        error = ValueError(NOT_INITIALIZED_MESSAGE + (f" ({text})" if text else ""))
    else:
        error = HorovodInternalError(text or f"korovod error {code}")
    error.korovod_code = code  # type: ignore[attr-defined]
    return error


def last_error(rt: NativeRuntime, code: int) -> Exception:
    return error_for(code, _lib.decode(rt.lib.korovod_last_error(rt.ptr)))


# ---------------------------------------------------------------- lifecycle


def init(comm=None, process_sets=None) -> None:
    """Initializes korovod (Horovod's hvd.init). Idempotent while the runtime is running.

    comm: None (every rank), a list of world ranks to run on, or an mpi4py communicator.
    process_sets: None, a list of ProcessSet (static sets; every rank passes the same list), or
    "dynamic" (sets HOROVOD_DYNAMIC_PROCESS_SETS=1 so add_process_set works later).
    """
    from korovod.common import process_sets as ps_module

    with state.lock:
        if state.runtime is not None:
            if state.runtime.lib.korovod_is_initialized(state.runtime.ptr):
                return
            _drop_runtime()  # it died (peer lost, timed out): start a fresh one
        sets = _normalize_process_sets(process_sets)
        lib = _lib.load()
        options = _lib.InitOptions()
        options.controller = _lib.CONTROLLER_AUTO
        keep_alive = _fill_comm(options, comm)
        static_ranks = ps_module.static_set_ranks(sets, comm)
        keep_alive += _fill_sets(options, static_ranks)
        out = ctypes.c_void_p()
        err = _lib.error_buffer()
        code = lib.korovod_init_ex(ctypes.byref(out), ctypes.byref(options), err, len(err))
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


def _query(function_name: str) -> int:
    rt = state.require()
    value = getattr(rt.lib, function_name)(rt.ptr)
    if value < 0:
        raise ValueError(NOT_INITIALIZED_MESSAGE)
    return value


def size() -> int:
    """The number of processes."""
    return _query("korovod_size")


def rank() -> int:
    """This process's rank in [0, size())."""
    return _query("korovod_rank")


def local_size() -> int:
    """The number of processes on this host."""
    return _query("korovod_local_size")


def local_rank() -> int:
    """This process's rank among the processes on its host."""
    return _query("korovod_local_rank")


def cross_size() -> int:
    """The number of hosts that have a process with this process's local rank."""
    return _query("korovod_cross_size")


def cross_rank() -> int:
    """The index of this process's host among the hosts with its local rank."""
    return _query("korovod_cross_rank")


def is_homogeneous() -> bool:
    """True when every host runs the same number of processes."""
    return bool(_query("korovod_is_homogeneous"))


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
    return bool(_lib.load().korovod_mpi_built())


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
    return bool(_lib.load().korovod_gloo_built())


def nccl_built() -> int:
    """NCCL_VERSION_CODE of the NCCL korovod was built with, 0 without NCCL."""
    return int(_lib.load().korovod_nccl_built())


def cuda_built() -> bool:
    """True when korovod was built with CUDA support."""
    return bool(_lib.load().korovod_cuda_built())


def ddl_built() -> bool:
    """Always False: korovod has no IBM DDL backend."""
    return False


def ccl_built() -> bool:
    """Always False: korovod has no oneCCL backend."""
    return False


def rocm_built() -> bool:
    """Always False: korovod has no ROCm backend."""
    return False


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


# ---------------------------------------------------------------- process sets (native side)


def process_set_rank(process_set_id: int) -> int:
    rt = state.require()
    included = rt.lib.korovod_process_set_included(rt.ptr, process_set_id)
    if included < 0:
        raise last_error(rt, included)
    if not included:
        raise ValueError(f"Process is not part of provided process set (id {process_set_id}).")
    value = rt.lib.korovod_process_set_rank(rt.ptr, process_set_id)
    if value < 0:
        raise last_error(rt, value)
    return value


def process_set_size(process_set_id: int) -> int:
    rt = state.require()
    value = rt.lib.korovod_process_set_size(rt.ptr, process_set_id)
    if value < 0:
        raise last_error(rt, value)
    return value


def process_set_included(process_set_id: int) -> bool:
    rt = state.require()
    value = rt.lib.korovod_process_set_included(rt.ptr, process_set_id)
    if value < 0:
        raise last_error(rt, value)
    return bool(value)


def process_set_table() -> Dict[int, List[int]]:
    """{id: sorted global ranks} of every process set the runtime knows."""
    rt = state.require()
    lib = rt.lib
    count = lib.korovod_process_set_ids(rt.ptr, None, 0)
    if count < 0:
        raise last_error(rt, count)
    ids = (ctypes.c_int * max(count, 1))()
    count = lib.korovod_process_set_ids(rt.ptr, ids, count)
    table = {}
    world = size()
    for ps_id in list(ids)[:count]:
        ranks = (ctypes.c_int * world)()
        n = lib.korovod_process_set_ranks(rt.ptr, ps_id, ranks, world)
        if n < 0:
            raise last_error(rt, n)
        table[ps_id] = list(ranks)[:n]
    return table


def add_process_set_ranks(ranks: Sequence[int]) -> int:
    rt = state.require()
    array = (ctypes.c_int * max(len(ranks), 1))(*ranks)
    value = rt.lib.korovod_add_process_set(rt.ptr, array, len(ranks))
    if value < 0:
        raise last_error(rt, value)
    return value


def remove_process_set_id(process_set_id: int) -> None:
    rt = state.require()
    code = rt.lib.korovod_remove_process_set(rt.ptr, process_set_id)
    if code != _lib.OK:
        raise last_error(rt, code)

