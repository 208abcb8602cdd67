"""Verdicts from evidence: a case's from its findings under a requirement set, a run's from its cases.

One implementation for the two places a verdict is computed: the runner, as a certification runs, and
``bundle verify``, which recomputes every verdict of a signed bundle from the findings it carries (CNCF's
conformance bot recomputes a submission's verdict the same way). Both read plain data — a finding as its JSON
record, a case as its verdict, run and area — so a bundle is judged by exactly the rules its run was.

- A case's verdict is the worst of its *scored* findings (P1-JUDGE-2): under the run's requirement set a finding
  counts at the level the set gives its row (D-JUDGE-SET-1, :mod:`.requirement_sets`); one on a row the set does not
  score counts toward nothing.
- A run's verdict (P1-JUDGE-3): INCOMPLETE when it cannot certify anything (its sanity case did not pass, a
  case was INCOMPLETE, an area it had to cover ran no case, every case was skipped), else FAILED when a case
  FAILED, broke (ERROR) or passed against the expected-failures list (XPASS) — or was NON-STRICT under
  ``--strict`` — else PASSED. A NOT CLAIMED case (D-JUDGE-DECL-1) covers nothing and fails nothing: an area whose every
  case is NOT CLAIMED need not run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sdcp_conformance.judge.levels import Verdict, severity_of, worst
from sdcp_conformance.judge.requirement_sets import RequirementSet

RUN_PASSED = "PASSED"
RUN_FAILED = "FAILED"
RUN_INCOMPLETE = "INCOMPLETE"

FROM_FINDINGS = frozenset({Verdict.PASSED, Verdict.FAILED, Verdict.NON_STRICT, Verdict.INFORMATIONAL})
"""The verdicts a case takes from its findings alone (the others say the case did not judge, or broke)."""


def scored_severity(finding: Mapping[str, Any], requirements: RequirementSet | None) -> Verdict | None:
    """The severity ``finding`` (its JSON record) counts at under ``requirements``; None when it counts toward
    nothing there. Without a set, its own severity."""
    severity = Verdict(finding["severity"])
    if requirements is None:
        return severity
    row = str(finding.get("row", ""))
    if requirements.unscored_reason(row):
        return None
    judged_at = str(finding.get("judged_at", ""))
    if not row or judged_at not in ("level", "type_level"):
        return severity  # an observation: INFORMATIONAL at any level
    held = requirements.rows[row]
    return severity_of(held.type_level if judged_at == "type_level" else held.level)


def case_verdict(findings: Iterable[Mapping[str, Any]], requirements: RequirementSet | None) -> Verdict:
    """The worst of the scored findings' severities (PASSED when none counts)."""
    severities = [scored_severity(finding, requirements) for finding in findings]
    return worst([severity for severity in severities if severity is not None])


@dataclass(frozen=True)
class CaseOutcome:
    """What the run's verdict needs of one case's result."""

    id: str
    run: str
    area: str
    verdict: Verdict
    completed: bool = False
    message: str = ""

    @property
    def ran(self) -> bool:
        """The case judged its subject (a SKIPPED, INCOMPLETE or NOT CLAIMED case did not)."""
        return self.verdict not in (Verdict.SKIPPED, Verdict.INCOMPLETE, Verdict.NOT_CLAIMED)

    @property
    def sanity_passed(self) -> bool:
        """D-JUDGE-SANITY: a sanity case passed when its conversation ran to its end with no deviation from the
        draft — PASSED (or XPASS), or NON-STRICT or INFORMATIONAL after running to its end."""
        if self.verdict in (Verdict.PASSED, Verdict.XPASS):
            return True
        return self.completed and self.verdict in (Verdict.NON_STRICT, Verdict.INFORMATIONAL)

    @property
    def counts_as_failure(self) -> bool:
        return self.verdict in (Verdict.FAILED, Verdict.ERROR, Verdict.XPASS)

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> CaseOutcome:
        return cls(str(record["id"]), str(record.get("run", "main")), str(record.get("area", "")),
                   Verdict(record["verdict"]), bool(record.get("completed", False)), str(record.get("message", "")))


def incomplete_reasons(outcomes: Sequence[CaseOutcome], areas: Sequence[str]) -> list[str]:
    """Why a run of ``outcomes`` that had to cover ``areas`` cannot certify anything (P1-JUDGE-3); empty when it
    can."""
    reasons: list[str] = []
    for outcome in outcomes:
        if outcome.run.startswith("sanity") and not outcome.sanity_passed:
            reasons.append(f"the sanity case {outcome.id} ({outcome.run}) is {outcome.verdict.value}"
                           + (f": {outcome.message.splitlines()[0]}" if outcome.message else ""))
    for outcome in outcomes:
        if outcome.verdict is Verdict.INCOMPLETE and not outcome.run.startswith("sanity"):
            reasons.append(f"{outcome.id} could not judge its subject ({outcome.message})")
    main = [outcome for outcome in outcomes if not outcome.run.startswith("sanity")]
    ran = {outcome.area for outcome in main if outcome.ran}
    unclaimed = {outcome.area for outcome in main if outcome.verdict is Verdict.NOT_CLAIMED} - {
        outcome.area for outcome in main if outcome.verdict is not Verdict.NOT_CLAIMED}
    missing = [area for area in areas if area != "sanity" and area not in ran and area not in unclaimed]
    if missing:
        reasons.append(f"no case ran in the area(s) {', '.join(missing)}")
    if outcomes and not any(outcome.ran for outcome in outcomes):
        reasons.append("every case was skipped")
    return reasons


def run_failed(outcomes: Sequence[CaseOutcome], strict: bool) -> bool:
    """Whether a case failed the run (FAILED, ERROR, XPASS; NON-STRICT too under ``strict``)."""
    return any(outcome.counts_as_failure or (strict and outcome.verdict is Verdict.NON_STRICT)
               for outcome in outcomes)


def run_status(outcomes: Sequence[CaseOutcome], areas: Sequence[str], strict: bool) -> str:
    """PASSED, FAILED or INCOMPLETE (P1-JUDGE-3: an incomplete run certifies nothing, whatever it found)."""
    if incomplete_reasons(outcomes, areas):
        return RUN_INCOMPLETE
    return RUN_FAILED if run_failed(outcomes, strict) else RUN_PASSED


__all__ = ["FROM_FINDINGS", "RUN_FAILED", "RUN_INCOMPLETE", "RUN_PASSED", "CaseOutcome", "case_verdict",
           "incomplete_reasons", "run_failed", "run_status", "scored_severity"]
