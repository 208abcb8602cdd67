"""Cases strengthened after bugs planted in the Node.js stand-ins (``tests/standins/planted.py``) passed them,
or failed them for another reason than the bug.

Each bug is planted again here in the reference verifier or drafter (one small session subclass), so a case that
loses its check fails this test: the unmutated reference must pass the case, the mutant must get the verdict the
draft asks for, for the reason the bug gives.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy.typing as npt
import pytest

from sdcp_conformance.harness.certify import certify
from sdcp_conformance.judge import Verdict
from sdcp_conformance.mutants.base import DrafterMutant, MutantApp, MutantSession, RouterMutant
from sdcp_conformance.mutants.base import VerifierMutant as Mutant
from sdcp_conformance.mutants.verifier import CATALOGUE as CATALOGUE_MUTANTS
from sdcp_conformance.protocol.codec import decode
from sdcp_conformance.protocol.contract import Contract
from sdcp_conformance.protocol.control import Action, SpeculationControl
from sdcp_conformance.protocol.errors import ProtocolError
from sdcp_conformance.protocol.messages import Output, Proposal, SessionOpen, Status
from sdcp_conformance.protocol.messages import Verdict as VerdictMessage
from sdcp_conformance.protocol.problems import ProblemType
from sdcp_conformance.protocol.rng import UniformSource
from sdcp_conformance.reference.drafter.session import DrafterSession, Next
from sdcp_conformance.reference.router.app import RouterParts
from sdcp_conformance.reference.router.registry import InstanceRegistry
from sdcp_conformance.reference.router.session import RouterSession
from sdcp_conformance.reference.verifier.session import PendingCommit, VerifierSession, WaitForRound
from sdcp_conformance.transport.types import Request, Response


class _KeepsGOnLowRounds(SpeculationControl):
    def _count(self, low: bool) -> None:
        if low:
            self.c += 1  # the bug: g is not reset, so good rounds with low ones between them add up to R
            return
        super()._count(low)


class KeepsGOnLowRounds(MutantSession):
    """Bug: a low round increments c but leaves g, so R good rounds that are not consecutive reset j."""

    control_class = _KeepsGOnLowRounds


class _RestoresOnLowRounds(SpeculationControl):
    def _adjust_m_cap(self, action: Action, low: bool) -> None:
        if low and action is not Action.REDUCE:  # the bug: m_cap is restored on a low round too
            self.m_cap = min(self.m_ceiling or self.limit(), self.limit() + 1)
            return
        super()._adjust_m_cap(action, low)


class RestoresOnLowRounds(MutantSession):
    """Bug: m_cap is restored by one on every round that does not reduce, low or not (§6.5.1's SHOULD)."""

    control_class = _RestoresOnLowRounds


class EpochBeforeAuthorization(MutantSession):
    """Bug: §6.3 step 2 (Fencing) runs before step 1 (Authorization)."""

    def _authorize(self, proposal: Proposal, peer: str | None) -> None:
        self._require_epoch(proposal.epoch)
        super()._authorize(proposal, peer)


class FencedOutputServed(MutantSession):
    """Bug: after its append was fenced the verifier refuses proposals but still serves the output."""

    def output_from(self, start: int) -> Output | None:
        fenced, self.fenced = self.fenced, False
        try:
            return super().output_from(start)
        finally:
            self.fenced = fenced


class SelfDecodesGreedily(MutantSession):
    """Bug: self-decoding takes the target's argmax under rule 2 too, instead of drawing from p."""

    def self_decode(self, logits_row: npt.ArrayLike, uniforms: UniformSource) -> PendingCommit:
        rule, self.contract = self.contract.rule, dataclasses.replace(self.contract, rule=1)
        try:
            return super().self_decode(logits_row, uniforms)
        finally:
            self.contract = dataclasses.replace(self.contract, rule=rule)


class TokenAtVocabSizeAdmitted(MutantSession):
    """Bug: the range check of proposed tokens is off by one (token V passes)."""

    def _check_limits(self, proposal: Proposal) -> None:
        self.vocab_size += 1
        try:
            super()._check_limits(proposal)
        finally:
            self.vocab_size -= 1


class HigherEpochWithoutResume(MutantApp):
    """Bug: a session-open with a higher epoch replaces the session even without resume (P1-SES-1 says 409)."""

    def _replaces(self, current: VerifierSession, opening: SessionOpen) -> bool:
        return opening.epoch > current.epoch or super()._replaces(current, opening)


class InFlightCopyKeepsStatus(MutantSession):
    """Bug: a copy of the round in flight waits for its verdict only if it is the same byte for byte, status
    included (P1-IDEM-1 leaves status out): a copy with another load is refused 409 sdcp-stale-base."""

    def concurrent(self, proposal: Proposal) -> WaitForRound | None:
        flying = self._in_flight
        if flying is not None and flying.proposal.round == proposal.round and \
                flying.proposal.to_cbor() != proposal.to_cbor():
            raise self._stale_base(f"round {proposal.round} is being verified for another proposal")
        return super().concurrent(proposal)


class PolicySamplingClosed(MutantApp):
    """Bug: a policy's sampling map is checked as the contract's is, so an unknown key in it is refused (§5.2:
    unknown keys are ignored everywhere but in the contract)."""

    async def _policy(self, request: Request, parts: list[str]) -> Response:
        body = decode(request.body)
        sampling = body.get("sampling", {}) if isinstance(body, dict) else {}
        unknown = set(sampling) - {"temperature_milli", "top_k", "top_p_milli", "seed"}
        if unknown:
            raise ProtocolError(ProblemType.BAD_MESSAGE, f"unknown sampling keys {sorted(unknown)}")
        return await super()._policy(request, parts)


class MCapAboveMMaxObeyed(DrafterSession):
    """Bug: the drafter clamps m_init to m_max but takes each verdict's m_cap as it comes, above m_max too."""

    def limit(self) -> int:
        if self.m_cap is None:
            return super().limit()
        return self.m_cap

    def on_verdict(self, verdict: VerdictMessage) -> Next:
        step = super().on_verdict(verdict)
        self.m_cap = max(1, verdict.m_cap)
        return step


class DraftsOtherThanGreedy(DrafterSession):
    """Bug: under rule 1 the drafter proposes tokens that are not its greedy ones (from its first proposal on)."""

    def next_proposal(self, tokens: Sequence[int], q_rows: str | None, status: Status) -> Proposal:
        return super().next_proposal([(token + 17) % 128 for token in tokens], q_rows, status)


class DrafterMemberWithoutSlash(DrafterSession):
    """Bug: the proposal's drafter member is the base URI without its trailing "/" (P1-ID-1 includes it)."""

    def next_proposal(self, tokens: Sequence[int], q_rows: str | None, status: Status) -> Proposal:
        proposal = super().next_proposal(tokens, q_rows, status)
        self.outstanding = dataclasses.replace(proposal, drafter=proposal.drafter.rstrip("/"))
        return self.outstanding


class SendsMInitZero(RouterSession):
    """Bug: the router sends m_init 0 (P1-DRF-2: max(1, min(m_max, m_init)))."""

    def clamp_m_init(self, contract: Contract, configured: int) -> int:
        return 0


@dataclass
class FailedAfterTwo(InstanceRegistry):
    """Bug: two failures in a row over 0.5 s make a failed verifier (P1-RTR-5 says three)."""

    failures_in_a_row: int = 2


@dataclass
class FailedWithoutSpan(InstanceRegistry):
    """Bug: three failures in a row make a failed verifier however quickly they came (P1-RTR-5 says over 0.5 s)."""

    failure_span_s: float = 0.0


MUTANTS = {
    "g-kept-on-low": Mutant("g-kept-on-low", "escalation", KeepsGOnLowRounds.__doc__ or "", "6.5.2",
                            "After a low round, c is incremented and g reset", session=KeepsGOnLowRounds),
    "restore-after-low-round": Mutant("restore-after-low-round", "escalation", RestoresOnLowRounds.__doc__ or "",
                                      "6.5.1", "It SHOULD restore m_cap gradually ... when rounds are no longer low",
                                      session=RestoresOnLowRounds, profile_only=True),
    "epoch-before-authorization": Mutant("epoch-before-authorization", "authorization",
                                         EpochBeforeAuthorization.__doc__ or "", "6.3",
                                         "On receiving a proposal, the verifier performs these steps:",
                                         session=EpochBeforeAuthorization),
    "fenced-output-served": Mutant("fenced-output-served", "fencing", FencedOutputServed.__doc__ or "", "6.3",
                                   "stop serving the session", session=FencedOutputServed),
    "self-decode-greedy-under-rule2": Mutant("self-decode-greedy-under-rule2", "escalation",
                                             SelfDecodesGreedily.__doc__ or "", "6.5.2",
                                             "The verifier decodes the session itself with the target model.",
                                             session=SelfDecodesGreedily),
    "higher-epoch-without-resume-accepted": Mutant("higher-epoch-without-resume-accepted", "session",
                                                   HigherEpochWithoutResume.__doc__ or "", "P1-SES-1",
                                                   "A `session-open` with a higher epoch but no `resume` is 409",
                                                   app=HigherEpochWithoutResume, profile_only=True),
    "in-flight-copy-keeps-status": Mutant("in-flight-copy-keeps-status", "idempotency",
                                          InFlightCopyKeepsStatus.__doc__ or "", "P1-IDEM-1",
                                          "\"Identical\" proposals are equal in every member except `status`.",
                                          session=InFlightCopyKeepsStatus, profile_only=True),
    "policy-sampling-closed": Mutant("policy-sampling-closed", "policy", PolicySamplingClosed.__doc__ or "", "5.2",
                                     "Unknown map keys MUST be ignored, except in the contract (Section 4.1).",
                                     app=PolicySamplingClosed),
    "token-equal-to-vocab-accepted": Mutant("token-equal-to-vocab-accepted", "vocabulary",
                                            TokenAtVocabSizeAdmitted.__doc__ or "", "P1-MSG-2",
                                            "out-of-range values", session=TokenAtVocabSizeAdmitted,
                                            profile_only=True),
}


DRAFTER_MUTANTS = {
    "m-cap-above-m-max-obeyed": DrafterMutant("m-cap-above-m-max-obeyed", "proposal",
                                              MCapAboveMMaxObeyed.__doc__ or "", "6.2",
                                              "1 <= M <= min(m_max, m_cap)", session=MCapAboveMMaxObeyed),
    "rule1-not-greedy": DrafterMutant("rule1-not-greedy", "discard", DraftsOtherThanGreedy.__doc__ or "",
                                      "P1-DRF-4", "Under rule 1 a drafter proposes its own greedy tokens",
                                      session=DraftsOtherThanGreedy, profile_only=True),
    "drafter-member-without-slash": DrafterMutant("drafter-member-without-slash", "proposal",
                                                  DrafterMemberWithoutSlash.__doc__ or "", "P1-ID-1",
                                                  "equals its base URI (scheme, host, port, path, trailing `/`)",
                                                  session=DrafterMemberWithoutSlash, profile_only=True),
}


ROUTER_MUTANTS = {
    "failed-after-two": RouterMutant("failed-after-two", "failover", FailedAfterTwo.__doc__ or "", "P1-RTR-5",
                                     "three times in a row over at least 0.5 s",
                                     parts=RouterParts(registry=FailedAfterTwo), profile_only=True),
    "failed-without-span": RouterMutant("failed-without-span", "failover", FailedWithoutSpan.__doc__ or "",
                                        "P1-RTR-5", "three times in a row over at least 0.5 s",
                                        parts=RouterParts(registry=FailedWithoutSpan), profile_only=True),
    "m-init-zero": RouterMutant("m-init-zero", "assignment", SendsMInitZero.__doc__ or "", "P1-DRF-2",
                                "the router sends max(1, min(m_max, m_init))",
                                parts=RouterParts(session=SendsMInitZero)),
}


def _certify(case: str, mutant: str | None, workdir: Path) -> tuple[Verdict, str, list[str]]:
    if case.startswith("RTR-"):
        factory = ROUTER_MUTANTS[mutant].factory if mutant is not None else None
        report = asyncio.run(certify(selectors=[case], seed=1, app_factory=factory, workdir=workdir, role="router"))
    elif case.startswith("DRF-"):
        factory = DRAFTER_MUTANTS[mutant].factory if mutant is not None else None
        report = asyncio.run(certify(selectors=[case], seed=1, app_factory=factory, workdir=workdir, role="drafter"))
    else:
        factory = (MUTANTS.get(mutant) or CATALOGUE_MUTANTS[mutant]).factory if mutant is not None else None
        report = asyncio.run(certify(selectors=[case], seed=1, app_factory=factory, workdir=workdir))
    result = next(result for result in report.results if result.case.id == case)
    return result.verdict, result.message, [finding.row for finding in result.findings]


def test_a_router_whose_assignment_the_verifier_refused_is_told_why(tmp_path: Path) -> None:
    """m_init 0 is refused by the harness's verifier (P1-DRF-2), so no drafter is ever assigned: the sanity case
    fails (the run cannot test the router), and says it was the refused PUT …/drafter, not a missing assignment."""
    got, message, _ = _certify("RTR-SANITY-001", "m-init-zero", tmp_path)
    assert got is Verdict.FAILED, message
    assert "PUT …/drafter" in message and "m_init 0" in message and "400" in message, message


@pytest.mark.parametrize(("case", "mutant", "verdict", "row"), [
    ("VER-6.5-ESC-013", None, Verdict.PASSED, None),
    ("VER-6.5-ESC-013", "g-kept-on-low", Verdict.FAILED, "R-6.5.2-J-RESET"),
    ("VER-6.5-ESC-003", None, Verdict.PASSED, None),
    # the restore on a low round is the deviation (a SHOULD); the halving that follows it is right
    ("VER-6.5-ESC-003", "restore-after-low-round", Verdict.NON_STRICT, "R-6.5.1-RESTORE"),
    ("VER-6.3-AUTHORIZATION-008", None, Verdict.PASSED, None),
    ("VER-6.3-AUTHORIZATION-008", "epoch-before-authorization", Verdict.FAILED, "R-6.3-AUTHORIZATION"),
    ("VER-6.3-FENCING-004", None, Verdict.PASSED, None),
    ("VER-6.3-FENCING-004", "fenced-output-served", Verdict.FAILED, "R-6.3-FENCED-APPEND"),
    ("VER-6.8-FENCING-101", "fenced-output-served", Verdict.FAILED, "R-6.3-FENCED-APPEND"),
    ("VER-6.1-SESSION-007", None, Verdict.PASSED, None),
    # taking the open is the deviation; epoch 1's proposals are then rightly stale, not a second one
    ("VER-6.1-SESSION-007", "higher-epoch-without-resume-accepted", Verdict.NON_STRICT, "P1-SES-1/HIGHER-EPOCH"),
    ("VER-6.5-ESC-018", None, Verdict.PASSED, None),
    # greedy tokens are not the seeded draws either: P1-SAMP-3 is rightly judged beside the draft's row
    ("VER-6.5-ESC-018", "self-decode-greedy-under-rule2", Verdict.FAILED,
     frozenset({"R-6.5.2-SELF-TARGET", "P1-SAMP-3/SELF"})),
    ("VER-6.4-VOCAB-002", None, Verdict.PASSED, None),
    # the verdict rejects token V and emits the greedy tokens: only P1-MSG-2 is broken
    ("VER-6.4-VOCAB-002", "token-equal-to-vocab-accepted", Verdict.NON_STRICT, "P1-MSG-2/TOKEN-RANGE"),
    ("VER-6.4-VOCAB-003", None, Verdict.PASSED, None),
    ("VER-P1-MSG-2-VOCAB-001", None, Verdict.PASSED, None),
    ("DRF-6.3-DISCARD-001", None, Verdict.PASSED, None),
    # a drafter that never drafts greedily shows no kept draft state: only P1-DRF-4 is broken
    ("DRF-6.3-DISCARD-001", "rule1-not-greedy", Verdict.NON_STRICT, "P1-DRF-4"),
    ("DRF-SANITY-001", None, Verdict.PASSED, None),
    ("DRF-SANITY-001", "drafter-member-without-slash", Verdict.NON_STRICT, "P1-ID-1/PROPOSAL"),
    ("DRF-6.2-LIMIT-002", None, Verdict.PASSED, None),
    ("DRF-6.2-LIMIT-002", "m-cap-above-m-max-obeyed", Verdict.FAILED, "R-6.2-M-BOUNDS"),
    ("VER-6.3-IDEMPOTENCY-003", None, Verdict.PASSED, None),
    ("VER-6.3-IDEMPOTENCY-003", "in-flight-copy-keeps-status", Verdict.NON_STRICT, "P1-IDEM-1/IDENTICAL"),
    ("VER-6.6-POLICY-007", None, Verdict.PASSED, None),
    ("VER-6.6-POLICY-007", "policy-sampling-closed", Verdict.FAILED, "R-5.2-UNKNOWN-KEYS"),
    # a statistical case names the sentence its evidence points to (D-JUDGE-STAT-ROW), not its headline row
    ("VER-6.4-RULE2-STAT-009", "rule2-shared-stream", Verdict.FAILED, "R-6.4-INDEPENDENT"),
    ("VER-6.4-RULE2-STAT-009", "rule2-bonus-from-p-m", Verdict.FAILED, "R-6.4-RULE2"),
    ("VER-6.4-RULE2-STAT-007", "rule2-bonus-from-p-m", Verdict.FAILED, "R-6.4-RULE2"),
    ("VER-6.4-RULE2-STAT-007", "no-stop-truncation", Verdict.FAILED, "R-6.3-TRUNCATE"),
    ("RTR-P1-RTR-5-INTERMITTENT-001", None, Verdict.PASSED, None),
    ("RTR-P1-RTR-5-INTERMITTENT-001", "failed-after-two", Verdict.NON_STRICT, "P1-RTR-5/FAILED-VERIFIER"),
    ("RTR-P1-RTR-5-QUICK-001", None, Verdict.PASSED, None),
    ("RTR-P1-RTR-5-QUICK-001", "failed-without-span", Verdict.NON_STRICT, "P1-RTR-5/FAILED-VERIFIER"),
])
def test_the_case_catches_the_planted_bug_for_its_own_reason(case: str, mutant: str | None, verdict: Verdict,
                                                           row: str | frozenset[str] | None, tmp_path: Path) -> None:
    got, message, rows = _certify(case, mutant, tmp_path)
    assert got is verdict, message
    if row is not None:
        expected = {row} if isinstance(row, str) else set(row)
        assert set(rows) == expected, f"{case} judged {rows}, expected only {expected}: {message}"
