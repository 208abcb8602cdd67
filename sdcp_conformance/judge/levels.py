"""Requirement levels (RFC 2119 plus the profile) and the verdicts they turn into (P1-JUDGE-1..2).

The judge, the cases and the reports share these two enums; a finding's
severity follows from the level of the requirement row it is judged against
(:func:`severity_of`), never from the case that happened to observe it.
"""

from __future__ import annotations

import enum


class Level(enum.Enum):
    """Requirement level of a sentence (RFC 2119), or ``PROFILE`` where only the interop profile decides."""

    MUST = "MUST"
    MUST_NOT = "MUST NOT"
    REQUIRED = "REQUIRED"
    SHOULD = "SHOULD"
    RECOMMENDED = "RECOMMENDED"
    MAY = "MAY"
    PROFILE = "PROFILE"
    """Only the interop profile decides: a deviation is NON-STRICT, never FAILED."""

    @property
    def strict(self) -> bool:
        return self in (Level.MUST, Level.MUST_NOT, Level.REQUIRED)

    @property
    def rank(self) -> int:
        """Strict levels above SHOULD/PROFILE above RECOMMENDED/MAY (for "the strongest row of a case")."""
        if self.strict:
            return 2
        return 1 if self in (Level.SHOULD, Level.PROFILE) else 0


class Verdict(enum.Enum):
    """Autobahn-style verdicts of a case (and, for findings, their severity)."""

    PASSED = "PASSED"
    FAILED = "FAILED"
    NON_STRICT = "NON-STRICT"
    """Violates only a profile choice or a SHOULD."""
    INFORMATIONAL = "INFORMATIONAL"
    """An observation on a MAY or RECOMMENDED behaviour; never fails a run."""
    SKIPPED = "SKIPPED"
    NOT_CLAIMED = "NOT CLAIMED"
    """D-JUDGE-DECL-1: the case exercises a feature the vendor's declaration does not claim; it did not run, and counts
    neither for nor against the run."""
    INCOMPLETE = "INCOMPLETE"
    """P1-JUDGE-4: a control step failed for a cause outside the case's subject (named in its message), so the
    case could judge nothing about its subject: neither a pass nor a finding about it."""
    ERROR = "ERROR"
    """The harness itself broke: a bug in this package, never the IUT's fault."""
    XFAIL = "XFAIL"
    """Failed as the vendor's expected-failures file says it would; does not fail the run."""
    XPASS = "XPASS"
    """Listed as an expected failure but passed: the list is stale, and the run fails."""


SEVERITY_ORDER = (Verdict.FAILED, Verdict.NON_STRICT, Verdict.INFORMATIONAL, Verdict.PASSED)
"""P1-JUDGE-2: "A case's verdict is the worst of its findings (FAILED > NON-STRICT > INFORMATIONAL > PASSED)"."""


def severity_of(level: Level) -> Verdict:
    """What a deviation from a sentence of ``level`` is (P1-JUDGE-1): FAILED, NON-STRICT or INFORMATIONAL."""
    if level.strict:
        return Verdict.FAILED
    if level in (Level.SHOULD, Level.PROFILE):
        return Verdict.NON_STRICT
    return Verdict.INFORMATIONAL


def worst(verdicts: list[Verdict] | tuple[Verdict, ...]) -> Verdict:
    """The worst of finding severities; PASSED when there are none."""
    for verdict in SEVERITY_ORDER:
        if verdict in verdicts:
            return verdict
    return Verdict.PASSED


__all__ = ["SEVERITY_ORDER", "Level", "Verdict", "severity_of", "worst"]
