"""What the Spark and Ray runners' elastic tests share (torch and TensorFlow alike): the job in a
thread, the worker to kill picked from the progress files the training modules write
(torch_elastic_training, tf_elastic_training: "<rank> <step>" in progress_dir/<pid> after each
committed step), and the processes that must not be left behind."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple


def progress(progress_dir: str) -> Dict[int, Tuple[int, int]]:
    """{pid: (rank, step)} of the workers that wrote so far."""
    out = {}
    for name in os.listdir(progress_dir):
        try:
            rank, step = Path(progress_dir, name).read_text().split()
            out[int(name)] = (int(rank), int(step))
        except (OSError, ValueError):
            continue
    return out


def processes(marker: str, prefix: bool = False) -> List[Tuple[int, str]]:
    """(pid, command line) of the processes whose command line holds `marker` (starts with it)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        if (cmdline.startswith(marker) if prefix else marker in cmdline):
            found.append((int(entry.name), cmdline))
    return found


def assert_gone(find: Callable[[], list], within: float = 15.0) -> None:
    """`find()` comes back empty within `within` seconds."""
    deadline = time.monotonic() + within
    while find() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not find(), find()


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def kill_rank_one_mid_training(run: Callable[[str], list], progress_dir: str, kill_parent: bool = False,
                               step: int = 10, within: float = 240.0,
                               kill: Optional[Callable[[int], None]] = None,
                               workers_in_all: Optional[int] = 3) -> list:
    """Runs `run(progress_dir)` (an elastic job) in a thread; once a worker has committed `step`,
    SIGKILLs rank 1's process (with kill_parent, its parent: the Spark task's Python worker; with
    `kill`, calls kill(rank 1's pid) instead); returns the job's results. Checks that the job
    ended without an error and, unless workers_in_all is None, that that many worker processes
    trained in all (3: a new worker took the killed one's place)."""
    out: dict = {}

    def go() -> None:
        try:
            out["result"] = run(progress_dir)
        except BaseException as e:  # noqa: B902 -- handed to the test
            out["error"] = e
    thread = threading.Thread(target=go, daemon=True)
    thread.start()
    deadline = time.monotonic() + within
    victim = None
    while victim is None and thread.is_alive() and time.monotonic() < deadline:
        seen = progress(progress_dir)
        if any(s >= step for _, s in seen.values()):
            victim = next(pid for pid, (rank, _) in seen.items() if rank == 1)
            if kill is not None:
                kill(victim)
            else:
                os.kill(parent_of(victim) if kill_parent else victim, signal.SIGKILL)
        time.sleep(0.1)
    assert victim is not None, f"training never reached step {step}: {progress(progress_dir)} {out}"
    thread.join(max(1.0, deadline - time.monotonic()))
    assert not thread.is_alive(), "the elastic job did not end"
    if "error" in out:
        raise out["error"]
    trained = progress(progress_dir)
    assert victim in trained, trained
    if workers_in_all is not None:
        assert len(trained) == workers_in_all, trained
    return out["result"]


def assert_last_round(results: list, size: int, steps: int) -> None:
    """The last round's `size` workers, in rank order, each at `steps` committed steps."""
    assert [r["rank"] for r in results] == list(range(size)), [r["rank"] for r in results]
    for r in results:
        assert r["size"] == size and r["step"] == steps, {k: v for k, v in r.items() if k != "params"}
