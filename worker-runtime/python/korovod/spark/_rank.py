"""One rank of a korovod.spark.run job, as a process of its own.

The Spark task (_task.py) starts ``python -m korovod.spark._rank FD`` with the rank's environment
(the driver's rendezvous, the user's env) and the pickled ``(fn, args, kwargs)`` on stdin; this
runs ``fn(*args, **kwargs)`` and writes the outcome to the pipe FD, which the task reads: ``("ok",
result)``, or ``("error", exception or None, type name, message, traceback text)`` when fn raised.
A pipe, not a file: a task killed with its job (cancelled) leaves nothing behind.
A process per rank, as Horovod's Spark runner has: the Spark Python worker (often reused from
job to job) never holds a runtime, and a rank that crashes takes only itself down.
"""

from __future__ import annotations

import pickle
import sys
import traceback
from typing import Any, Tuple


def _dumps(obj: Any) -> bytes:
    from korovod.spark._pickle import dumps
    return dumps(obj)


def _error_record(e: BaseException) -> Tuple:
    text = "".join(traceback.format_exception(type(e), e, e.__traceback__))
    try:  # the exception itself when it pickles and unpickles (most do), for the driver to raise
        pickle.loads(_dumps(e))
        exc = e
    except Exception:
        exc = None
    return ("error", exc, type(e).__name__, str(e), text)


def main(argv: list) -> int:
    if len(argv) != 2 or not argv[1].isdigit():
        print("usage: python -m korovod.spark._rank FD   (pickled (fn, args, kwargs) on stdin, the outcome "
              "on the pipe FD; korovod.spark.run starts it)", file=sys.stderr)
        return 0 if len(argv) == 2 and argv[1] in ("-h", "--help") else 2
    out = int(argv[1])
    try:
        fn, args, kwargs = pickle.loads(sys.stdin.buffer.read())
        record: Tuple = ("ok", fn(*args, **kwargs))
        payload = _dumps(record)
    except BaseException as e:  # noqa: B902 -- SystemExit and KeyboardInterrupt are outcomes too
        payload = _dumps(_error_record(e))
    with open(out, "wb", closefd=True) as f:
        f.write(payload)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
