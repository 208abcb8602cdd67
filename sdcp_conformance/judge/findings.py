"""The judge: an observation plus a requirement row gives a finding (P1-JUDGE-1..3).

Suites, the stateful fuzzer and the message fuzzer all call these two
functions; none of them decides strictness itself. A finding records the
row, the severity the row's level gives, what was expected and what was
seen, so the report can say why and on which sentence.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from sdcp_conformance.judge.levels import Verdict, severity_of
from sdcp_conformance.judge.rows import Row
from sdcp_conformance.protocol.problems import ProblemType


class Answered(Protocol):
    """What the judge needs of an answer (the harness's :class:`~sdcp_conformance.harness.iut.Answer`)."""

    @property
    def status(self) -> int | None: ...

    @property
    def problem_type(self) -> ProblemType | None: ...

    def describe(self) -> str: ...


@dataclass(frozen=True)
class Finding:
    """One deviation from one row (or an observation, at INFORMATIONAL)."""

    row: str
    severity: Verdict
    message: str
    expected: tuple[str, ...] = ()
    actual: str = ""
    source: str = ""
    """The row's section or profile item, for the reader."""
    evidence: tuple[int, ...] = field(default=(), compare=False)
    """Transcript sequence numbers of the exchanges that show it."""
    judged_at: str = ""
    """Which level of its row gave the severity: ``level`` (the row's), ``type_level`` (a refusal's status or
    type, :class:`~.rows.Refusal`), or "" for an observation (INFORMATIONAL whatever the row's level). A
    requirement set re-levels a finding through it (:mod:`.scoring`)."""
    unscored: str = ""
    """Why this finding counts toward no verdict under the run's requirement set ("" when it counts)."""

    def to_json(self) -> dict[str, Any]:
        return {"row": self.row, "source": self.source, "severity": self.severity.value, "message": self.message,
                "expected": list(self.expected), "actual": self.actual, "evidence": list(self.evidence),
                "judged_at": self.judged_at, **({"unscored": self.unscored} if self.unscored else {})}


def deviation(row: Row, message: str, *, expected: Sequence[str] = (), actual: str = "",
              type_level: bool = False) -> Finding:
    """A finding against ``row`` at the severity its level gives (its type level, for the status or type of a
    refusal: ``type_level``)."""
    level = row.type_level if type_level else row.level
    return Finding(row.id, severity_of(level), message, tuple(expected), actual, row.source,
                   judged_at="type_level" if type_level else "level")


def judge_condition(held: bool, row: Row, message: str, *, expected: str = "", actual: str = "") -> Finding | None:
    """``held`` is whether the IUT did what ``row`` says; a finding when it did not."""
    if held:
        return None
    return deviation(row, message, expected=[expected] if expected else [], actual=actual)


def judge_refusal(answer: Answered, rows: Sequence[Row], what: str) -> Finding | None:
    """The request had to be refused as one of ``rows`` says (any of them: the draft may order none first).

    P1-JUDGE-1: a draft-named status and type are exact. A 2xx, a 5xx or no
    answer at all (a timeout is never a refusal, P1-JUDGE-3) is judged at the
    row's level; a refusal with another status or problem type at the level
    that names the type. With several rows the answer passes if it matches
    one, and a deviation takes the strictest of them.
    """
    refusing = [row for row in rows if row.refusal is not None]
    if not refusing:
        raise ValueError(f"judge_refusal: none of {[row.id for row in rows]} describes a refusal")
    if any(row.refusal.accepts(answer.status, answer.problem_type) for row in refusing if row.refusal):
        return None
    expected = [row.refusal.describe() for row in refusing if row.refusal]
    status = answer.status
    refused_otherwise = status is not None and 400 <= status < 500
    if refused_otherwise:
        kind = "refused, but not as the texts name it"
        ranked = sorted(refusing, key=lambda row: row.type_level.rank, reverse=True)
        row, at_type = ranked[0], True
    else:
        kind = "accepted" if status is not None and 200 <= status < 300 else "not refused"
        ranked = sorted(refusing, key=lambda row: row.level.rank, reverse=True)
        row, at_type = ranked[0], False
    message = f"{what}: expected {' or '.join(expected)}, got {answer.describe()} ({kind})"
    return deviation(row, message, expected=expected, actual=answer.describe(), type_level=at_type)


__all__ = ["Answered", "Finding", "deviation", "judge_condition", "judge_refusal"]
