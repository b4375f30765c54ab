"""ctypes declarations of libkorovod's C ABI (worker-runtime/include/korovod/c_api.h).

Nothing here is compiled against Python or a framework: one libkorovod.so serves every Python and
torch version. ctypes.CDLL releases the GIL around each call, which the blocking waits rely on.
"""

from __future__ import annotations

import ctypes
import importlib.util
import threading
from ctypes import CFUNCTYPE, POINTER, c_char, c_char_p, c_double, c_int, c_int32, c_int64, c_uint32, c_uint64, c_void_p
from pathlib import Path
from typing import Optional

# Error codes (negative), as in c_api.h.
OK = 0
ERR_INVALID_ARGUMENT = -1
ERR_PRECONDITION = -2
ERR_ABORTED = -3
ERR_UNKNOWN = -4
ERR_IN_PROGRESS = -5
ERR_NOT_INITIALIZED = -6

# korovod::DataType values.
UINT8, INT8, UINT16, INT16, INT32, INT64, FLOAT16, FLOAT32, FLOAT64, BOOL, BFLOAT16 = range(11)

# Seconds per wait call (korovod_wait_for, korovod_wait_all) of every binding: the GIL is released
# during each, and Ctrl-C reaches Python between them.
WAIT_SLICE_SECONDS = 1.0

# korovod::ReduceOp values (Horovod's hvd.Average ... hvd.Product).
AVERAGE, SUM, ADASUM, MIN, MAX, PRODUCT = 0, 1, 2, 3, 4, 5

# korovod::RequestType values.
OP_ALLREDUCE, OP_ALLGATHER, OP_BROADCAST, OP_JOIN = 0, 1, 2, 3
OP_ALLTOALL, OP_BARRIER, OP_REDUCESCATTER = 5, 6, 7

CONTROLLER_AUTO, CONTROLLER_MPI, CONTROLLER_TCP = 0, 1, 2

ERROR_TEXT_BYTES = 4096


class InitOptions(ctypes.Structure):
    """korovod_init_options."""

    _fields_ = [
        ("controller", c_int32),
        ("mpi_comm", c_void_p),
        ("comm_ranks", POINTER(c_int32)),
        ("num_comm_ranks", c_int32),
        ("set_ranks", POINTER(c_int32)),
        ("set_sizes", POINTER(c_int32)),
        ("num_sets", c_int32),
    ]


# The elastic driver's world (korovod_elastic_world) and options (korovod_elastic_options);
# korovod.common.elastic_job fills them.
ELASTIC_DISCOVER_FN = CFUNCTYPE(c_int, c_void_p, POINTER(c_char), c_int)
ELASTIC_START_FN = CFUNCTYPE(c_int, c_void_p, c_char_p, c_int, POINTER(c_char), c_int)
ELASTIC_STOP_FN = CFUNCTYPE(None, c_void_p, c_char_p, c_int)
ELASTIC_SAY_FN = CFUNCTYPE(None, c_void_p, c_char_p)


class ElasticWorld(ctypes.Structure):
    """korovod_elastic_world."""

    _fields_ = [("context", c_void_p), ("discover", ELASTIC_DISCOVER_FN), ("start_worker", ELASTIC_START_FN),
                ("stop_worker", ELASTIC_STOP_FN), ("say", ELASTIC_SAY_FN)]


class ElasticOptions(ctypes.Structure):
    """korovod_elastic_options."""

    _fields_ = [("start_np", c_int32), ("min_np", c_int32), ("max_np", c_int32), ("reset_limit", c_int32),
                ("blacklist_after_failures", c_int32), ("cooldown_min_seconds", c_int32),
                ("cooldown_max_seconds", c_int32), ("elastic_timeout_seconds", c_double),
                ("discovery_interval_seconds", c_double), ("verbose", c_int32),
                ("elastic_timeout_name", c_char_p), ("start_np_name", c_char_p), ("min_np_name", c_char_p),
                ("reset_limit_name", c_char_p)]


# Opaque pointers (korovod_runtime*, korovod_group*, korovod_event*, DLManagedTensor*) are
# c_void_p: Python ints cross without a wrapper object per call. So do the shape and splits
# arrays, passed by address from arrays the caller keeps alive.
_rt = c_void_p
_buf = c_void_p

_OP_ARGS = [c_char_p, c_void_p, c_void_p, c_int, c_int, _buf, c_int, c_int, c_double, c_double, c_int,
            _buf, c_int, c_int, c_void_p]

_SIGNATURES = {
    # library
    "korovod_version": ([], c_char_p),
    "korovod_launched_by_mpi": ([], c_int),
    "korovod_mpi_available": ([c_char_p, c_int], c_int),
    # lifecycle
    "korovod_init_ex": ([POINTER(c_void_p), POINTER(InitOptions), c_char_p, c_int], c_int),
    "korovod_init": ([POINTER(c_void_p), c_void_p, _buf, _buf, c_int, c_char_p, c_int], c_int),
    "korovod_shutdown": ([_rt], c_int),
    "korovod_destroy": ([_rt], None),
    "korovod_is_initialized": ([_rt], c_int),
    "korovod_last_error": ([_rt], c_char_p),
    # elastic mode (korovod.common.elastic; optional: a library without them cannot run elastic jobs)
    "korovod_elastic_round": ([_rt], c_int64),
    "korovod_elastic_hosts_version": ([POINTER(c_uint64), POINTER(c_uint32), c_char_p, c_int], c_int),
    "korovod_elastic_published_round": ([POINTER(c_uint64), c_char_p, c_int], c_int),
    # hosting the rendezvous (korovod.common.rendezvous; optional: an older library lacks it)
    "korovod_rendezvous_start": ([POINTER(c_void_p), c_char_p, c_int, c_char_p, c_char_p, c_int], c_int),
    "korovod_rendezvous_port": ([c_void_p], c_int),
    "korovod_rendezvous_stop": ([c_void_p], None),
    # driving an elastic job (korovod.common.elastic_job; optional: an older library lacks it)
    "korovod_elastic_driver_new": ([POINTER(c_void_p), POINTER(ElasticOptions), POINTER(ElasticWorld), c_char_p, c_int,
                                    c_char_p, c_char_p, c_int], c_int),
    "korovod_elastic_driver_tick": ([c_void_p], c_double),
    "korovod_elastic_driver_worker_exited": ([c_void_p, c_char_p, c_int, c_int], None),
    "korovod_elastic_driver_outcome": ([c_void_p, POINTER(c_int), c_char_p, c_int], c_int),
    "korovod_elastic_driver_round": ([c_void_p], c_int),
    "korovod_elastic_driver_rank_of": ([c_void_p, c_char_p, c_int], c_int),
    "korovod_elastic_driver_free": ([c_void_p], None),
    # queries
    "korovod_rank": ([_rt], c_int),
    "korovod_size": ([_rt], c_int),
    "korovod_local_rank": ([_rt], c_int),
    "korovod_local_size": ([_rt], c_int),
    "korovod_cross_rank": ([_rt], c_int),
    "korovod_cross_size": ([_rt], c_int),
    "korovod_is_homogeneous": ([_rt], c_int),
    "korovod_mpi_built": ([], c_int),
    "korovod_mpi_enabled": ([_rt], c_int),
    "korovod_mpi_threads_supported": ([], c_int),
    "korovod_nccl_built": ([], c_int),
    "korovod_gloo_built": ([], c_int),
    "korovod_cuda_built": ([], c_int),
    "korovod_transport_name": ([_rt], c_char_p),
    "korovod_backend_names": ([_rt], c_char_p),
    # operations
    "korovod_enqueue": ([_rt, c_int] + _OP_ARGS, c_int64),
    "korovod_group_new": ([], c_void_p),
    "korovod_group_add": ([c_void_p, c_int] + _OP_ARGS, c_int),
    "korovod_group_enqueue": ([_rt, c_void_p, _buf, c_int], c_int),
    "korovod_group_free": ([c_void_p], None),
    "korovod_enqueue_many": ([_rt, c_int, c_int, _buf, _buf, _buf, _buf, _buf, _buf, _buf, _buf, _buf, _buf, c_int,
                              _buf, _buf], c_int),
    "korovod_cuda_event_record": ([c_int, c_void_p, c_char_p, c_int], c_void_p),
    "korovod_event_free": ([c_void_p], None),
    # handles
    "korovod_poll": ([_rt, c_int64], c_int),
    "korovod_wait": ([_rt, c_int64], c_int),
    "korovod_wait_for": ([_rt, c_int64, c_double], c_int),
    "korovod_wait_all": ([_rt, _buf, c_int, c_double, _buf], c_int),
    "korovod_handle_error": ([_rt, c_int64], c_char_p),
    "korovod_handle_output": ([_rt, c_int64, POINTER(c_void_p), POINTER(c_int), _buf, c_int], c_int),
    "korovod_handle_take_dlpack": ([_rt, c_int64, c_int, c_int], c_void_p),
    "korovod_dlpack_delete": ([c_void_p], None),
    "korovod_handle_received_splits": ([_rt, c_int64, _buf, c_int], c_int),
    "korovod_handle_last_joined_rank": ([_rt, c_int64], c_int),
    "korovod_release": ([_rt, c_int64], None),
    "korovod_release_many": ([_rt, _buf, c_int], None),
    # process sets
    "korovod_add_process_set": ([_rt, _buf, c_int], c_int),
    "korovod_remove_process_set": ([_rt, c_int], c_int),
    "korovod_process_set_rank": ([_rt, c_int], c_int),
    "korovod_process_set_size": ([_rt, c_int], c_int),
    "korovod_process_set_included": ([_rt, c_int], c_int),
    "korovod_process_set_ids": ([_rt, _buf, c_int], c_int),
    "korovod_process_set_ranks": ([_rt, c_int, _buf, c_int], c_int),
    # timeline
    "korovod_start_timeline": ([_rt, c_char_p, c_int], c_int),
    "korovod_stop_timeline": ([_rt], c_int),
}

# The functions an operation needs; a library without them is too old for this package.
_REQUIRED = ("korovod_init_ex", "korovod_enqueue", "korovod_wait_for", "korovod_handle_take_dlpack",
             "korovod_group_new", "korovod_enqueue_many", "korovod_wait_all", "korovod_release_many")


def library_path(explicit: Optional[Path] = None) -> Path:
    """`explicit` (KOROVOD_LIBRARY, from settings.py: this module imports nothing of korovod, so
    that tests/python/c-abi can load it alone), else lib/libkorovod.so inside the korovod package."""
    if explicit is not None:
        return explicit
    return Path(__file__).resolve().parent.parent / "lib" / "libkorovod.so"


def _declare(cdll: ctypes.CDLL) -> None:
    path = getattr(cdll, "_name", "libkorovod")
    for name, (argtypes, restype) in _SIGNATURES.items():
        try:
            fn = getattr(cdll, name)
        except AttributeError:
            if name in _REQUIRED:
                raise ImportError(f"{path} has no {name}: it is older than this korovod Python package; "
                                  "rebuild libkorovod or point KOROVOD_LIBRARY at a current one") from None
            continue
        fn.argtypes = argtypes
        fn.restype = restype
    # The synchronous allreduce's enqueue without per-argument conversion (about a quarter of a
    # microsecond less per call): its caller passes C-int-sized ints, c_void_p and c_double.
    unchecked = cdll["korovod_enqueue"]
    unchecked.restype = c_int64
    cdll.korovod_enqueue_unchecked = unchecked


_load_lock = threading.Lock()
_loaded: list = []  # the one loaded library, filled on first use (kept in a list: no rebinding)


NCCL_SONAME = "libnccl.so.2"


def environment_nccl() -> Optional[Path]:
    """The NCCL of this Python environment: PyPI's nvidia-nccl-cu* wheel (nvidia/nccl/lib), the one
    torch loads. None without it. Found without importing anything."""
    spec = importlib.util.find_spec("nvidia")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(folder) / "nccl" / "lib" / NCCL_SONAME
        if candidate.exists():
            return candidate
    return None


def _preload_environment_nccl(library: Path) -> None:
    """A libkorovod built with NCCL needs libnccl.so.2, which the loader binds by that name once per
    process: loaded first through libkorovod's runpath (the NCCL it was built against), it would
    also serve torch, imported later, which fails on symbols of its newer NCCL. So the
    environment's NCCL (what importing torch first would load) is loaded first; NCCL 2 keeps
    its API, so libkorovod runs on the newer one."""
    nccl = environment_nccl()
    if nccl is None or NCCL_SONAME.encode() not in library.read_bytes():
        return
    try:
        ctypes.CDLL(str(nccl), mode=ctypes.RTLD_GLOBAL)
    except OSError:
        pass  # libkorovod then loads its own, as before


def load(explicit: Optional[Path] = None) -> ctypes.CDLL:
    """Loads and declares libkorovod once per process (library_path(explicit))."""
    if _loaded:
        return _loaded[0]
    with _load_lock:
        if not _loaded:
            path = library_path(explicit)
            if not path.exists():
                raise ImportError(f"libkorovod not found at {path}; set KOROVOD_LIBRARY to its path "
                                  "or install the korovod package with its library")
            _preload_environment_nccl(path)
            cdll = ctypes.CDLL(str(path))
            _declare(cdll)
            _loaded.append(cdll)
    return _loaded[0]


def error_buffer() -> ctypes.Array:
    return ctypes.create_string_buffer(ERROR_TEXT_BYTES)


def decode(text: Optional[bytes]) -> str:
    return text.decode("utf-8", "replace") if text else ""
