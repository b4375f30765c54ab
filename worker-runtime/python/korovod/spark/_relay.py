"""The ranks' output on the driver (Horovod's ``stdout``/``stderr`` arguments of its Spark runners).

Each Spark task sends its rank's lines, already prefixed ``[<rank>]<stdout>:``, over a connection
to the driver (Python's multiprocessing.connection, the job secret as its key); the driver writes
them to the streams the caller gave (default: its own stdout and stderr), in the order each task
sent them. run_elastic's slots send theirs over the connection they already hold.
"""

from __future__ import annotations

import sys
import threading
import time
from multiprocessing.connection import Client, Listener
from typing import Callable, List, Optional, Tuple

Emit = Callable[[str, str], None]  # (stream name "stdout" | "stderr", the prefixed line)


class DriverStreams:
    """Where the ranks' lines go on the driver."""

    def __init__(self, stdout=None, stderr=None, timestamps: bool = False) -> None:
        self._out = stdout
        self._err = stderr
        self._timestamps = timestamps
        self._lock = threading.Lock()

    def write(self, stream_name: str, line: str) -> None:
        sink = (self._err or sys.stderr) if stream_name == "stderr" else (self._out or sys.stdout)
        if self._timestamps:
            line = time.strftime("%a %b %d %H:%M:%S %Y") + line
        with self._lock:
            sink.write(line + "\n")
            sink.flush()


class OutputRelay:
    """The driver's end for run's barrier tasks: accepts each task's connection and writes what
    it sends to `streams` until ``close()``."""

    def __init__(self, streams: DriverStreams, authkey: bytes) -> None:
        self._streams = streams
        self._listener = Listener(("0.0.0.0", 0), authkey=authkey)
        self._closed = threading.Event()
        self._readers: List[threading.Thread] = []
        threading.Thread(target=self._accept, name="korovod.spark output", daemon=True).start()

    @property
    def port(self) -> int:
        return self._listener.address[1]

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                conn = self._listener.accept()
            except (OSError, EOFError):
                if self._closed.is_set():
                    return
                continue
            reader = threading.Thread(target=self._read, args=(conn,), daemon=True)
            self._readers.append(reader)
            reader.start()

    def _read(self, conn) -> None:
        while True:
            try:
                stream_name, line = conn.recv()
            except (EOFError, OSError):
                conn.close()
                return
            self._streams.write(stream_name, line)

    def close(self, drain_seconds: float = 5.0) -> None:
        """Stops accepting, and lets the connections' last lines be written (their tasks have
        ended, so their connections end)."""
        self._closed.set()
        self._listener.close()
        for reader in self._readers:
            reader.join(drain_seconds)


def task_emitter(address: Optional[Tuple[str, int]], authkey: bytes) -> Tuple[Emit, Callable[[], None]]:
    """In a task: a function that sends a line to the driver, and one that closes the connection.
    No address (or no driver to reach): the lines go to the executor's own stdout and stderr."""
    if address is not None:
        try:
            conn = Client(address, authkey=authkey)
        except (OSError, EOFError):
            conn = None
        if conn is not None:
            lock = threading.Lock()

            def send(stream_name: str, line: str) -> None:
                with lock:
                    try:
                        conn.send((stream_name, line))
                    except OSError:
                        local(stream_name, line)
            return send, conn.close
    return local, lambda: None


def local(stream_name: str, line: str) -> None:
    """A line to this process's own stdout or stderr."""
    sink = sys.stderr if stream_name == "stderr" else sys.stdout
    sink.write(line + "\n")
    sink.flush()
