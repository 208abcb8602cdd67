"""The speculation limit judged once per cause (P1-JUDGE-4) and where its readings differ (§6.2, P1-CTL-1).

Each bug is planted in the reference verifier (the catalogue's mutants, or a small session subclass here); the
expected findings are written out from the draft and the profile, not read from the cases.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from sdcp_conformance.harness.certify import certify
from sdcp_conformance.harness.runner import CaseResult
from sdcp_conformance.judge import Verdict
from sdcp_conformance.mutants import get_mutant
from sdcp_conformance.mutants.base import MutantSession
from sdcp_conformance.mutants.base import VerifierMutant as Mutant
from sdcp_conformance.protocol.control import SpeculationControl
from sdcp_conformance.protocol.errors import ProtocolError
from sdcp_conformance.protocol.messages import Assignment, Proposal, SessionState
from sdcp_conformance.protocol.problems import ProblemType

NON_STRICT, FAILED = Verdict.NON_STRICT, Verdict.FAILED


class ClampsMInitZero(MutantSession):
    """Bug: m_init 0 is accepted and taken as 1 (the router's max(1, …)), not refused."""

    def assign(self, assignment: Assignment) -> SessionState:
        return super().assign(assignment.replace(m_init=max(1, assignment.m_init)))


class MInitZeroThenBadMessage(MutantSession):
    """Bug: m_init 0 is accepted, and the proposals over the limit 0 it set get 400 sdcp-bad-message."""

    def assign(self, assignment: Assignment) -> SessionState:
        state = super().assign(assignment.replace(m_init=max(1, assignment.m_init)))
        if assignment.m_init == 0:
            self.control.m_cap = self.control.m_ceiling = 0
        return state

    def _check_limits(self, proposal: Proposal) -> None:
        if self.control.limit() == 0:
            raise ProtocolError(ProblemType.BAD_MESSAGE, "the limit is 0")
        super()._check_limits(proposal)


class _KeepsVerdictCap(SpeculationControl):
    def on_assignment(self, m_init: int) -> None:
        kept = self.m_cap
        super().on_assignment(m_init)
        if kept is not None:  # the bug: a later assignment leaves the m_cap of the verdicts in force
            self.m_cap = kept


class KeepsVerdictCap(MutantSession):
    """Bug: after a verdict, a new assignment's m_init does not set the limit; the last verdict's m_cap stays."""

    control_class = _KeepsVerdictCap


LOCAL = {cls.__name__: Mutant(cls.__name__, "limits", cls.__doc__ or "", "P1-CTL-1", "-", session=cls)
         for cls in (ClampsMInitZero, MInitZeroThenBadMessage, KeepsVerdictCap)}


def _run(case: str, mutant: str | None, workdir: Path, seed: int = 1) -> CaseResult:
    chosen = None if mutant is None else LOCAL.get(mutant) or get_mutant(mutant)
    report = asyncio.run(certify(selectors=[case], seed=seed, app_factory=chosen.factory if chosen else None,
                                 workdir=workdir))
    return next(result for result in report.results if result.case.id == case)


def _findings(result: CaseResult) -> list[tuple[str, Verdict]]:
    return [(finding.row, finding.severity) for finding in result.findings]


@pytest.mark.parametrize("case", ["VER-6.1-LIMITS-006", "VER-6.5.1-LIMITS-008", "VER-6.5.1-LIMITS-009",
                                  "VER-6.2-LIMITS-010"])
def test_the_reference_passes_without_findings(case: str, tmp_path: Path) -> None:
    result = _run(case, None, tmp_path)
    assert result.verdict is Verdict.PASSED and not result.findings, result.message


@pytest.mark.parametrize("mutant", ["accept-m-init-zero", "ClampsMInitZero"])
def test_an_accepted_m_init_zero_is_one_finding(mutant: str, tmp_path: Path) -> None:
    """Whether the IUT then refuses M = 1 with sdcp-limit (its limit 0) or verifies it (m_init taken as 1), the
    accepted assignment is the one deviation, from P1-DRF-2, and no finding calls it refused."""
    result = _run("VER-6.1-LIMITS-006", mutant, tmp_path)
    assert _findings(result) == [("P1-DRF-2/M-INIT-ZERO", NON_STRICT)], result.message
    assert result.verdict is NON_STRICT
    assert "refused" not in result.findings[0].message and "200 (accepted)" in result.findings[0].message


def test_a_wrong_refusal_after_an_accepted_m_init_zero_is_still_judged(tmp_path: Path) -> None:
    """Consistency excuses 422 sdcp-limit only: a 400 for the proposal over the accepted limit is Table 2's."""
    result = _run("VER-6.1-LIMITS-006", "MInitZeroThenBadMessage", tmp_path)
    assert _findings(result) == [("P1-DRF-2/M-INIT-ZERO", NON_STRICT), ("R-6.2-LIMIT", FAILED)], result.message


@pytest.mark.parametrize("case", ["VER-6.5.1-LIMITS-008", "VER-6.5.1-LIMITS-009"])
@pytest.mark.parametrize("seed", [1, 2])
def test_a_limit_that_stays_at_m_init_after_a_reduce_fails(case: str, seed: int, tmp_path: Path) -> None:
    """m_init 6, reduced to 3 (and restored to 4): M = 4 (M = 5) is within m_init but over the verdict's m_cap."""
    result = _run(case, "limit-keeps-m-init", tmp_path, seed)
    assert _findings(result) == [("R-6.2-LIMIT", FAILED)], result.message
    over = 4 if case.endswith("008") else 5
    assert f"M = {over} over the limit {over - 1}" in result.findings[0].message


def test_a_limit_that_stays_at_m_init_is_right_after_a_new_assignment(tmp_path: Path) -> None:
    assert _run("VER-6.2-LIMITS-010", "limit-keeps-m-init", tmp_path).verdict is Verdict.PASSED


def test_a_new_assignment_above_the_last_m_cap_sets_the_limit(tmp_path: Path) -> None:
    """Reduced to 3, then assigned m_init 5: M = 5 refused with sdcp-limit is P1-CTL-1's deviation alone (the last
    verdict's m_cap would refuse it too, so the draft does not decide)."""
    result = _run("VER-6.2-LIMITS-010", "KeepsVerdictCap", tmp_path)
    assert _findings(result) == [("P1-CTL-1/LATEST-ASSIGNMENT", NON_STRICT)], result.message
    assert "M = 5" in result.findings[0].message and "422 sdcp-limit" in result.findings[0].message
