#!/usr/bin/env python3
"""An outsider against a korovod TCP listener (the rendezvous store): connects again and again
the ways a process without the job secret could, until the time is up:

  garbage      an HTTP request
  no-secret    a store request (set) with no handshake, as a rank without the secret sends
  wrong        a well-formed proof made with a wrong secret (HMAC-SHA256 over the server's nonce)
  half         the first bytes of a proof, then nothing
  silent       connects and sends nothing (held open to the end)

Every connection must be closed by the listener without an answer: the only bytes it may send
are its hello ("KRVH" + 32-byte nonce). Prints one summary line,
  INTRUDER attempts=N refused=N held=N
and exits 1 with INTRUDER-GOT-IN when the listener sent anything past its hello to anyone.

usage: tcp_intruder.py HOST:PORT [--seconds S]
"""
import argparse
import hashlib
import hmac
import os
import socket
import sys
import time

HELLO = 4 + 32


def proof(nonce: bytes, secret: bytes) -> bytes:
    client_nonce = os.urandom(32)
    msg = b"korovod client\0store\0" + nonce + client_nonce
    return b"KRVC" + client_nonce + hmac.new(secret, msg, hashlib.sha256).digest()


def read_until_closed(sock: socket.socket, limit: float) -> bytes:
    """What the listener sends until it closes the connection (or `limit` seconds pass)."""
    got = b""
    sock.settimeout(limit)
    try:
        while True:
            chunk = sock.recv(4096)
            if not chunk:
                return got
            got += chunk
    except (socket.timeout, ConnectionResetError):
        return got


def attempt(kind: str, host: str, port: int) -> tuple[bytes, socket.socket | None]:
    sock = socket.create_connection((host, port), timeout=2)
    if kind == "silent":
        return b"", sock
    if kind == "garbage":
        sock.sendall(b"GET / HTTP/1.0\r\n\r\n")
    elif kind == "no-secret":
        sock.sendall(b"\x01" + (4).to_bytes(4, "little") + b"evil" + (1).to_bytes(8, "little") + b"x")
    elif kind in ("wrong", "half"):
        sock.settimeout(2)
        hello = b""
        while len(hello) < HELLO:
            chunk = sock.recv(HELLO - len(hello))
            if not chunk:
                break
            hello += chunk
        p = proof(hello[4:HELLO], b"a guess at the job secret")
        sock.sendall(p if kind == "wrong" else p[:10])
        if kind == "half":
            return hello, sock
        return hello + read_until_closed(sock, 5), None
    return read_until_closed(sock, 5), None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("address", help="HOST:PORT of the listener")
    ap.add_argument("--seconds", type=float, default=3.0)
    a = ap.parse_args()
    host, port = a.address.rsplit(":", 1)
    kinds = ["garbage", "no-secret", "wrong", "half", "silent"]
    attempts = refused = 0
    held = []
    end = time.monotonic() + a.seconds
    i = 0
    # The launcher script starts the job only after this line: a job that lasts 0.1 s (a rank
    # killed at once) must still see the intruder's first attempts.
    print("INTRUDER-READY", flush=True)
    while time.monotonic() < end:
        kind = kinds[i % len(kinds)]
        i += 1
        try:
            got, sock = attempt(kind, host, int(port))
        except OSError:
            time.sleep(0.01)  # not listening yet, or gone
            continue
        attempts += 1
        if sock is not None:
            held.append(sock)
            continue
        if len(got) > HELLO or (got and not got.startswith(b"KRVH")):
            print(f"INTRUDER-GOT-IN: a {kind} connection received {got[:80]!r}")
            return 1
        refused += 1
        time.sleep(0.02)
    for sock in held:
        rest = read_until_closed(sock, 0.1)
        if len(rest) > HELLO:
            print(f"INTRUDER-GOT-IN: a held connection received {rest[:80]!r}")
            return 1
        sock.close()
    print(f"INTRUDER attempts={attempts} refused={refused} held={len(held)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
