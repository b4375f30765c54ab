"""korovod.keras on Keras 3's jax and torch backends: a 2-process job per backend (korovod's TCP
rendezvous, no mpirun), started once per outer job from rank 0 (keras_backend_worker.py checks
broadcast, metric averaging and equality with one process on every rank).

jax runs on this venv's jax. torch runs on the PyPI torch venv (KOROVOD_TORCH_VENV, set by ctest)
with this venv's site-packages (keras) appended to its path; skipped, saying so, without it.
These jobs take about a minute each on 2 cores, so they run in the one-process configuration
(python.tf<X.Y>.single) only."""

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import korovod
import korovod.tensorflow as hvd
from free_port import retry_on_address_in_use

WORKER = Path(__file__).with_name("keras_backend_worker.py")
_LAUNCHER_VARIABLES = ("OMPI_", "PMIX_", "PMI_", "HYDRA_", "MPI_LOCALNRANKS", "KOROVOD_RANK", "KOROVOD_SIZE",
                       "HOROVOD_RANK", "HOROVOD_SIZE", "HOROVOD_GLOO", "KOROVOD_RENDEZVOUS")


@pytest.fixture(autouse=True)
def _one_process_job_only():
    if hvd.size() != 1:
        pytest.skip("starts its own 2-process jobs; runs in the one-process configuration only (CI time)")


def _run_job(python: str, backend: str, extra_path: str = "", passes: str = "1", size: int = 2, timeout: float = 300):
    return retry_on_address_in_use(lambda port: _run_job_on(port, python, backend, extra_path, passes, size, timeout))


def _run_job_on(port: int, python: str, backend: str, extra_path: str, passes: str, size: int, timeout: float):
    package_root = str(Path(korovod.__file__).resolve().parents[1])
    outputs, procs = [], []
    for rank in range(size):
        env = {k: v for k, v in os.environ.items() if not k.startswith(_LAUNCHER_VARIABLES)}
        path = [package_root] + env.get("PYTHONPATH", "").split(os.pathsep) + ([extra_path] if extra_path else [])
        env.update(KOROVOD_RENDEZVOUS_ADDR="127.0.0.1", KOROVOD_RENDEZVOUS_PORT=str(port), KOROVOD_RANK=str(rank),
                   KOROVOD_SIZE=str(size), KOROVOD_START_TIMEOUT="60", KERAS_BACKEND=backend, OMP_NUM_THREADS="1",
                   PYTHONPATH=os.pathsep.join(p for p in path if p))
        procs.append(subprocess.Popen([python, str(WORKER), passes], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
    try:
        for p in procs:
            outputs.append(p.communicate(timeout=timeout)[0])
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return outputs


def _check(outputs, backend, expected_passes=(1,)):
    for rank, out in enumerate(outputs):
        for passes in expected_passes:
            assert f"KERAS-OK {backend} passes={passes}" in out, f"rank {rank}:\n{out[-3000:]}"


def test_jax_backend_fit_with_distributed_optimizer_and_callbacks():
    pytest.importorskip("jax", reason="this venv has no jax (scripts/setup installs jax[cpu] into the TF venv)")
    _check(_run_job(sys.executable, "jax"), "jax")


def test_torch_backend_fit_with_distributed_optimizer_and_callbacks_and_backward_passes():
    venv = os.environ.get("KOROVOD_TORCH_VENV", "")
    python = Path(venv) / "bin" / "python"
    if not venv or not python.exists():
        pytest.skip(f"no PyPI torch venv (KOROVOD_TORCH_VENV={venv!r}; scripts/test makes it)")
    _check(_run_job(str(python), "torch", sysconfig.get_paths()["purelib"], "1,2"), "torch", (1, 2))
