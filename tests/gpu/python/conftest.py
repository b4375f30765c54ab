"""pytest setup for the GPU tests of korovod.torch (tests/gpu/run-gpu-tests runs them under mpirun
or korovodrun). The same guards as tests/python (collective timeouts, hvd.init() before and a
barrier after each test, a per-test watchdog), and ops_helpers from tests/python/torch.

Every test needs a torch with CUDA and a GPU: without them the whole folder is skipped, naming the
interpreter. Each rank works on GPU local_rank % device_count: one rank per GPU gets the NCCL
data plane; ranks that share a GPU get host staging (the runtime decides; the runner checks
rank 0's startup line). KOROVOD_GPU_TEST_PLANE=nccl|staging, set by the runner, says which to
expect where the two differ (integer Average, dtypes NCCL lacks).
"""

import importlib.util
import os
import sys
from pathlib import Path

import pytest

_REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(_REPO / "tests" / "python" / "torch"))  # ops_helpers


def _load_shared_conftest():
    path = _REPO / "tests" / "python" / "conftest.py"
    spec = importlib.util.spec_from_file_location("korovod_tests_python_conftest", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_shared = _load_shared_conftest()
_watchdog = _shared._watchdog  # noqa: F401 (fixtures, autouse, re-exported for this folder)
_aligned_ranks = _shared._aligned_ranks  # noqa: F401


def _why_no_gpu():
    try:
        import torch
    except ImportError as e:
        return f"{sys.executable} has no torch ({e})"
    if not torch.cuda.is_available():
        return (f"{sys.executable}: torch {torch.__version__} (CUDA {torch.version.cuda}) sees no GPU "
                "(torch.cuda.is_available() is False)")
    return None


def pytest_collection_modifyitems(config, items):
    why = _why_no_gpu()
    if why:
        for item in items:
            item.add_marker(pytest.mark.skip(reason=f"SKIP: no usable GPU: {why}"))


@pytest.fixture(scope="session", autouse=True)
def _this_ranks_gpu():
    """Makes GPU local_rank % device_count current before any test (Horovod's usual
    torch.cuda.set_device(hvd.local_rank()), wrapped for ranks sharing a GPU)."""
    if _why_no_gpu():
        yield
        return
    import torch
    import korovod.torch as hvd

    hvd.init()
    torch.cuda.set_device(hvd.local_rank() % torch.cuda.device_count())
    yield

