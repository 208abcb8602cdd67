"""The terms a certification runs under: the requirement set it is scored against, the declaration it follows.

The runner asks these before a case runs (is it claimed?) and after (does it count, and at what level?):

- a case exercising a feature the declaration does not claim is NOT CLAIMED and does not run (D-JUDGE-DECL-1);
- a case of a claimed feature that was SKIPPED is INCOMPLETE: the claim was not reachable (D-JUDGE-DECL-1);
- a case that used an optional feature its suite's table does not give it is ERROR, a harness bug: the test plan
  would otherwise have run it against an implementation that claims no such thing;
- every finding on a row the requirement set does not score is kept, marked unscored with the reason, and the
  case's verdict is the worst of the rest at the levels the set gives (D-JUDGE-SET-1, :mod:`~sdcp_conformance.judge.
  scoring`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

from sdcp_conformance.judge.declaration import FEATURES, Declaration
from sdcp_conformance.judge.levels import Verdict
from sdcp_conformance.judge.requirement_sets import RequirementSet
from sdcp_conformance.judge.scoring import FROM_FINDINGS, case_verdict, scored_severity

if TYPE_CHECKING:
    from sdcp_conformance.harness.case import Case
    from sdcp_conformance.judge.findings import Finding


class CaseResult(Protocol):
    """What the terms change of a case's result (:class:`~.runner.CaseResult` has it)."""

    case: Case
    verdict: Verdict
    message: str
    expected: list[str]
    actual: str
    notes: list[str]
    findings: list[Finding]
    features_used: set[str]


@dataclass(frozen=True)
class Terms:
    requirements: RequirementSet | None = None
    declaration: Declaration | None = None

    def unclaimed(self, case: Case) -> str:
        """Why ``case`` is NOT CLAIMED ("" when it runs)."""
        if self.declaration is None:
            return ""
        missing = self.declaration.unclaimed(case.features)
        if not missing:
            return ""
        meanings = FEATURES.get(case.role, {})
        return "not claimed: the declaration does not claim " + "; ".join(
            f"{feature} ({meanings.get(feature, 'unknown feature')})" for feature in missing)

    def apply(self, result: CaseResult) -> None:
        """What the terms make of a case's result once it ran (in place)."""
        self._hold_to_features(result)
        self._claimed_but_skipped(result)
        if self.requirements is not None:
            rescore(result, self.requirements)

    def _hold_to_features(self, result: CaseResult) -> None:
        """A case that used a feature its suite's table does not give it is a harness bug (ERROR) where that hid
        something: a declaration not claiming the feature had it run anyway, or it passed (so the table is wrong
        and nothing else shows it). A case that failed on its own keeps its finding, with a note: an ERROR there
        would hide a deviation (a FAIL must mean a deviation)."""
        case = result.case
        used = result.features_used & set(FEATURES.get(case.role, {}))
        undeclared = sorted(used - set(case.features))
        if not undeclared or result.verdict is Verdict.ERROR:
            return
        what = (f"case {case.id} sent messages using optional feature(s) {', '.join(undeclared)} that "
                f"suites/{case.role}/features.py does not give it")
        unclaimed = self.declaration is not None and bool(self.declaration.unclaimed(tuple(undeclared)))
        if unclaimed or result.verdict is Verdict.PASSED:
            why = ("the declaration does not claim them, yet the case ran" if unclaimed
                   else "a declaration not claiming them would still have run it")
            result.verdict, result.message = Verdict.ERROR, f"harness bug: {what}: {why}"
        else:
            result.notes.append(f"harness bug: {what} (the table must be corrected)")

    def _claimed_but_skipped(self, result: CaseResult) -> None:
        if self.declaration is None or result.verdict is not Verdict.SKIPPED:
            return
        claimed = [feature for feature in result.case.features if feature in self.declaration.claims]
        if claimed:
            result.verdict = Verdict.INCOMPLETE
            result.message = (f"incomplete: the declaration claims {', '.join(claimed)}, but the case could not run: "
                              f"{result.message}")


def headline(result: CaseResult, counted: list[tuple[Finding, Verdict]]) -> None:
    """The message, expected and actual of a case: its first finding counted at its verdict's severity, and how many
    other findings count (nothing when none counts at it)."""
    first = next((finding for finding, severity in counted if severity is result.verdict), None)
    if first is None:
        result.message, result.expected, result.actual = "", [], ""
        return
    result.message, result.expected, result.actual = first.message, list(first.expected), first.actual
    if len(counted) > 1:
        result.message += f" (and {len(counted) - 1} more finding{'s' if len(counted) > 2 else ''})"


def rescore(result: CaseResult, requirements: RequirementSet) -> None:
    """Mark the findings ``requirements`` does not score, and give a case that took its verdict from its findings
    the worst of the scored ones, with its headline."""
    result.findings = [replace(finding, unscored=requirements.unscored_reason(finding.row))
                       for finding in result.findings]
    if result.verdict not in FROM_FINDINGS:
        return
    counted = [(finding, scored_severity(finding.to_json(), requirements)) for finding in result.findings]
    scored = [(finding, severity) for finding, severity in counted if severity is not None]
    verdict = case_verdict([finding.to_json() for finding in result.findings], requirements)
    unscored = len(counted) - len(scored)
    if verdict is result.verdict and not unscored:
        return
    result.verdict = verdict
    headline(result, scored)
    if unscored:
        result.notes.append(f"{unscored} finding(s) not scored under {requirements.name}: on rows the set does not "
                            "score (each finding says why)")


__all__ = ["CaseResult", "Terms", "headline", "rescore"]
