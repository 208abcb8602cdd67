"""Cases strengthened after bugs planted in the Node.js stand-ins (``tools/standin_node_planted.py``) passed them,
or failed them for another reason than the bug.

Each bug is planted again here in the reference verifier or drafter (one small session subclass), so a case that
loses its check fails this test: the unmutated reference must pass the case, the mutant must get the verdict the
draft asks for, for the reason the bug gives.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

import pytest

from sdcp_conformance.harness.certify import certify
from sdcp_conformance.judge import Verdict
from sdcp_conformance.mutants.base import Mutant, MutantSession
from sdcp_conformance.mutants.drafter_base import DrafterMutant
from sdcp_conformance.mutants.router_base import RouterMutant
from sdcp_conformance.protocol.control import Action, SpeculationControl
from sdcp_conformance.protocol.messages import Proposal
from sdcp_conformance.protocol.messages import Verdict as VerdictMessage
from sdcp_conformance.reference.drafter.session import DrafterSession, Next
from sdcp_conformance.reference.router.app import RouterParts
from sdcp_conformance.reference.router.registry import InstanceRegistry


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
}


DRAFTER_MUTANTS = {
    "m-cap-above-m-max-obeyed": DrafterMutant("m-cap-above-m-max-obeyed", "proposal",
                                              MCapAboveMMaxObeyed.__doc__ or "", "6.2",
                                              "1 <= M <= min(m_max, m_cap)", session=MCapAboveMMaxObeyed),
}


ROUTER_MUTANTS = {
    "failed-after-two": RouterMutant("failed-after-two", "failover", FailedAfterTwo.__doc__ or "", "P1-RTR-5",
                                     "three times in a row over at least 0.5 s",
                                     parts=RouterParts(registry=FailedAfterTwo), profile_only=True),
    "failed-without-span": RouterMutant("failed-without-span", "failover", FailedWithoutSpan.__doc__ or "",
                                        "P1-RTR-5", "three times in a row over at least 0.5 s",
                                        parts=RouterParts(registry=FailedWithoutSpan), profile_only=True),
}


def _certify(case: str, mutant: str | None, workdir: Path) -> tuple[Verdict, str, list[str]]:
    if case.startswith("RTR-"):
        factory = ROUTER_MUTANTS[mutant].factory if mutant is not None else None
        report = asyncio.run(certify(selectors=[case], seed=1, app_factory=factory, workdir=workdir, role="router"))
    elif case.startswith("DRF-"):
        factory = DRAFTER_MUTANTS[mutant].factory if mutant is not None else None
        report = asyncio.run(certify(selectors=[case], seed=1, app_factory=factory, workdir=workdir, role="drafter"))
    else:
        factory = MUTANTS[mutant].factory if mutant is not None else None
        report = asyncio.run(certify(selectors=[case], seed=1, app_factory=factory, workdir=workdir))
    result = next(result for result in report.results if result.case.id == case)
    return result.verdict, result.message, [finding.row for finding in result.findings]


@pytest.mark.parametrize(("case", "mutant", "verdict", "row"), [
    ("VER-6.5-ESC-013", None, Verdict.PASSED, None),
    ("VER-6.5-ESC-013", "g-kept-on-low", Verdict.FAILED, "R-6.5.2-J-RESET"),
    ("VER-6.5-ESC-003", None, Verdict.PASSED, None),
    # the restore on a low round is the deviation (a SHOULD); the halving that follows it is right
    ("VER-6.5-ESC-003", "restore-after-low-round", Verdict.NON_STRICT, "R-6.5.1-RESTORE"),
    ("VER-6.3-AUTHORIZATION-008", None, Verdict.PASSED, None),
    ("VER-6.3-AUTHORIZATION-008", "epoch-before-authorization", Verdict.FAILED, "R-6.3-AUTHORIZATION"),
    ("DRF-6.2-LIMIT-002", None, Verdict.PASSED, None),
    ("DRF-6.2-LIMIT-002", "m-cap-above-m-max-obeyed", Verdict.FAILED, "R-6.2-M-BOUNDS"),
    ("RTR-P1-RTR-5-INTERMITTENT-001", None, Verdict.PASSED, None),
    ("RTR-P1-RTR-5-INTERMITTENT-001", "failed-after-two", Verdict.NON_STRICT, "P1-RTR-5/FAILED-VERIFIER"),
    ("RTR-P1-RTR-5-QUICK-001", None, Verdict.PASSED, None),
    ("RTR-P1-RTR-5-QUICK-001", "failed-without-span", Verdict.NON_STRICT, "P1-RTR-5/FAILED-VERIFIER"),
])
def test_the_case_catches_the_planted_bug_for_its_own_reason(case: str, mutant: str | None, verdict: Verdict,
                                                           row: str | None, tmp_path: Path) -> None:
    got, message, rows = _certify(case, mutant, tmp_path)
    assert got is verdict, message
    if row is not None:
        assert set(rows) == {row}, f"{case} judged {rows}, expected only {row}: {message}"
