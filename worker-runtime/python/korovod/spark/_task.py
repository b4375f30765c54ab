"""The Spark side of korovod.spark.run: what each barrier task runs on an executor.

The task starts its rank as a process of its own (``python -m korovod.spark._rank``, with the
rank's environment), forwards the rank's output line by line with Horovod's prefix
(``[<rank>]<stdout>:``) to the executor's stdout and stderr, keeps its last lines for an error
report, and returns the rank's outcome to the driver as data, so that a failing ``fn`` fails
neither the task nor, through Spark's retries, the stage: the driver decides (runner.py).
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import tempfile
import threading
from collections import deque
from pathlib import Path
from typing import Deque, Dict, Optional, Tuple

_TAIL_LINES = 50  # of a rank's output, kept for the driver's error message


def _die_with_parent() -> None:
    """In the rank's process before exec: SIGKILL when the task's process dies (Spark killing a
    cancelled task's Python worker), and a process group of its own."""
    os.setpgrp()
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _forward(pipe, rank: int, stream_name: str, sink, tail: Deque[str], lock: threading.Lock) -> None:
    prefix = f"[{rank}]<{stream_name}>:"
    for raw in iter(pipe.readline, b""):
        line = raw.decode("utf-8", "replace").rstrip("\n")
        with lock:
            tail.append(f"{prefix}{line}")
            sink.write(f"{prefix}{line}\n")
            sink.flush()
    pipe.close()


def run_rank(rank: int, payload: bytes, env: Dict[str, str]) -> Tuple:
    """Runs one rank to its end; its outcome: ("ok", result bytes) | ("error", record bytes,
    tail) | ("exit", code, tail)."""
    package_root = str(Path(__file__).resolve().parents[2])
    env = dict(env)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [package_root, env.get("PYTHONPATH", "")] if p)
    env.setdefault("PYTHONUNBUFFERED", "1")
    with tempfile.TemporaryDirectory(prefix=f"korovod-spark-rank{rank}-") as tmp:
        out = os.path.join(tmp, "outcome")
        proc = subprocess.Popen([sys.executable, "-m", "korovod.spark._rank", out], env=env, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=_die_with_parent)
        tail: Deque[str] = deque(maxlen=_TAIL_LINES)
        lock = threading.Lock()
        readers = [threading.Thread(target=_forward, args=(proc.stdout, rank, "stdout", sys.stdout, tail, lock)),
                   threading.Thread(target=_forward, args=(proc.stderr, rank, "stderr", sys.stderr, tail, lock))]
        for t in readers:
            t.daemon = True
            t.start()
        try:
            proc.stdin.write(payload)
            proc.stdin.close()
        except BrokenPipeError:
            pass
        code = _wait(proc)
        for t in readers:
            t.join(timeout=5)
        record: Optional[bytes] = None
        if os.path.exists(out):
            with open(out, "rb") as f:
                record = f.read()
    if record is not None:
        return ("done", record, list(tail))
    return ("exit", code, list(tail))


def _wait(proc: subprocess.Popen) -> int:
    try:
        return proc.wait()
    except BaseException:  # the task is being killed: the rank goes with it
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
