"""pytest setup for the TensorFlow GPU tests (tests/gpu/run-tf-gpu-tests): the guards of
tests/python (collective timeouts, watchdog) and of tests/python/tensorflow (hvd.init() before
and a barrier after each test, without torch)."""

import importlib.util
from pathlib import Path

_REPO = Path(__file__).resolve().parents[3]


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_shared = _load(_REPO / "tests" / "python" / "conftest.py", "korovod_tests_python_conftest")
_tf = _load(_REPO / "tests" / "python" / "tensorflow" / "conftest.py", "korovod_tests_tf_conftest")
_watchdog = _shared._watchdog  # noqa: F401 (autouse fixtures, re-exported for this folder)
_aligned_ranks = _tf._aligned_ranks  # noqa: F401
