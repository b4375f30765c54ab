"""Pickling for korovod.spark: cloudpickle (functions defined in a notebook or a __main__ script
travel by value, as Spark's own closures do), pyspark's copy when the standalone package is absent."""

from __future__ import annotations

from types import ModuleType
from typing import Any


def cloudpickle_module() -> ModuleType:
    """The cloudpickle in use; register_pickle_by_value(module) on it sends a module's functions
    by value (one the ranks cannot import, e.g. a test file)."""
    try:
        import cloudpickle
    except ImportError:
        from pyspark import cloudpickle  # type: ignore[no-redef]
    return cloudpickle


def dumps(obj: Any) -> bytes:
    return cloudpickle_module().dumps(obj)
