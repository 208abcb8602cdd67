"""The raw QUIC probe behind the HTTP/3 ALPN cases tells a refusal (with its alert), a completed handshake and a
stall apart (P1-JUDGE-3), against the project's HTTP/3 server and a misbehaving one that never answers."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from sdcp_conformance.harness.probes import ProbeOutcome
from sdcp_conformance.harness.quic_probes import NO_APPLICATION_PROTOCOL, QuicProbeResult, quic_probe
from sdcp_conformance.testing.misbehaving_h3 import MisbehavingH3Server, Mode
from sdcp_conformance.transport.h3_server import H3Server
from sdcp_conformance.transport.pki import Pki, init_pki
from sdcp_conformance.transport.server import ServerConfig
from sdcp_conformance.transport.types import Request, Response

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return init_pki(tmp_path_factory.mktemp("pki"), {"verifier": "https://127.0.0.1:9001/verifier/",
                                                     "drafter-1": "https://127.0.0.1:9002/drafter-1/"},
                    subject="drafter-1")


async def _ok(_request: Request) -> Response:
    return Response(200, b"ok")


def _probe(pki: Pki, server: Any, alpn: tuple[str, ...], cert: Path | None, key: Path | None,
           timeout_s: float = 3.0) -> QuicProbeResult:
    async def go() -> QuicProbeResult:
        await server.start()
        try:
            return await quic_probe(server.base_uri, pki.ca_cert, cert, key, alpn, timeout_s=timeout_s)
        finally:
            await server.stop()

    return asyncio.run(asyncio.wait_for(go(), 30))


def _server(pki: Pki) -> H3Server:
    return H3Server(_ok, ServerConfig(pki.cert("verifier"), pki.key("verifier"), pki.ca_cert))


def test_alpn_h2_over_quic_is_refused_with_no_application_protocol(pki: Pki) -> None:
    result = _probe(pki, _server(pki), ("h2",), pki.cert("drafter-1"), pki.key("drafter-1"))
    assert result.outcome is ProbeOutcome.REFUSED, result.describe()
    assert result.alert == NO_APPLICATION_PROTOCOL and result.error_code == 0x100 + NO_APPLICATION_PROTOCOL


def test_alpn_h3_completes_and_names_the_protocol(pki: Pki) -> None:
    result = _probe(pki, _server(pki), ("h3",), pki.cert("drafter-1"), pki.key("drafter-1"))
    assert (result.outcome, result.alpn) == (ProbeOutcome.COMPLETED, "h3"), result.describe()


def test_a_listener_that_never_answers_is_a_stall_not_a_refusal(pki: Pki) -> None:
    server = MisbehavingH3Server(Mode.HANDSHAKE_STALL, ServerConfig(pki.cert("verifier"), pki.key("verifier"),
                                                                    pki.ca_cert))
    result = _probe(pki, server, ("h2",), pki.cert("drafter-1"), pki.key("drafter-1"), timeout_s=1.0)
    assert result.outcome is ProbeOutcome.STALLED, result.describe()
    assert result.alert is None and result.elapsed_s >= 1.0
