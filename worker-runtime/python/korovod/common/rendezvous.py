"""The job's TCP rendezvous store, hosted in this process.

For a driver that starts the ranks itself -- as korovodrun does for its own, and as a Spark or Ray
driver does with its tasks or actors -- rather than under mpirun or korovodrun: the driver hosts
the store, and each rank it starts gets ``server.rank_env(rank, size)`` in its environment before
``hvd.init()``. The ranks meet there, authenticated by the job's secret, over korovod's TCP
control and data planes (no MPI, no ssh). C ABI: ``korovod_rendezvous_*`` (c_api.h).

    with RendezvousServer() as server:
        procs = [subprocess.Popen(cmd, env={**os.environ, **server.rank_env(r, 2)}) for r in range(2)]
        ...
"""

from __future__ import annotations

import ctypes
import secrets
import socket
from typing import Dict, Optional

from korovod.common import _lib, settings


def _error(code: int, text: str) -> Exception:
    return ValueError(text) if code == _lib.ERR_INVALID_ARGUMENT else RuntimeError(text)


class RendezvousServer:
    """The rendezvous store of one job, served on a thread of this process until ``stop()``.

    listen_host: where it listens, a numeric IPv4 address ("0.0.0.0": every interface).
    port: 0 for an ephemeral one (``port`` tells which).
    job_secret: what every rank must prove (at least 16 bytes); None: a new random one.
    address: the address of this host that the ranks connect to (``rank_env``); None: this
    host's name resolved, or 127.0.0.1 when it listens on 127.0.0.1 only.
    """

    def __init__(self, listen_host: str = "0.0.0.0", port: int = 0, job_secret: Optional[str] = None,
                 address: Optional[str] = None) -> None:
        self.listen_host = listen_host
        self.job_secret = job_secret if job_secret is not None else secrets.token_hex(32)
        self._requested_port = port
        self._address = address
        self._handle: Optional[int] = None
        self._lib: Optional[ctypes.CDLL] = None
        self._port = -1

    def start(self) -> int:
        """Starts serving; returns the port. Raises ValueError for a bad argument or secret,
        RuntimeError when it cannot listen (the port is taken). Starting twice is an error."""
        if self._handle is not None:
            raise RuntimeError("this RendezvousServer is already serving; stop() it first")
        lib = _lib.load(settings.current().library)
        if not hasattr(lib, "korovod_rendezvous_start"):
            raise ImportError(f"{getattr(lib, '_name', 'libkorovod')} has no korovod_rendezvous_start: it is older "
                              "than this korovod Python package")
        handle = ctypes.c_void_p()
        err = _lib.error_buffer()
        code = lib.korovod_rendezvous_start(ctypes.byref(handle), self.listen_host.encode(), int(self._requested_port),
                                            self.job_secret.encode(), err, len(err))
        if code != _lib.OK:
            raise _error(code, f"cannot host the rendezvous on {self.listen_host}:{self._requested_port}: "
                               f"{_lib.decode(err.value)}")
        self._lib, self._handle = lib, handle.value
        self._port = lib.korovod_rendezvous_port(self._handle)
        return self._port

    @property
    def port(self) -> int:
        """The port it listens on; -1 while not serving."""
        return self._port if self._handle is not None else -1

    @property
    def address(self) -> str:
        """The address the ranks connect to."""
        if self._address:
            return self._address
        if self.listen_host.startswith("127."):
            return self.listen_host
        return socket.gethostbyname(socket.gethostname())

    def rank_env(self, rank: int, size: int) -> Dict[str, str]:
        """The variables rank `rank` of `size` needs to meet the others here at hvd.init()."""
        if self._handle is None:
            raise RuntimeError("rank_env() before start(): the port is not known yet")
        if not 0 <= rank < size:
            raise ValueError(f"rank {rank} is not within a world of size {size}")
        return {
            "KOROVOD_RENDEZVOUS_ADDR": self.address,
            "KOROVOD_RENDEZVOUS_PORT": str(self._port),
            "KOROVOD_RENDEZVOUS_SERVER": "external",
            "KOROVOD_RANK": str(rank),
            "KOROVOD_SIZE": str(size),
            "KOROVOD_JOB_SECRET": self.job_secret,
        }

    def stop(self) -> None:
        """Closes every connection and stops serving (nothing when not serving). Call it once
        the ranks have shut down: they keep a connection to the store while they run."""
        if self._handle is not None and self._lib is not None:
            self._lib.korovod_rendezvous_stop(self._handle)
        self._handle = None
        self._port = -1

    def __enter__(self) -> "RendezvousServer":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def __del__(self) -> None:
        self.stop()
