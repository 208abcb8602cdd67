"""A misbehaving router or drafter is judged for what it did first, and a failed exchange is never a refusal.

Against a router whose front answers 200 with bytes that are not CBOR (and never opens a session anywhere),
the sanity case once failed on "no drafter was assigned": the assignment is the second thing such a router
never did. Against a drafter that never answers, the assignment was said to be "refused" (P1-JUDGE-3: a
timeout is never a refusal). Each run here must also not pass (P1-JUDGE-3: its sanity case did not).
"""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import pytest

from sdcp_conformance.harness.case import Verdict
from sdcp_conformance.harness.certify import certify
from sdcp_conformance.harness.contexts import drafter as drafter_context
from sdcp_conformance.harness.contexts import router as router_context
from sdcp_conformance.harness.iut import Answer
from sdcp_conformance.harness.role_spec import spec_of
from sdcp_conformance.harness.runner import RUN_INCOMPLETE, RunReport
from sdcp_conformance.harness.target import load_target
from sdcp_conformance.reference.roles import port_of
from sdcp_conformance.testing.misbehaving import MisbehavingConfig, MisbehavingServer, Mode
from sdcp_conformance.transport.failures import Stage
from sdcp_conformance.transport.pki import load_pki

RUN_DEADLINE_S = 120.0
RESPONSE_LIMIT = 1 << 20
"""Small enough that an endless body reaches it well within the 1 s request deadline on a slow machine (at the
default 16 MiB a CI machine read 13 MB in the second and judged a stalled body instead)."""


async def _certify(role: str, mode: Mode, folder: Path, *selectors: str) -> RunReport:
    _, path = spec_of(role).write_target(folder)
    target = dataclasses.replace(load_target(path), request_timeout_s=1.0, max_response_bytes=RESPONSE_LIMIT)
    pki = load_pki(target.pki)
    config = MisbehavingConfig(mode, pki.cert(role), pki.key(role), pki.ca_cert, port=port_of(target.base_uri),
                               other_cert=pki.wrong_ca.cert, other_key=pki.wrong_ca.key)
    async with MisbehavingServer(config):
        return await asyncio.wait_for(certify(target, selectors=list(selectors), seed=3), RUN_DEADLINE_S)


def test_a_front_answering_garbage_fails_on_the_session_open_it_never_sent(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(router_context, "ACT_S", 1.0)
    report = asyncio.run(_certify("router", Mode.GARBAGE_CBOR, tmp_path, "RTR-SANITY-001"))
    assert report.status == RUN_INCOMPLETE
    first = report.results[0]
    assert first.verdict is Verdict.FAILED
    assert "accepted a session-open" in first.message and "not well-formed CBOR" in first.message
    assert "assigned" not in first.message


@pytest.mark.parametrize("mode", [Mode.HANG, Mode.STREAM_RESET])
def test_a_drafter_that_never_answers_did_not_refuse(tmp_path: Path, mode: Mode) -> None:
    report = asyncio.run(_certify("drafter", mode, tmp_path, "DRF-SANITY-001"))
    assert report.status == RUN_INCOMPLETE
    first = report.results[0]
    assert first.verdict is Verdict.FAILED
    # P1-JUDGE-5: not answered twice, the second time alone with longer deadlines, and never called a refusal.
    assert ("was not answered" in first.message or first.message.startswith("too slow: no answer in")), first.message
    assert "refused" not in first.message


def test_refused_names_a_refusal_only_when_there_was_an_answer() -> None:
    refusal = Answer(503, b"", None)
    assert refusal.refused() == "was refused (503)"
    timeout = Answer(None, b"", None, stage=Stage.HEADERS_TIMEOUT, failure_detail="no response headers within 1 s")
    assert timeout.refused() == "was not answered (headers timeout: no response headers within 1 s)"


def test_a_front_that_never_answers_leaves_the_run_incomplete(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The front is the profile's (P1-FRONT-1), so its silence is NON-STRICT — twice, "too slow" on the front's
    row (P1-JUDGE-5); but the sanity case stopped there, so nothing was tested (D-JUDGE-SANITY, P1-JUDGE-3)."""
    monkeypatch.setattr(router_context, "ACT_S", 1.0)
    report = asyncio.run(_certify("router", Mode.HANG, tmp_path, "RTR-SANITY-001"))
    first = report.results[0]
    assert first.verdict is Verdict.NON_STRICT and not first.completed and "headers timeout" in first.message
    assert report.status == RUN_INCOMPLETE


REFUSING_EVERY_CLIENT = [Mode.TLS12_ONLY, Mode.HTTP11_ONLY, Mode.OTHER_CA, Mode.CLOSE_AFTER_HANDSHAKE,
                         Mode.STREAM_RESET]
"""Servers that refuse or drop a valid client as they do the bad ones (the stage each shows)."""
HANDSHAKE_REFUSED = {Mode.TLS12_ONLY: "was refused at the handshake", Mode.HTTP11_ONLY: "was refused at the handshake",
                     Mode.OTHER_CA: "could not verify"}
"""D-JUDGE-CONTROL-1: the modes whose handshake itself shuts the valid client out (or that the harness cannot
authenticate) fail §5.1; the others drop the valid client after a handshake that succeeded, which says nothing
about client certificates: INCOMPLETE, naming it (P1-JUDGE-4)."""
STAGE_WORDS = {Mode.TLS12_ONLY: "protocol_version", Mode.HTTP11_ONLY: "ALPN", Mode.OTHER_CA: "certificate verification",
               Mode.CLOSE_AFTER_HANDSHAKE: "SETTINGS", Mode.STREAM_RESET: "RST_STREAM"}
REFUSAL_CASES = {"drafter": ("DRF-5.1-TRANSPORT-001", "DRF-5.1-TRANSPORT-002", "DRF-5.1-TRANSPORT-003",
                             "DRF-5.1-TRANSPORT-004"),
                 "router": ("RTR-5.1-TRANSPORT-001", "RTR-5.1-TRANSPORT-002", "RTR-5.1-TRANSPORT-003",
                            "RTR-5.1-TRANSPORT-004")}


@pytest.mark.parametrize("role", ["drafter", "router"])
@pytest.mark.parametrize("mode", REFUSING_EVERY_CLIENT, ids=lambda mode: mode.value)
def test_a_server_that_refuses_every_client_does_not_pass_the_refusal_cases(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, role: str, mode: Mode) -> None:
    """A handshake without a certificate (or at TLS 1.2, or over HTTP/1.1) that fails proves nothing when a valid
    client fails too: each such case fails on its control, at §5.1's MUST, with the control's stage named, when
    the valid client's handshake was refused; when the valid client was dropped after its handshake, the case is
    INCOMPLETE with the stage named (P1-JUDGE-4). Never a pass."""
    monkeypatch.setattr(router_context, "ACT_S", 1.0)
    cases = REFUSAL_CASES[role]
    report = asyncio.run(_certify(role, mode, tmp_path, *cases))
    judged = {result.case.id: result for result in report.results if result.run == "main"}
    assert set(judged) == set(cases)
    for result in judged.values():
        if mode in HANDSHAKE_REFUSED:
            assert result.verdict is Verdict.FAILED, (result.case.id, result.verdict, result.message)
            assert result.findings[0].row == "R-5.1-MTLS"
            assert HANDSHAKE_REFUSED[mode] in result.message, result.message
        else:
            assert result.verdict is Verdict.INCOMPLETE, (result.case.id, result.verdict, result.message)
            assert "the handshake was not refused" in result.message and not result.findings, result.message
        assert STAGE_WORDS[mode] in result.message, result.message
    assert report.status != "PASSED"


STAGE_OF = {Mode.HANG: "headers timeout", Mode.STALLED_HANDSHAKE: "TLS handshake stalled",
            Mode.DRIP_BODY: "body stalled", Mode.STREAM_RESET: "stream reset",
            Mode.GOAWAY_ERROR: "GOAWAY(INTERNAL_ERROR",
            Mode.CLOSE_AFTER_HANDSHAKE: "preface/SETTINGS", Mode.STATUS_500_WITH_BODY: "500",
            Mode.STATUS_500_WITHOUT_BODY: "500", Mode.HUGE_BODY: "body over limit",
            Mode.HUGE_BODY_UNDECLARED: "body over limit", Mode.TLS12_ONLY: "protocol_version",
            Mode.HTTP11_ONLY: "ALPN", Mode.OTHER_CA: "certificate verification failed",
            Mode.BAD_STATUS: ":status '2xx'"}
"""Words of the stage where the conversation broke, as the sanity case's message must name them."""
ANSWERED_GARBAGE = {
    # P1-MSG-4: any 2xx to an assignment is success, whatever its body: the drafter is then judged on the proposal
    # it never sends.
    ("drafter", Mode.GARBAGE_CBOR): "no proposal arrived", ("drafter", Mode.WRONG_SHAPE): "no proposal arrived",
    ("router", Mode.GARBAGE_CBOR): "not well-formed CBOR", ("router", Mode.WRONG_SHAPE): "the front answered 200",
}


JUDGED_ABOVE = {("drafter", Mode.HANG), ("drafter", Mode.STREAM_RESET), ("router", Mode.GARBAGE_CBOR),
                ("router", Mode.HANG)}
"""Pairs the tests above judge more closely."""
MATRIX = [pytest.param(role, mode, id=f"{mode.value}-{role}") for role in ("drafter", "router")
          for mode in (*STAGE_OF, Mode.GARBAGE_CBOR, Mode.WRONG_SHAPE) if (role, mode) not in JUDGED_ABOVE]


@pytest.mark.parametrize(("role", "mode"), MATRIX)
def test_a_misbehaving_drafter_or_router_is_judged_for_where_it_broke(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, role: str, mode: Mode) -> None:
    """Issue 12's matrix for the other two roles: bounded time, a run that is not passed, and a sanity case that did
    not pass and names the stage where the conversation broke (the front is the profile's: NON-STRICT there)."""
    monkeypatch.setattr(router_context, "ACT_S", 1.0)
    monkeypatch.setattr(drafter_context, "FIRST_PROPOSAL_S", 2.0)
    report = asyncio.run(_certify(role, mode, tmp_path, "RTR-SANITY-001" if role == "router" else "DRF-SANITY-001"))
    assert report.status == RUN_INCOMPLETE
    first = report.results[0]
    assert first.verdict in (Verdict.FAILED, Verdict.NON_STRICT), (first.verdict, first.message)
    words = ANSWERED_GARBAGE.get((role, mode)) or STAGE_OF[mode]
    assert words in first.message, first.message
    if mode in STAGE_OF and mode not in (Mode.STATUS_500_WITH_BODY, Mode.STATUS_500_WITHOUT_BODY):
        assert "refused" not in first.message  # P1-JUDGE-3: no answer is never a refusal



def test_a_drafter_without_a_client_certificate_is_judged_on_its_transport_not_on_its_silence(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The embedded reference drafter, its outbound clients stripped of their certificate: the harness's verifier
    and router refuse its handshakes, so no proposal ever arrives. The sanity case must say so on §5.1
    (D-JUDGE-REFUSED-CLIENT), not blame the proposal it waited for (R-6.5.2-CONTINUE)."""
    from sdcp_conformance.reference import links, roles

    monkeypatch.setattr(drafter_context, "FIRST_PROPOSAL_S", 2.0)
    certified = roles.sdcp_client  # the embedded drafter is started by reference.roles.start_drafter
    monkeypatch.setattr(roles, "sdcp_client",
                        lambda http, base_uri, cert, key, ca, **kw: certified(http, base_uri, None, None, ca, **kw))
    monkeypatch.setattr(roles, "party_http_client", lambda cert, key, ca, **kw: links.httpx.AsyncClient(
        transport=links.H2Transport(None, None, ca)))
    report = asyncio.run(asyncio.wait_for(certify(role="drafter", selectors=["DRF-SANITY-001"], seed=3),
                                          RUN_DEADLINE_S))
    first = report.results[0]
    assert first.verdict is Verdict.FAILED
    assert [finding.row for finding in first.findings] == ["R-5.1-MTLS-CLIENT"], first.message
    assert "presented no certificate" in first.message
    assert "then: the first proposal: no proposal arrived within 2 s" in first.message
