"""One party's listeners (transport/listeners.py): HTTP/2 on TCP, HTTP/3 on UDP, or both on one port number.

Checked with third-party clients where one exists: httpx (HTTP/2 over TCP) and aioquic's own client (HTTP/3 over
QUIC); the project's clients are checked beside them by ``client_for``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import socket
import time
from pathlib import Path

import httpx
import pytest

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.transport.failures import TransportFailure
from sdcp_conformance.transport.h3_server import H3Server
from sdcp_conformance.transport.listeners import Listeners, client_for, http_versions
from sdcp_conformance.transport.pki import Pki
from sdcp_conformance.transport.server import ServerConfig
from sdcp_conformance.transport.types import Request, Response

from .conftest import SHORT, run
from .test_h3 import third_party_configuration, third_party_exchange
from .tls_probe import client_context

pytestmark = pytest.mark.timeout(60)


async def _identity(request: Request) -> Response:
    return Response(200, (request.peer_identity or "<none>").encode(), [("content-type", "text/plain")])


def _config(pki: Pki) -> ServerConfig:
    return ServerConfig(pki.cert("verifier"), pki.key("verifier"), pki.ca_cert, label="verifier")


def _drafter(pki: Pki) -> tuple[Path, Path]:
    return pki.cert("drafter-1"), pki.key("drafter-1")


def _tcp_open(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except OSError:
        return False
    return True


@pytest.mark.parametrize(("value", "expected"), [("2", "2"), ("3", "3"), ("both", "both"), (2, "2"), (3, "3")])
def test_a_targets_http_member_reads_as_a_version(value: object, expected: str) -> None:
    assert http_versions(value) == expected


@pytest.mark.parametrize("value", ["1.1", "h3", "", None, True, 4, ["2"]])
def test_anything_else_is_a_one_line_error_naming_where(value: object) -> None:
    with pytest.raises(InvalidArgument) as caught:
        http_versions(value, "target.toml: [target] http")
    message = str(caught.value)
    assert "\n" not in message and message.startswith("target.toml: [target] http must be one of")


def test_both_serves_http2_on_tcp_and_http3_on_udp_at_one_port_number(pki: Pki) -> None:
    async def go() -> tuple[int, int, str, str, str, str]:
        async with _serving(pki, "both") as listeners:
            port = listeners.port
            udp_port = listeners.servers[1].port
            context = client_context(pki.ca_cert, *_drafter(pki))
            async with httpx.AsyncClient(http1=False, http2=True, verify=context, timeout=10) as h2:
                over_h2 = await h2.get(listeners.base_uri)
            configuration = third_party_configuration(pki, _drafter(pki))
            h3 = listeners.servers[1]
            assert isinstance(h3, H3Server)
            status, _, body = await third_party_exchange(h3, configuration)
            assert status == 200
            async with client_for("3", listeners.base_uri, *_drafter(pki), pki.ca_cert, timeouts=SHORT) as ours:
                over_ours = await ours.request("GET", "")
            return port, udp_port, over_h2.http_version, over_h2.text, body.decode(), over_ours.body.decode()

    port, udp_port, version, over_h2, over_h3, over_ours = run(go)
    assert port == udp_port
    assert version == "HTTP/2"
    assert over_h2 == over_h3 == over_ours == "https://127.0.0.1:9002/drafter-1/"


def test_http3_only_leaves_the_tcp_port_closed_and_http2_only_the_udp_one(pki: Pki) -> None:
    async def go() -> tuple[bool, str, bool]:
        async with _serving(pki, "3") as h3_only:
            tcp_open = await asyncio.to_thread(_tcp_open, h3_only.port)
            async with client_for("3", h3_only.base_uri, *_drafter(pki), pki.ca_cert, timeouts=SHORT) as client:
                served = (await client.request("GET", "")).body.decode()
        async with _serving(pki, "2") as h2_only, client_for("3", h2_only.base_uri, *_drafter(pki), pki.ca_cert,
                              timeouts=dataclasses.replace(SHORT, connect=1, total=2)) as client:
            try:
                await client.request("GET", "", timeout=1.5)
            except TransportFailure:  # nothing speaks QUIC there
                udp_answered = False
            else:
                udp_answered = True
        return tcp_open, served, udp_answered

    tcp_open, served, udp_answered = run(go)
    assert not tcp_open
    assert served == "https://127.0.0.1:9002/drafter-1/"
    assert not udp_answered


def test_refusals_of_both_listeners_are_read_together(pki: Pki) -> None:
    async def go() -> list[str]:
        async with _serving(pki, "both") as listeners:
            started = time.monotonic()
            for version in ("2", "3"):
                async with client_for(version, listeners.base_uri, None, None, pki.ca_cert,  # no certificate
                                      timeouts=SHORT) as client:
                    with pytest.raises(TransportFailure):
                        await client.request("GET", "", timeout=5)
            return sorted(refusal.stage for refusal in listeners.refused_since(started))

    stages = run(go)
    assert len(stages) == 2, stages  # one refusal per listener, each recorded by the server that refused it


class _serving:
    """``async with _serving(pki, http) as listeners``: started, and stopped whatever the body does."""

    def __init__(self, pki: Pki, http: str) -> None:
        self.listeners = Listeners(_identity, _config(pki), http_versions(http))

    async def __aenter__(self) -> Listeners:
        await self.listeners.start()
        return self.listeners

    async def __aexit__(self, *exc: object) -> None:
        await self.listeners.stop()

