"""What python.run_pytest_selftest runs under `run-pytest --launcher mpirun -np 2`.

The entry passes when the runner reports rank 1 (and only rank 1) failed, and ran the
separate_job test in a job of its own. No korovod here: this checks the runner, not the runtime.
"""

import os

import pytest

RAN_IN_THIS_PROCESS = []


def _rank() -> int:
    for name in ("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "KOROVOD_RANK", "HOROVOD_RANK"):
        if name in os.environ:
            return int(os.environ[name])
    return 0


def test_every_rank_runs_with_the_same_arguments():
    RAN_IN_THIS_PROCESS.append("same_arguments")
    assert _rank() in (0, 1)


def test_fails_on_rank_1_only():
    RAN_IN_THIS_PROCESS.append("rank_1_fails")
    assert _rank() != 1, "rank 1 fails on purpose: the runner must name it"


@pytest.mark.separate_job
def test_separate_job_runs_alone():
    assert RAN_IN_THIS_PROCESS == [], f"ran in the same process as {RAN_IN_THIS_PROCESS}"
