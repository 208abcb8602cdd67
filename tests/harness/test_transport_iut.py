"""The harness's link to the IUT and its raw probes: deadlines by resource, media types as data, evidence in
every transcript entry, the request in flight at a cancellation, and refused told apart from stalled."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from sdcp_conformance.harness.case import Verdict
from sdcp_conformance.harness.certify import certify
from sdcp_conformance.harness.iut import Answer, Identity, IutLink
from sdcp_conformance.harness.probes import ProbeOutcome, TlsOffer, tls_probe
from sdcp_conformance.harness.self_check import deliberate
from sdcp_conformance.harness.target import TargetConfig
from sdcp_conformance.harness.transcript import CaseTranscript
from sdcp_conformance.protocol.errors import MalformedMessage
from sdcp_conformance.protocol.messages import SessionState
from sdcp_conformance.reference.roles import port_of
from sdcp_conformance.reference.stack import free_port
from sdcp_conformance.testing.misbehaving import MisbehavingServer, Mode
from sdcp_conformance.testing.targets import local_target, misbehaving_config
from sdcp_conformance.transport.failures import Evidence, FailureKind, Stage
from sdcp_conformance.transport.pki import load_pki
from sdcp_conformance.transport.server import H2Server, ServerConfig
from sdcp_conformance.transport.types import Request, Response


@pytest.fixture
def target(tmp_path: Path) -> TargetConfig:
    return local_target(tmp_path, request_timeout_s=0.5, output_timeout_s=1.5)


def _link(target: TargetConfig, transcript: CaseTranscript) -> IutLink:
    pki = load_pki(target.pki)
    identities = {"router": Identity("router", pki.cert("router"), pki.key("router"))}
    return IutLink(target.base_uri, target.ca, identities, lambda: transcript,
                   request_timeout_s=target.request_timeout_s, output_timeout_s=target.output_timeout_s,
                   max_response_bytes=target.max_response_bytes)


async def _started(target: TargetConfig, handler: Callable[[Request], Awaitable[Response]]) -> H2Server:
    """The IUT's place taken by a server answering with ``handler`` (the caller stops it)."""
    pki = load_pki(target.pki)
    server = H2Server(handler, ServerConfig(pki.cert("verifier"), pki.key("verifier"), pki.ca_cert,
                                            port=port_of(target.base_uri)))
    await server.start()
    return server


def run(coroutine: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coroutine, timeout=60))


# ----------------------------------------------------------------------------- deadlines and evidence


def test_only_the_output_long_poll_gets_the_long_deadline(target: TargetConfig) -> None:
    transcript = CaseTranscript()

    async def go() -> tuple[Answer, Answer]:
        async with MisbehavingServer(misbehaving_config(target, Mode.HANG, None)):
            link = _link(target, transcript)
            try:
                proposal = await link.send("router", "POST", "proposals", deliberate({"round": 1}))
                output = await link.send("router", "GET", "sessions/AAAAAAAAAAAAAAAAAAAAAA/output?from=0")
            finally:
                await link.aclose()
            return proposal, output

    proposal, output = run(go())
    for answer, deadline in ((proposal, 0.5), (output, 1.5)):
        assert answer.failure is FailureKind.TIMEOUT and answer.stage is Stage.HEADERS_TIMEOUT
        assert answer.deadline_s == deadline and answer.evidence is not None
        assert answer.evidence.deadline_s == deadline
        assert answer.describe().startswith("no answer (headers timeout: ")
        assert "timeout: timeout" not in answer.describe()
    notes = [entry.note for entry in transcript.entries()]
    assert len(notes) == 2 and all("stage=headers-timeout" in note for note in notes)
    assert "connection 1: TLSv1.3, ALPN h2" in notes[0]
    assert f"server certificate {target.base_uri}" in notes[0]  # the URI SAN it presented (P1-ID-1)


def test_every_answer_in_the_transcript_carries_its_content_type_and_new_connections_their_tls(
        target: TargetConfig) -> None:
    transcript = CaseTranscript()

    async def handler(request: Request) -> Response:
        return Response(200, b"<html/>", [("content-type", "text/html; charset=utf-8")])

    async def go() -> Answer:
        server = await _started(target, handler)
        link = _link(target, transcript)
        try:
            await link.send("router", "POST", "sessions", deliberate({"a": 1}))
            return await link.send("router", "POST", "sessions", deliberate({"a": 2}))
        finally:
            await link.aclose()
            await server.stop()

    answer = run(go())
    first, second = (entry.note for entry in transcript.entries())
    assert "content-type text/html; charset=utf-8" in first and "connection 1: TLSv1.3, ALPN h2" in first
    assert "content-type text/html; charset=utf-8" in second and "connection" not in second  # same connection
    assert (answer.tls_version, answer.alpn) == ("TLSv1.3", "h2")
    assert answer.media_type == "text/html" and answer.media_type_ok is False
    assert answer.describe() == "200 labelled 'text/html; charset=utf-8'"
    with pytest.raises(MalformedMessage, match="not application/sdcp"):
        answer.message(SessionState)


@pytest.mark.parametrize(("status", "content_type", "body", "ok", "problem_ok"), [
    (200, "application/sdcp+cbor", b"\xa0", True, None),
    (200, "Application/SDCP+CBOR; x=1", b"\xa0", True, None),
    (200, "application/cbor", b"\xa0", False, None),
    (204, None, b"", True, None),
    (409, "application/problem+json", b"{}", None, True),
    (409, "application/problem+cbor", b"\xa0", None, True),
    (409, "application/json", b"{}", None, False),
    (500, None, b"", None, None),
])
def test_media_types_are_data_for_the_judge(status: int, content_type: str | None, body: bytes, ok: bool | None,
                                            problem_ok: bool | None) -> None:
    answer = Answer(status, body, content_type)
    assert answer.media_type_ok is ok and answer.problem_media_type_ok is problem_ok


def test_a_failed_answer_exposes_its_evidence() -> None:
    evidence = Evidence(status=200, content_length=1000, received=12, deadline_s=5.0, tls_version="TLSv1.3")
    answer = Answer(None, b"", None, FailureKind.TIMEOUT, "the body did not finish", stage=Stage.BODY_STALLED,
                    evidence=evidence, deadline_s=5.0)
    assert (answer.content_length, answer.received, answer.tls_version) == (1000, 12, "TLSv1.3")
    assert answer.describe() == "no answer (body stalled: the body did not finish)"
    note = answer.note(new_connection=False)
    assert "stage=body-stalled" in note and "received=12" in note and "content_length=1000" in note


def test_the_request_in_flight_when_a_case_is_cancelled_is_in_the_transcript(target: TargetConfig) -> None:
    transcript = CaseTranscript()

    async def go() -> None:
        arrived = asyncio.Event()

        async def handler(request: Request) -> Response:
            arrived.set()
            await asyncio.Event().wait()  # never answers
            raise AssertionError("unreachable")

        pki = load_pki(target.pki)
        port = port_of(target.base_uri)
        server = H2Server(handler, ServerConfig(pki.cert("verifier"), pki.key("verifier"), pki.ca_cert, port=port))
        await server.start()
        link = _link(target, transcript)
        try:
            sending = asyncio.ensure_future(link.send("router", "GET", "sessions/x/output?from=0"))
            await arrived.wait()
            sending.cancel()  # what the runner does when the case's own timeout expires
            with pytest.raises(asyncio.CancelledError):
                await sending
        finally:
            await link.aclose()
            await server.stop()

    run(go())
    (entry,) = transcript.entries()
    assert (entry.method, entry.target, entry.status) == ("GET", "sessions/x/output?from=0", None)
    assert "in flight when the case was cancelled" in entry.note and "1.5 s" in entry.note


def test_one_request_timing_out_leaves_the_others_on_its_connection_their_answers(target: TargetConfig) -> None:
    """A statistical case keeps several proposals of one party in flight on one connection. One of them passing
    its deadline once made the link close the connection under the others, which were then reported as lost to
    a peer that closed it; they finish where they are now, and later requests go on a fresh connection."""
    transcript = CaseTranscript()
    slow_given_up = asyncio.Event()

    async def handler(request: Request) -> Response:
        if request.path.endswith("/slow"):
            await asyncio.Event().wait()  # never answers: its request times out
        await slow_given_up.wait()  # answers only once the link has given up on the slow one
        return Response(204, b"")

    async def go() -> tuple[Answer, Answer, Answer]:
        server = await _started(target, handler)
        link = _link(target, transcript)
        try:
            slow = asyncio.ensure_future(link.send("router", "POST", "slow", {"a": 1}))
            other = asyncio.ensure_future(link.send("router", "POST", "other", {"a": 2}, held_s=10.0))
            timed_out = await slow
            slow_given_up.set()
            return timed_out, await other, await link.send("router", "POST", "after", {"a": 3})
        finally:
            await link.aclose()
            await server.stop()

    timed_out, other, after = run(go())
    assert timed_out.stage is Stage.HEADERS_TIMEOUT and timed_out.deadline_s == 0.5
    assert other.status == 204, other.describe()
    assert other.deadline_s == 10.5  # the time the harness holds the IUT back is added to its own
    assert after.status == 204
    notes = {entry.target: entry.note for entry in transcript.entries()}
    assert "connection 1: TLSv1.3" in notes["after"]  # a new connection (of a new client) after the failure


# ----------------------------------------------------------------------------- probes


def test_probe_tells_a_stalled_handshake_from_a_refused_one(target: TargetConfig) -> None:
    pki = load_pki(target.pki)
    offer12 = TlsOffer(pki.cert("router"), pki.key("router"), max_version=ssl.TLSVersion.TLSv1_2, alpn=("h2",))
    offer13 = TlsOffer(pki.cert("router"), pki.key("router"), alpn=("h2",))

    async def go() -> dict[str, Any]:
        results = {}
        async with MisbehavingServer(misbehaving_config(target, Mode.STALLED_HANDSHAKE, None)):
            results["stalled"] = await tls_probe(target.base_uri, target.ca, offer12, read=False, timeout_s=0.5)
        server = H2Server(_never, ServerConfig(pki.cert("verifier"), pki.key("verifier"), pki.ca_cert,
                                               port=port_of(target.base_uri)))
        await server.start()
        try:
            results["refused"] = await tls_probe(target.base_uri, target.ca, offer12, read=False, timeout_s=2)
            results["completed"] = await tls_probe(target.base_uri, target.ca, offer13, read=False, timeout_s=2)
        finally:
            await server.stop()
        results["unreachable"] = await tls_probe(f"https://127.0.0.1:{free_port()}/", target.ca, offer13,
                                                 read=False, timeout_s=0.5)
        return results

    results = run(go())
    assert results["stalled"].outcome is ProbeOutcome.STALLED and not results["stalled"].refused
    assert "P1-JUDGE-3" in (results["stalled"].refusal_problem("") or "")
    assert results["refused"].outcome is ProbeOutcome.REFUSED and results["refused"].alert == "protocol_version"
    assert results["refused"].refusal_problem("completed") is None
    assert results["completed"].outcome is ProbeOutcome.COMPLETED and results["completed"].alpn == "h2"
    assert results["unreachable"].outcome is ProbeOutcome.UNREACHABLE


async def _never(request: Request) -> Response:
    return Response(204)


@pytest.mark.parametrize("case", ["VER-5.1-TRANSPORT-001", "VER-5.1-TRANSPORT-004", "VER-5.1-TRANSPORT-005"])
def test_a_verifier_that_hangs_in_the_handshake_passes_no_transport_case(target: TargetConfig, case: str) -> None:
    """A handshake that hangs for every client, the valid one too, is no refusal (P1-JUDGE-3) and shows nothing
    about client certificates: the case's control fails outside its subject, so it is INCOMPLETE, naming the
    stalled handshake (P1-JUDGE-4), and the run cannot pass."""
    async def go() -> tuple[list[Any], str]:
        async with MisbehavingServer(misbehaving_config(target, Mode.STALLED_HANDSHAKE, None)):
            report = await certify(target, selectors=[case], seed=4)
        return [result for result in report.results if result.case.id == case], report.status

    (result,), status = run(go())
    assert result.verdict is Verdict.INCOMPLETE, result.message
    assert "stalled" in result.message and "the handshake was not refused" in result.message
    assert not result.findings
    assert status == "INCOMPLETE"
