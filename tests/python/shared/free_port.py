"""A TCP port on 127.0.0.1 for a job a test starts, chosen the way tests/cluster/testcluster
chooses its ports: at random below the kernel's ephemeral range (net.ipv4.ip_local_port_range),
where no outgoing connection and no other test's bind to port 0 can take it between this check
and the job's own bind. Two tests may still draw the same port; a job that then fails to bind it
(ADDRESS_IN_USE in its output) is started again on another port: see `retry_on_address_in_use`.

    python3 free_port.py      prints one port (for shell drivers)
"""

import random
import socket
import sys
from typing import Callable, List

# The runtime's message when its rendezvous store cannot bind (transport/tcp/socket.cc: strerror).
ADDRESS_IN_USE = "Address already in use"


def _ephemeral_low() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    return low if low > 12000 else 32768


def free_port() -> int:
    low = _ephemeral_low()
    for port in random.sample(range(10000, low), min(low - 10000, 4000)):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))  # no SO_REUSEADDR: a port in TIME_WAIT counts as taken
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in 10000-{low - 1}")


def retry_on_address_in_use(run: Callable[[int], List[str]], attempts: int = 5) -> List[str]:
    """run(port) -> the outputs of the job's processes; run again on a new port while one of
    them says the port was taken, at most `attempts` times."""
    outputs: List[str] = []
    for _ in range(attempts):
        outputs = run(free_port())
        if not any(ADDRESS_IN_USE in out for out in outputs):
            return outputs
    return outputs


if __name__ == "__main__":
    if sys.argv[1:] in (["-h"], ["--help"]):
        print(__doc__)
    elif sys.argv[1:]:
        sys.exit("usage: free_port.py   (prints one free port; --help)")
    else:
        print(free_port())
