"""What the korovod.ray tests share: Ray's settings and a temp dir of their own, and the
processes a test must not leave behind (the training both check: shared/torch_engine_training)."""

from __future__ import annotations

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
