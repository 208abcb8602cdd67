"""The harness checks itself (harness/self_check.py): a played party's malformed message, or an injected fault that
never takes effect, makes the case ERROR ("harness bug: …"), never FAILED or PASSED; a message a case sends on
purpose (marked deliberate, or raw bytes) is not flagged.

The case-level tests run real cases of the suites against the embedded reference of their role, with one part of
the harness broken by a monkeypatch (a builder, an injector); the others check the rules and the evidence directly.
"""

from __future__ import annotations

import asyncio
import json
import types
from typing import Any

import pytest

from sdcp_conformance.cache.faults import ArmedFault, FaultPlan
from sdcp_conformance.errors import HarnessBug
from sdcp_conformance.harness import self_check
from sdcp_conformance.harness.certify import certify
from sdcp_conformance.harness.contexts.drafter import DrafterContext
from sdcp_conformance.harness.contexts.verifier import VerifierContext
from sdcp_conformance.harness.iut import Answer
from sdcp_conformance.harness.roles.played_session import Arrival
from sdcp_conformance.harness.roles.played_verifier import PlayedVerifier
from sdcp_conformance.harness.roles.router_history import History
from sdcp_conformance.harness.roles.status_reports import StatusReporter
from sdcp_conformance.harness.runner import CaseResult
from sdcp_conformance.harness.self_check import (
    Deliberate,
    InjectedFault,
    SelfCheck,
    deliberate,
    request_bug,
    request_rule,
    response_bug,
    response_rule,
)
from sdcp_conformance.harness.transcript import CaseTranscript
from sdcp_conformance.judge import Finding, Verdict
from sdcp_conformance.protocol.codec import encode
from sdcp_conformance.protocol.messages import Verdict as VerdictMessage
from sdcp_conformance.protocol.problems import PROBLEM_MEDIA_TYPE, SDCP_MEDIA_TYPE
from sdcp_conformance.transport.types import Request, Response, TransportFault

pytestmark = pytest.mark.timeout(120)

SESSION = bytes(range(16))
DIGEST = bytes(32)
STATUS = {"instance": "https://127.0.0.1:1/drafter-1/", "role": 1, "load": 0, "queue": 0, "ttl_ms": 5000}
PROPOSAL = {"session": SESSION, "epoch": 1, "round": 1, "drafter": "https://127.0.0.1:1/drafter-1/", "base": 0,
            "base_digest": DIGEST, "tokens": [1, 2], "status": STATUS}
VERDICT = {"session": SESSION, "epoch": 1, "round": 1, "accepted": 2, "emitted": [1, 2, 3], "committed": 3,
           "digest": DIGEST, "action": 0, "m_cap": 8, "low": 0, "load": 0}


def _certify(role: str, case_id: str) -> list[CaseResult]:
    """The results of one case (and the sanity case around it) certified against the embedded reference."""
    report = asyncio.run(certify(role=role, selectors=[case_id], seed=7))
    return [result for result in report.results if result.case.id == case_id]


def _only(results: list[CaseResult], run: str = "main") -> CaseResult:
    [result] = [result for result in results if result.run == run]
    return result


def _assert_harness_bug(result: CaseResult, *words: str) -> None:
    assert result.verdict is Verdict.ERROR, (result.verdict, result.message)
    assert result.message.startswith("harness bug: "), result.message
    for word in words:
        assert word in result.message, (word, result.message)


# ------------------------------------------------------------------ which rule a message carries


@pytest.mark.parametrize(("method", "path", "request_side", "answer_side"), [
    ("POST", "sessions", "session-open", "session-state"),
    ("PUT", "sessions/AAAA/drafter", "assignment", "session-state"),
    ("POST", "/verifier-2/sessions/AAAA/policy", "policy", "session-state"),
    ("GET", "sessions/AAAA/output?from=3", None, "output"),
    ("POST", "/verifier-1/proposals", "proposal", "verdict"),
    ("POST", "assignments", "assignment", None),
    ("POST", "events", "event", None),
    ("PUT", "instances/aHR0cHM/status", "status", None),
    ("POST", "client/sessions", None, None),  # the profile's test front: no sdcp.cddl shape
    ("POST", "client/sessions/AAAA/policy", None, None),
    ("DELETE", "sessions", None, None),
])
def test_each_resource_names_the_rule_of_its_messages(method: str, path: str, request_side: str | None,
                                                      answer_side: str | None) -> None:
    assert request_rule(method, path) == request_side
    assert response_rule(method, path) == answer_side


def test_a_request_is_checked_unless_it_is_deliberate() -> None:
    good, bad = dict(PROPOSAL), {**PROPOSAL, "round": "one"}
    assert request_bug("drafter-1", "POST", "proposals", good, encode(good), SDCP_MEDIA_TYPE) is None
    found = request_bug("drafter-1", "POST", "proposals", bad, encode(bad), SDCP_MEDIA_TYPE)
    assert found is not None and "proposal" in found and "/round" in found
    # What a case sends on purpose: a deliberate() map, raw bytes, another media type.
    assert request_bug("drafter-1", "POST", "proposals", deliberate(bad), encode(bad), SDCP_MEDIA_TYPE) is None
    assert request_bug("drafter-1", "POST", "proposals", encode(bad), encode(bad), SDCP_MEDIA_TYPE) is None
    assert request_bug("drafter-1", "POST", "proposals", bad, encode(bad), "application/json") is None
    assert isinstance(deliberate(bad), Deliberate) and deliberate(bad) == bad  # it reads and encodes as the map
    assert encode(deliberate(bad)) == encode(bad)


def test_refused_requests_raise_and_are_recorded_in_the_case() -> None:
    transcript = CaseTranscript()
    bad = {**PROPOSAL, "tokens": []}
    with pytest.raises(HarnessBug, match="tokens"):
        self_check.refuse_request(transcript, "drafter-1", "POST", "proposals", bad, encode(bad), SDCP_MEDIA_TYPE)
    assert len(transcript.self_check.bugs) == 1


def _request(method: str, path: str) -> Request:
    return Request(method, path, "", (), b"", None)


def test_an_answer_of_a_played_server_is_checked() -> None:
    sdcp = [("content-type", SDCP_MEDIA_TYPE)]
    proposals = _request("POST", "/verifier-1/proposals")
    assert response_bug("verifier-1", proposals, Response(200, encode(VERDICT), sdcp)) is None
    lacking = {key: value for key, value in VERDICT.items() if key != "load"}
    found = response_bug("verifier-1", proposals, Response(200, encode(lacking), sdcp))
    assert found is not None and "verdict" in found and "load" in found
    unlabelled = response_bug("verifier-1", proposals, Response(200, encode(VERDICT), []))
    assert unlabelled is not None and SDCP_MEDIA_TYPE in unlabelled
    problem = [("content-type", PROBLEM_MEDIA_TYPE)]
    typed = json.dumps({"type": "urn:ietf:params:sdcp:problem:stale-base", "status": 409}).encode()
    assert response_bug("verifier-1", proposals, Response(409, typed, problem)) is None
    untyped = response_bug("verifier-1", proposals, Response(409, json.dumps({"status": 409}).encode(), problem))
    assert untyped is not None and "problem-details" in untyped
    # A transport fault sends nothing; an answer with no SDCP resource (204 to an assignment) has nothing to check.
    assert response_bug("verifier-1", proposals, Response(503, fault=TransportFault.RESET_STREAM)) is None
    assert response_bug("drafter-1", _request("POST", "/drafter-1/assignments"), Response(204)) is None


# ------------------------------------------------------------------ the evidence of faults


def _deviation() -> list[Finding]:
    return [Finding("R-5.1-RESOURCES", Verdict.FAILED, "the IUT did something wrong")]


def test_a_required_fault_that_never_fired_is_a_harness_bug() -> None:
    check = SelfCheck()
    check.register(InjectedFault("verifier-2 failing (errors)", met=3))
    with pytest.raises(HarnessBug, match=r"verifier-2 failing \(errors\) did not take effect: 3 time"):
        check.conclude(_deviation(), [])  # it met requests and failed none: whatever the case found


def test_a_fault_nothing_met_fails_a_pass_but_not_a_finding() -> None:
    check = SelfCheck()
    check.register(InjectedFault("hold of PUT /log"))
    with pytest.raises(HarnessBug, match="nothing reached it"):
        check.conclude([], [])
    notes: list[str] = []
    check.conclude(_deviation(), notes)  # a broken IUT never sent the request the fault waited for
    assert notes and "never took effect" in notes[0]


def test_a_fault_that_fired_or_is_optional_is_no_bug() -> None:
    check = SelfCheck()
    check.register(InjectedFault("fired", met=2, fired=1))
    check.register(InjectedFault("in case the IUT asks", must_fire=False))
    notes: list[str] = []
    check.conclude([], notes)
    assert notes == []


def test_a_cache_fault_counts_what_met_it_and_registers_when_armed() -> None:
    plan = FaultPlan()
    armed: list[ArmedFault] = []
    plan.on_arm = armed.append
    plan.reject_appends("/log", 2)
    plan.hold("/other", must_fire=False)
    assert [fault.must_fire for fault in armed] == [True, False]
    plan.meet("PUT", "/log")
    plan.meet("GET", "/log")  # not a method it applies to
    assert (armed[0].met, armed[0].fired) == (1, 0)
    assert [fault.fault_id for fault in plan.take("PUT", "/log")] == [armed[0].fault_id]
    assert (armed[0].met, armed[0].fired) == (1, 1)


def test_a_lost_verdict_takes_effect_only_on_an_unanswered_proposal() -> None:
    async def scenario() -> tuple[SelfCheck, Arrival, Arrival]:
        context = types.SimpleNamespace(transcript=CaseTranscript())
        waiting = Arrival(1, 0.0, "v", None, b"", None, None)
        waiting.future = asyncio.get_running_loop().create_future()
        answered = Arrival(2, 0.0, "v", None, b"", None, None)
        answered.future = asyncio.get_running_loop().create_future()
        answered.future.set_result(Response(200))
        DrafterContext.lose(context, waiting, "503")  # type: ignore[arg-type]
        DrafterContext.lose(context, answered, "503")  # type: ignore[arg-type]
        return context.transcript.self_check, waiting, answered

    check, waiting, _ = asyncio.run(scenario())
    assert waiting.future is not None and waiting.future.result().status == 503
    assert [(fault.met, fault.fired) for fault in check.faults] == [(1, 1), (1, 0)]
    with pytest.raises(HarnessBug, match=r"lost verdict \(503\) of proposal #2 did not take effect"):
        check.conclude([], [])


def _reporter() -> StatusReporter:
    async def send(who: str, method: str, path: str, body: dict[str, Any]) -> Answer:
        return Answer(204, b"", None)

    return StatusReporter("verifier-1", "https://127.0.0.1:1/verifier-1/", 2, History(), quiet=send, recorded=send)


def test_a_status_let_expire_takes_effect_only_if_nothing_renewed_it() -> None:
    async def scenario() -> tuple[InjectedFault, InjectedFault]:
        reporter = _reporter()
        await reporter.report()
        await reporter.silence(1)
        silent = reporter.expiry_fault("silenced")
        await reporter.wait_expired(margin_s=0.0)
        await reporter.revive()  # the injector "forgot" to silence: a report renews the status
        renewed = reporter.expiry_fault("renewed")
        await reporter.report(1)
        assert renewed.probe is not None
        renewed.probe()  # the case ends relying on it
        return silent, renewed

    silent, renewed = asyncio.run(scenario())
    assert (silent.met, silent.fired) == (1, 1)
    assert (renewed.met, renewed.fired) == (1, 0)


# ------------------------------------------------------------------ real cases, one part of the harness broken


def test_an_assignment_of_the_wrong_type_is_a_harness_bug(monkeypatch: pytest.MonkeyPatch) -> None:
    """The router the harness plays sends an assignment whose m_init is text: ERROR, not the IUT's refusal."""
    built = VerifierContext.assignment

    def assignment(self: VerifierContext, *args: Any, **overrides: Any) -> dict[str, Any]:
        return {**built(self, *args, **overrides), "m_init": "4"}

    monkeypatch.setattr(VerifierContext, "assignment", assignment)
    result = _only(_certify("verifier", "VER-SANITY-001"), "sanity-first")
    _assert_harness_bug(result, "assignment", "PUT sessions/", "/m_init")
    assert not result.findings  # nothing was blamed on the IUT


def test_a_played_verifiers_malformed_session_state_is_a_harness_bug(monkeypatch: pytest.MonkeyPatch) -> None:
    """A played verifier answers the router under test a session-state without its digest: the router's reaction
    is not judged; the case is ERROR."""
    body = PlayedVerifier._state_body

    def state_body(self: PlayedVerifier, served: Any) -> dict[str, Any]:
        return {key: value for key, value in body(self, served).items() if key != "digest"}

    monkeypatch.setattr(PlayedVerifier, "_state_body", state_body)
    result = _only(_certify("router", "RTR-SANITY-001"), "sanity-first")
    _assert_harness_bug(result, "session-state", "digest")


def test_a_verdict_lacking_a_member_is_a_harness_bug(monkeypatch: pytest.MonkeyPatch) -> None:
    """The verifier the harness plays for a drafter would answer a verdict without ``load``: it is never sent."""
    to_obj = VerdictMessage.to_obj

    def lacking(self: VerdictMessage) -> dict[str, Any]:
        return {key: value for key, value in to_obj(self).items() if key != "load"}

    monkeypatch.setattr(VerdictMessage, "to_obj", lacking)
    result = _only(_certify("drafter", "DRF-SANITY-001"), "sanity-first")
    _assert_harness_bug(result, "verdict", "load")


def test_a_cache_fault_that_never_fires_is_a_harness_bug(monkeypatch: pytest.MonkeyPatch) -> None:
    """The MLC's refusal of the verifier's commit-log appends is armed but its plan never fires it: the case about
    it is ERROR, not FAILED for the commits the IUT then (rightly) made."""
    monkeypatch.setattr(FaultPlan, "take", lambda self, method, path: [])
    result = _only(_certify("verifier", "VER-6.3-LOG-003"))
    _assert_harness_bug(result, "reject-append of PUT", "did not take effect")


def test_a_verifier_kill_that_never_happens_is_a_harness_bug(monkeypatch: pytest.MonkeyPatch) -> None:
    """The played verifier told to answer 5xx serves as usual: the router rightly does not fail it over, and the
    case says the harness's fault never took effect instead of failing the router."""
    monkeypatch.setattr(PlayedVerifier, "_fault_response", lambda self: None)
    result = _only(_certify("router", "RTR-6.9-FAILOVER-003"))
    _assert_harness_bug(result, "failing (errors)", "did not take effect")


def test_a_status_expiry_that_never_happens_is_a_harness_bug(monkeypatch: pytest.MonkeyPatch) -> None:
    """The serving verifier's status is to expire, but its heartbeats go on (the silencing does nothing)."""
    async def silence(self: StatusReporter, final_ttl_ms: int | None = None) -> float:
        return self.expires_at

    monkeypatch.setattr(StatusReporter, "silence", silence)
    result = _only(_certify("router", "RTR-6.9-FAILOVER-001"))
    _assert_harness_bug(result, "status of verifier-", "let expire", "did not take effect")


# ------------------------------------------------------------------ deliberate messages are not flagged


@pytest.mark.parametrize(("role", "case_id"), [
    ("verifier", "VER-6.2-LIMITS-007"),  # a proposal with no tokens (tokens: [+ uint])
    ("verifier", "VER-6.1-SESSION-013"),  # a session-open without commit_log, a 15-octet session id
    ("router", "RTR-5.2-WELL-FORMED-001"),  # a status without ttl_ms, an event whose kind is text
    ("drafter", "DRF-4.1-UNKNOWN-KEY-001"),  # a contract with a key §4.1 does not define
])
def test_a_deliberately_invalid_message_keeps_the_cases_verdict(role: str, case_id: str) -> None:
    result = _only(_certify(role, case_id))
    assert result.verdict is Verdict.PASSED, (result.verdict, result.message)


def test_without_its_mark_the_same_message_is_flagged(monkeypatch: pytest.MonkeyPatch) -> None:
    """The mark is what keeps the empty proposal of VER-6.2-LIMITS-007 from being flagged."""
    monkeypatch.setattr("sdcp_conformance.harness.contexts.verifier.as_sent", lambda body, on_purpose: body)
    result = _only(_certify("verifier", "VER-6.2-LIMITS-007"))
    _assert_harness_bug(result, "proposal", "tokens")
