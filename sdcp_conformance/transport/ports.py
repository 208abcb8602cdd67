"""Free loopback ports for the servers the harness, the reference stack and the tests start."""

from __future__ import annotations

import socket


def free_port(host: str = "127.0.0.1") -> int:
    """A port the kernel reports free on ``host`` now (another process may still take it before it is bound;
    callers that bind later retry on "address in use")."""
    with socket.socket() as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


__all__ = ["free_port"]
