"""Helpers of the part-A verifier cases: the loose CBOR encoder and the raw TLS probes catch what they claim."""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path

import pytest

from sdcp_conformance.harness.probes import ProbeResult, TlsOffer, http1_request, tls_probe
from sdcp_conformance.protocol.codec import decode, encode
from sdcp_conformance.reference.stack import free_port
from sdcp_conformance.suites.verifier.contract import loose_encode
from sdcp_conformance.transport.pki import Pki, init_pki

SAMPLE = {"session": bytes(range(16)), "epoch": 70000, "contract": {"m_max": 8, "stop": [2, 300], "rule": 1,
          "scope": b"\x00" * 16, "sampling": {"seed": 2**64 - 1}}, "prompt": [5, 9], "commit_log": "https://x/é/"}


@pytest.mark.parametrize("style", [{"indefinite": True}, {"reverse": True}, {"wide": True}])
def test_loose_encoding_decodes_to_the_same_message_but_is_not_deterministic(style: dict[str, bool]) -> None:
    loose = loose_encode(SAMPLE, **style)
    assert loose != encode(SAMPLE)
    assert decode(loose) == SAMPLE
    assert encode(decode(loose)) == encode(SAMPLE)


def test_http1_status_parses_only_a_status_line() -> None:
    answered = ProbeResult(True, "TLSv1.3", None, b"HTTP/1.1 505 Nope\r\n\r\n", True, "")
    framed = ProbeResult(True, "TLSv1.3", "h2", b"\x00\x00\x00\x04\x00", True, "")
    assert answered.http1_status == 505
    assert framed.http1_status is None


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    folder = tmp_path_factory.mktemp("pki")
    return init_pki(folder, {"server": "https://127.0.0.1:1/server/", "client": "https://127.0.0.1:2/client/"})


async def _lax_server(pki: Pki, reply: bytes) -> tuple[asyncio.Server, int]:
    """A broken 'IUT': TLS 1.2 allowed, no client certificate required, answers any bytes with ``reply``."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(pki.cert("server"), pki.key("server"))
    ctx.set_alpn_protocols(["http/1.1"])

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(65536)
        writer.write(reply)
        await writer.drain()
        writer.close()

    port = free_port()
    server = await asyncio.start_server(handle, "127.0.0.1", port, ssl=ctx)
    return server, port


def test_probes_report_what_a_lax_server_accepts(pki: Pki) -> None:
    async def scenario() -> tuple[ProbeResult, ProbeResult]:
        server, port = await _lax_server(pki, b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
        base = f"https://127.0.0.1:{port}/v/"
        try:
            old = await tls_probe(base, pki.ca_cert, TlsOffer(None, None, max_version=ssl.TLSVersion.TLSv1_2),
                                  read=False)
            http1 = await tls_probe(base, pki.ca_cert, TlsOffer(pki.cert("client"), pki.key("client"),
                                                                alpn=("http/1.1",)),
                                    http1_request(base, "POST", "sessions", b"\xa0", "application/sdcp+cbor"))
        finally:
            server.close()
            await server.wait_closed()
        return old, http1

    old, http1 = asyncio.run(scenario())
    assert old.handshake_ok and old.tls_version == "TLSv1.2"
    assert http1.handshake_ok and http1.alpn == "http/1.1" and http1.http1_status == 200


def test_probe_of_a_closed_port_is_a_refused_handshake(pki: Pki) -> None:
    result = asyncio.run(tls_probe(f"https://127.0.0.1:{free_port()}/v/", Path(pki.ca_cert), TlsOffer(None, None)))
    assert not result.handshake_ok
