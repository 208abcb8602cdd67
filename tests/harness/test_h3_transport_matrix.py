"""The harness against misbehaving HTTP/3 listeners (issue 44): each judged for its cause, never a PASS or an ERROR.

The reference verifier's app is served at a target's base URI by the project's HTTP/2 server on TCP and, on the
same port number's UDP, by a misbehaving HTTP/3 server (:mod:`sdcp_conformance.testing.misbehaving_h3`). The
headline mode is the one a widely used web server shipped (caddyserver/caddy#7953): an HTTP/3 listener that lets
in a client without a certificate while HTTP/2 refuses it. Under ``http = "both"`` the HTTP/2 case passes and the
HTTP/3 one is FAILED on §5.1; the transport modes are judged under ``http = "3"``, where every exchange is HTTP/3.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from sdcp_conformance.harness.case import Verdict
from sdcp_conformance.harness.certify import certify
from sdcp_conformance.harness.runner import RunReport
from sdcp_conformance.testing.misbehaving_h3 import MisbehavingH3Server, Mode
from sdcp_conformance.testing.targets import local_target, reference_app
from sdcp_conformance.transport.listeners import HttpVersions
from sdcp_conformance.transport.pki import load_pki
from sdcp_conformance.transport.ports import port_of
from sdcp_conformance.transport.server import H2Server, ServerConfig

pytestmark = pytest.mark.timeout(180)
RUN_DEADLINE_S = 120.0


async def _certify(folder: Path, mode: Mode, http: HttpVersions, selectors: list[str]) -> RunReport:
    target = local_target(folder, http=http, request_timeout_s=1.0, output_timeout_s=3.0)
    pki = load_pki(target.pki)
    config = ServerConfig(pki.cert("verifier"), pki.key("verifier"), pki.ca_cert, port=port_of(target.base_uri))
    async with reference_app(target) as app:
        h2 = H2Server(app, config)
        if http == "both":
            await h2.start()
        try:
            async with MisbehavingH3Server(mode, config, app):
                return await asyncio.wait_for(certify(target, selectors=selectors, seed=44), RUN_DEADLINE_S)
        finally:
            await h2.stop()


def _verdicts(report: RunReport) -> dict[str, tuple[Verdict, str]]:
    return {result.case.id: (result.verdict, result.message) for result in report.results}


def test_an_http3_listener_admitting_clients_without_a_certificate_fails_while_http2_passes(tmp_path: Path) -> None:
    report = asyncio.run(_certify(tmp_path, Mode.NO_CLIENT_CERT, "both",
                                  ["VER-5.1-TRANSPORT-001", "VER-5.1-TRANSPORT-012"]))
    verdicts = _verdicts(report)
    assert verdicts["VER-5.1-TRANSPORT-001"][0] is Verdict.PASSED, verdicts  # the HTTP/2 listener refuses it
    verdict, message = verdicts["VER-5.1-TRANSPORT-012"]
    assert verdict is Verdict.FAILED, verdicts
    assert "HTTP/3 listener does not require a valid client certificate" in message
    result = next(result for result in report.results if result.case.id == "VER-5.1-TRANSPORT-012")
    assert [finding.row for finding in result.findings] == ["R-5.1-MTLS"]  # §5.1's sentence, one cause
    assert "completed the QUIC handshake" in message  # the stage: past the handshake, answered over HTTP/3
    assert report.failed


# mode → words the FAILED message names (the stage, in the client's words)
EXPECTED: dict[Mode, tuple[str, ...]] = {
    Mode.HANDSHAKE_STALL: ("no QUIC handshake",),
    Mode.STREAM_RESET: ("stream reset", "H3_REQUEST_CANCELLED"),
    Mode.CLOSE_MID_RESPONSE: ("body truncated", "H3_INTERNAL_ERROR"),
    Mode.LONGER_THAN_DECLARED: ("HTTP/3 protocol error",),
    Mode.IDLE_SILENCE: ("HTTP/3 SETTINGS after the QUIC handshake",),
}


@pytest.mark.parametrize("mode", list(EXPECTED), ids=lambda mode: mode.value)
def test_a_misbehaving_http3_listener_ends_failed_with_its_stage_named(tmp_path: Path, mode: Mode) -> None:
    report = asyncio.run(_certify(tmp_path, mode, "3", ["VER-SANITY-001"]))
    verdicts = [result.verdict for result in report.results]
    assert Verdict.ERROR not in verdicts and Verdict.PASSED not in verdicts, _verdicts(report)
    assert report.failed or report.status == "INCOMPLETE"
    messages = " | ".join(result.message for result in report.results)
    for words in EXPECTED[mode]:
        assert words.lower() in messages.lower(), messages
