"""The process's runtime holder and error mapping: what basics, process_sets and the bindings share.

All mutable state lives in one holder object, ``state``; the native runtime is freed when the last
Python object that still needs it (the holder, a pending handle, a thread inside a wait) lets go
of it. Importing this module loads no native library.
"""

from __future__ import annotations

import atexit
import ctypes
import threading
from typing import Callable, Dict, List, Optional, Tuple

from korovod.common import _lib, settings
from korovod.common.exceptions import HorovodInternalError
from korovod.common.progress import ProgressReporter

NOT_INITIALIZED_MESSAGE = "Horovod has not been initialized; use hvd.init()."


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

    __slots__ = ("runtime", "lock", "pending", "abandoned", "exit_hook_registered", "shape_arrays", "listeners",
                 "progress")

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
        # Rank 0's progress lines (progress.py); it decides on first use after each init.
        self.progress = ProgressReporter(self._rank_and_size, lambda: settings.current().progress_interval_seconds,
                                         at_exit=atexit.register)
        self.listeners.append(self.progress.runtime_changed)

    def _rank_and_size(self) -> Optional[Tuple[int, int]]:
        rt = self.runtime
        if rt is None:
            return None
        rank, size = rt.lib.korovod_rank(rt.ptr), rt.lib.korovod_size(rt.ptr)
        return (rank, size) if rank >= 0 and size > 0 else None

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


def query(function_name: str) -> int:
    """A korovod_<query>(runtime) that answers a count or an index (size, rank, ...)."""
    rt = state.require()
    value = getattr(rt.lib, function_name)(rt.ptr)
    if value < 0:
        raise ValueError(NOT_INITIALIZED_MESSAGE)
    return value
