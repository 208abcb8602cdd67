"""An opening cancelled as its TLS handshake completes leaves no socket behind in the event loop.

CI saw ``RuntimeError: File descriptor 29 is used by transport`` as a harness error in a case that cancels a read
still opening its connection: the opening was cancelled just after the handshake completed, asyncio then only
*closed* the TLS transport (a close_notify exchange that keeps the socket registered), and the socket was closed
under it, so the next socket got its descriptor number and asyncio refused it. Each test cancels the opening at
exactly that point (from the protocol's ``connection_made``, which the handshake's completion calls) and then
connects a fresh socket, which asyncio refuses if a live transport still claims its descriptor.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from sdcp_conformance.harness import probes
from sdcp_conformance.harness.probes import TlsOffer, tls_probe
from sdcp_conformance.transport import h2client_connection
from sdcp_conformance.transport.h2client import H2Client
from sdcp_conformance.transport.pki import Pki

from .conftest import StartServer, drafter_client, run


def _cancel_on_handshake(monkeypatch: pytest.MonkeyPatch, protocol: type[Any], opening: Callable[[], Awaitable[Any]],
                         port: int) -> None:
    """Run ``opening`` in a task that ``protocol.connection_made`` cancels, then connect a fresh socket to ``port``."""
    task: list[asyncio.Task[Any]] = []
    original = protocol.connection_made

    def made(self: Any, transport: asyncio.BaseTransport) -> None:
        original(self, transport)
        task[0].cancel()

    monkeypatch.setattr(protocol, "connection_made", made)

    async def go() -> None:
        loop = asyncio.get_running_loop()
        task.append(asyncio.ensure_future(opening()))
        with pytest.raises(asyncio.CancelledError):
            await task[0]
        fresh = socket.socket()
        fresh.setblocking(False)
        try:  # the lowest free descriptor: the cancelled opening's, if its socket was closed
            await asyncio.wait_for(loop.sock_connect(fresh, ("127.0.0.1", port)), 5)
        finally:
            fresh.close()

    run(go)


def test_an_h2_opening_cancelled_as_its_handshake_completes_frees_its_socket(
        pki: Pki, start_server: StartServer, monkeypatch: pytest.MonkeyPatch) -> None:
    server = start_server()
    client = drafter_client(H2Client, pki, server.base_uri)
    _cancel_on_handshake(monkeypatch, h2client_connection.ClientConnection, client.connect, server.port)


def test_a_tls_probe_cancelled_as_its_handshake_completes_frees_its_socket(
        pki: Pki, start_server: StartServer, monkeypatch: pytest.MonkeyPatch) -> None:
    server = start_server()
    offer = TlsOffer(pki.cert("drafter-1"), pki.key("drafter-1"), alpn=("h2",))
    _cancel_on_handshake(monkeypatch, probes._Opening, lambda: tls_probe(server.base_uri, pki.ca_cert, offer),
                         server.port)
