"""What the korovod Python package itself reads from the environment, parsed once per process.

The runtime parses its own variables (KOROVOD_* / HOROVOD_*) in C++ at init
(docs/runtime-config.md); these are the few the Python side acts on. They are read on first use
(the first hvd.init(), for most programs), not at import, so a script or conftest may still set
them after `import korovod`.
"""

from __future__ import annotations

import math
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import List, Mapping, Optional


@dataclass(frozen=True)
class Settings:
    # KOROVOD_ELASTIC=1 (or HOROVOD_ELASTIC=1): korovodrun started this worker in elastic mode.
    elastic: bool = False
    # KOROVOD_LIBRARY: the libkorovod.so to load instead of the package's lib/libkorovod.so.
    library: Optional[Path] = None
    # KOROVOD_TF_NATIVE_OPS=0: korovod.tensorflow's graph collectives run as tf.py_function.
    tf_native_ops: bool = True
    # KOROVOD_PROGRESS_INTERVAL_SECONDS: at most one progress line per this many seconds on rank
    # 0 (progress.py); 0 or less: none.
    progress_interval_seconds: float = 10.0

    @staticmethod
    def from_environment(environ: Mapping[str, str]) -> Settings:
        library = environ.get("KOROVOD_LIBRARY")
        return Settings(elastic="1" in (environ.get("KOROVOD_ELASTIC"), environ.get("HOROVOD_ELASTIC")),
                        library=Path(library) if library else None,
                        tf_native_ops=environ.get("KOROVOD_TF_NATIVE_OPS", "1") != "0",
                        progress_interval_seconds=_seconds(environ, PROGRESS_INTERVAL, 10.0))


PROGRESS_INTERVAL = "KOROVOD_PROGRESS_INTERVAL_SECONDS"


def _seconds(environ: Mapping[str, str], name: str, default: float) -> float:
    text = environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if math.isnan(value):
        raise ValueError(f"{name}={environ[name]!r} is not a number of seconds (e.g. 10; 0 turns it off)")
    return value


_lock = threading.Lock()
_parsed: List[Settings] = []  # the one parse, made on first use


def current() -> Settings:
    """This process's settings: os.environ parsed the first time this is called."""
    if not _parsed:
        with _lock:
            if not _parsed:
                _parsed.append(Settings.from_environment(os.environ))
    return _parsed[0]
