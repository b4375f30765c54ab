"""The Spark side of korovod.spark.run: what each barrier task runs on an executor.

The task starts its rank as a process of its own (``python -m korovod.spark._rank``, with the
rank's environment), forwards the rank's output line by line with Horovod's prefix
(``[<rank>]<stdout>:``) to the driver (_relay.py), keeps its last lines for an error
report, and returns the rank's outcome to the driver as data, so that a failing ``fn`` fails
neither the task nor, through Spark's retries, the stage: the driver decides (runner.py).
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import threading
from collections import deque
from pathlib import Path
from typing import Deque, Dict, Optional, Tuple

from korovod.spark._relay import Emit, local

_TAIL_LINES = 50  # of a rank's output, kept for the driver's error message


def _die_with_parent() -> None:
    """In the rank's process before exec: SIGKILL when the task's process dies (Spark killing a
    cancelled task's Python worker), and a process group of its own."""
    os.setpgrp()
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _forward(pipe, rank, stream_name: str, emit: Emit, tail: Deque[str], lock: threading.Lock) -> None:
    prefix = f"[{rank}]<{stream_name}>:"
    for raw in iter(pipe.readline, b""):
        line = raw.decode("utf-8", "replace").rstrip("\n")
        with lock:
            tail.append(f"{prefix}{line}")
            emit(stream_name, f"{prefix}{line}")
    pipe.close()


class RankProcess:
    """One rank's process, started at once: ``python -m korovod.spark._rank`` with `env`, its output
    lines prefixed ``[<label>]<stdout>:`` and handed to `emit` (default: the executor's own stdout
    and stderr), its last lines kept."""

    def __init__(self, label, payload: bytes, env: Dict[str, str], emit: Emit = local,
                 executable: Optional[str] = None) -> None:
        package_root = str(Path(__file__).resolve().parents[2])
        env = dict(env)
        env["PYTHONPATH"] = os.pathsep.join(p for p in [package_root, env.get("PYTHONPATH", "")] if p)
        env.setdefault("PYTHONUNBUFFERED", "1")
        read_end, write_end = os.pipe()
        try:
            self.proc = subprocess.Popen([executable or sys.executable, "-m", "korovod.spark._rank", str(write_end)],
                                         env=env,
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                         pass_fds=(write_end,), preexec_fn=_die_with_parent)
        finally:
            os.close(write_end)  # the rank holds it now: end of file once it exits
        self._outcome = bytearray()
        self._tail: Deque[str] = deque(maxlen=_TAIL_LINES)
        lock = threading.Lock()
        self._readers = [
            threading.Thread(target=_forward, args=(self.proc.stdout, label, "stdout", emit, self._tail, lock)),
            threading.Thread(target=_forward, args=(self.proc.stderr, label, "stderr", emit, self._tail, lock)),
            threading.Thread(target=_collect, args=(read_end, self._outcome))]
        for t in self._readers:
            t.daemon = True
            t.start()
        try:
            self.proc.stdin.write(payload)
            self.proc.stdin.close()
        except BrokenPipeError:
            pass

    def wait(self) -> Tuple:
        """Waits for the end; the outcome: ("done", the pickled record _rank.py wrote, the output's
        last lines) | ("exit", exit code, the output's last lines) when it wrote none."""
        code = _wait(self.proc)
        for t in self._readers:
            t.join(timeout=5)
        if self._outcome:
            return ("done", bytes(self._outcome), list(self._tail))
        return ("exit", code, list(self._tail))

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Sends `sig` to the rank's process group (nothing once it has ended)."""
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass


def run_rank(rank: int, payload: bytes, env: Dict[str, str], emit: Emit = local,
             executable: Optional[str] = None) -> Tuple:
    """Runs one rank to its end; its outcome as RankProcess.wait."""
    return RankProcess(rank, payload, env, emit, executable).wait()


def _collect(fd: int, into: bytearray) -> None:
    """Everything the rank writes to its outcome pipe (read while it runs: a large result must not
    fill the pipe and block it)."""
    try:
        # os.read returns what has come: a process the rank forked may hold the pipe open past its
        # exit, so end of file may come late.
        for chunk in iter(lambda: os.read(fd, 1 << 20), b""):
            into.extend(chunk)
    finally:
        os.close(fd)


def _wait(proc: subprocess.Popen) -> int:
    try:
        return proc.wait()
    except BaseException:  # the task is being killed: the rank goes with it
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
