"""Every HTTP/2 server a test starts in this process ends each connection gracefully after a number of requests,
as hypercorn (``max_requests``) and nginx (``keepalive_requests``) do: RFC 9113 §6.8, conformant, so a
certification behind them must judge exactly as without them."""

from __future__ import annotations

import pytest

import sdcp_conformance.transport.server as server_module
from sdcp_conformance.transport.limits import ServerLimits
from sdcp_conformance.transport.server import H2Server


def goaway_after(monkeypatch: pytest.MonkeyPatch, requests: int) -> list[H2Server]:
    """Limit every server started from now on to ``requests`` per connection; returns them as they start."""
    monkeypatch.setattr(server_module, "DEFAULT_LIMITS", ServerLimits(max_requests=requests))
    servers: list[H2Server] = []
    start = H2Server.start

    async def recording_start(self: H2Server) -> None:
        servers.append(self)
        await start(self)

    monkeypatch.setattr(H2Server, "start", recording_start)
    return servers


def goaways(servers: list[H2Server]) -> list[int]:
    """The graceful GOAWAYs each server sent, most first."""
    return sorted((server.stats.graceful_goaways for server in servers), reverse=True)


__all__ = ["goaway_after", "goaways"]
