"""Free loopback ports for the servers the harness, the reference stack and the tests start.

A port is chosen some time before it is bound: seconds for a stack's processes, minutes or days for the ports a
target file written by ``pki init`` names for the harness's listeners. Ports the kernel hands out for ``bind(0)``
lie in its ephemeral range, which every outgoing connection on the machine draws its local port from too (the
IUT's, the harness's, any other process's), so such a port can be taken before it is bound: a CI run lost its
``certify`` to exactly that (the harness's cache port, written by ``pki init``, had become the local end of some
connection). Ports are therefore drawn at random below the ephemeral range (D-PORTS-1), where only an explicit
bind takes a port, and checked free by binding them once.
"""

from __future__ import annotations

import random
import socket
from collections.abc import Mapping, Sequence
from pathlib import Path
from urllib.parse import urlsplit

LOCAL_PORT_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
"""Linux's ephemeral range; elsewhere :data:`IANA_EPHEMERAL_LOW` is assumed (macOS and Windows use it)."""

IANA_EPHEMERAL_LOW = 49152
LOWEST_PORT = 20000
"""D-PORTS-1: below this lie most registered services' ports (databases, proxies, dev servers) a user may start
later; a port above it is not taken by a kernel's outgoing connection when it lies below the ephemeral range."""

MIN_POOL = 2000
"""Fewer ports than this below the ephemeral range (a machine that widened it): the kernel chooses instead."""

ATTEMPTS = 64

_draw = random.SystemRandom()  # independent of the seeded ``random`` of tests and cases (two seeded processes alike)


def ephemeral_low() -> int:
    """The lowest port of this machine's ephemeral range."""
    try:
        return int(LOCAL_PORT_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return IANA_EPHEMERAL_LOW


def free_port(host: str = "127.0.0.1") -> int:
    """A port free on ``host`` now, below the ephemeral range when it leaves room (another process may still
    bind it before the caller does; callers that bind soon retry on "address in use")."""
    high = ephemeral_low() - 1
    if high - LOWEST_PORT + 1 >= MIN_POOL:
        for _ in range(ATTEMPTS):
            port = _draw.randint(LOWEST_PORT, high)
            if _bindable(host, port):
                return port
    with socket.socket() as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """``count`` distinct ports free on ``host`` now: the parties of one target each get their own (independent
    draws may coincide, and the second server to bind the shared port would fail)."""
    ports: list[int] = []
    while len(ports) < count:
        port = free_port(host)
        if port not in ports:
            ports.append(port)
    return ports


def loopback_base_uris(names: Sequence[str], given: Mapping[str, str] | None = None) -> dict[str, str]:
    """``https://127.0.0.1:<port>/<name>/`` for each of ``names`` that ``given`` does not set, on distinct free
    ports."""
    given = given or {}
    missing = [name for name in names if not given.get(name)]
    drawn = dict(zip(missing, free_ports(len(missing)), strict=True))
    return {name: given.get(name) or f"https://127.0.0.1:{drawn[name]}/{name}/" for name in names}


def _bindable(host: str, port: int) -> bool:
    """Free on TCP and on UDP: a party may serve HTTP/2 and HTTP/3 on the same port number."""
    for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, kind) as probe:
            try:
                probe.bind((host, port))
            except OSError:
                return False
    return True


HTTPS_PORT = 443
"""The port of an ``https`` base URI that names none (RFC 9110 §4.2.2)."""


def port_of(base_uri: str) -> int:
    """The port a party serving ``base_uri`` listens on: the URI's, else the https default (every played party
    and every reference role binds through this one reading)."""
    return urlsplit(base_uri).port or HTTPS_PORT


__all__ = ["HTTPS_PORT", "ephemeral_low", "free_port", "free_ports", "loopback_base_uris", "port_of"]
