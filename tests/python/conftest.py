"""pytest setup for korovod's Python tests. Every test runs on every rank of one job (mpirun -np N,
korovodrun, or a plain `python -m pytest` as a job of one rank), so every rank collects the same
tests in the same order and skips them for the same reasons.

Guards against a job that hangs because ranks diverged (a check failed between collectives on one
rank): the runtime's collective timeout and stall shutdown time are lowered so a collective the
other ranks never join fails in bounded time, each test starts with hvd.init() (which starts a fresh runtime when the last one
died) and ends with a barrier that realigns the ranks, and a per-test watchdog
(KOROVOD_TEST_TIMEOUT_SECONDS, default 300) dumps every thread's stack and exits the process, which
ends the whole mpirun job.
"""

import faulthandler
import hashlib
import os
import sys
from pathlib import Path

import pytest

_REPO = Path(__file__).resolve().parents[2]
# Helpers every framework's tests share (adasum_reference), in a folder of their own: this folder
# holds torch/ and tensorflow/, which sys.path should not offer as the frameworks' names.
sys.path.insert(0, str(Path(__file__).resolve().parent / "shared"))

# Configuration the runtime reads at init, set before any test can initialize it. Horovod's
# test_torch.py sets the first two the same way.
os.environ.setdefault("HOROVOD_TIMELINE", "DYNAMIC")
os.environ.setdefault("HOROVOD_DYNAMIC_PROCESS_SETS", "1")
os.environ.setdefault("KOROVOD_COLLECTIVE_TIMEOUT_SECONDS", "30")
# A tensor that some ranks never submit (ranks diverged) fails after this long instead of hanging.
os.environ.setdefault("KOROVOD_STALL_CHECK_TIME_SECONDS", "10")
# Not shorter: under load, one rank's torch.compile can finish a minute after another's.
os.environ.setdefault("KOROVOD_STALL_SHUTDOWN_TIME_SECONDS", "120")
# torch.compile's kernels cache, one per Python environment: inductor's default is one folder per
# user in /tmp, where a kernel another venv of the same torch built failed to load in this one
# ("undefined symbol: Sleef_tanhd8_u10", a cold CI run after warm ones).
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(
    Path.home() / ".cache" / "korovod" / "torchinductor" / hashlib.sha256(sys.prefix.encode()).hexdigest()[:16]))


def _use_source_tree_when_not_installed() -> None:
    """`python -m pytest tests/python` from a checkout: the source tree's package, and the build
    tree's library when the package has none of its own (run-pytest and pip installs set both)."""
    try:
        import korovod
    except ImportError:
        sys.path.insert(0, str(_REPO / "worker-runtime" / "python"))
        import korovod
    built = _REPO / "build" / "lib" / "libkorovod.so"
    packaged = Path(korovod.__file__).parent / "lib" / "libkorovod.so"
    if "KOROVOD_LIBRARY" not in os.environ and not packaged.exists() and built.exists():
        os.environ["KOROVOD_LIBRARY"] = str(built)


_use_source_tree_when_not_installed()

_TEST_TIMEOUT_SECONDS = float(os.environ.get("KOROVOD_TEST_TIMEOUT_SECONDS", "300"))

# ctest runs this directory in several jobs per interpreter (alone, mpirun -np 2/3, korovodrun).
# Tests that do not depend on the outer job (they start jobs of their own) or that cost a minute
# (torch.compile) run in one of them: the others set KOROVOD_TEST_REPEATED_JOB=1.
_ONCE_PER_INTERPRETER = "once_per_interpreter"


def pytest_configure(config):
    config.addinivalue_line("markers", "separate_job: run-pytest runs this test in a job of its own")
    config.addinivalue_line(
        "markers", _ONCE_PER_INTERPRETER + ": runs in one ctest job per interpreter "
        "(skipped where KOROVOD_TEST_REPEATED_JOB=1)")


def pytest_collection_modifyitems(config, items):
    if os.environ.get("KOROVOD_TEST_REPEATED_JOB") != "1":
        return
    skip = pytest.mark.skip(reason="runs once per interpreter, in its mpirun -np 2 job "
                            "(KOROVOD_TEST_REPEATED_JOB=1 here)")
    for item in items:
        if _ONCE_PER_INTERPRETER in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _watchdog():
    faulthandler.dump_traceback_later(_TEST_TIMEOUT_SECONDS, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


@pytest.fixture(autouse=True)
def _aligned_ranks():
    """hvd.init() before the test; a barrier after it, so ranks leave each test together."""
    import korovod.common.basics as basics

    basics.init()
    yield
    if basics.is_initialized():
        from korovod.torch import barrier

        barrier()

