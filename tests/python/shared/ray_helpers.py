"""What the korovod.ray tests share (torch and TensorFlow): Ray's settings, a local Ray instance
with a temp dir of its own, and the processes a test must not leave behind."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import List

# Ray's own switches for a test machine: no token to make, no usage report to send.
RAY_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}


def temp_dir(prefix: str) -> str:
    """A short directory for Ray's sockets and logs (a unix socket path has 107 bytes at most)."""
    return tempfile.mkdtemp(prefix=prefix, dir="/tmp")


def remove(path: str) -> None:
    shutil.rmtree(path, ignore_errors=True)


def alive(pids: List[int]) -> List[int]:
    out = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            out.append(pid)
    return out


def assert_gone(pids: List[int], within: float = 15.0) -> None:
    deadline = time.monotonic() + within
    while alive(pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not alive(pids), f"processes still running: {alive(pids)}"


def environ_with_ray_env() -> dict:
    return {**os.environ, **RAY_ENV}


@contextlib.contextmanager
def local_ray(prefix: str, num_cpus: int = 4):
    """ray.init() on this machine with `num_cpus` CPUs and a temp dir of its own, shut down and
    removed at the end."""
    import ray
    os.environ.update(RAY_ENV)
    temp = temp_dir(prefix)
    ray.init(num_cpus=num_cpus, include_dashboard=False, _temp_dir=temp, log_to_driver=True)
    try:
        yield
    finally:
        ray.shutdown()
        remove(temp)


def worker_actor_processes() -> List[tuple]:
    """Processes of korovod's worker actors still running (Ray titles them ray::<class>[.<method>])."""
    from elastic_checks import processes
    return processes("ray::BaseHorovodWorker", prefix=True)
