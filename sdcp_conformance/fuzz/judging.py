"""The fuzzers' side of the one judge: findings against the requirement table, failures raised, deviations kept.

The stateful and the message fuzzer judge every answer with
:func:`~sdcp_conformance.judge.judge_refusal` and
:func:`~sdcp_conformance.judge.judge_condition`, exactly as the suites do: a
FAILED finding ends the example (and is shrunk); a NON-STRICT or
INFORMATIONAL one is kept, counted per row and reported, and fails the
campaign only under ``--strict`` (P1-JUDGE-1..2).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sdcp_conformance.fuzz.steps import Violation
from sdcp_conformance.harness.case import Case
from sdcp_conformance.judge import (
    TABLE,
    Answered,
    Finding,
    Level,
    Verdict,
    deviation,
    judge_condition,
    judge_refusal,
)


@dataclass
class FuzzJudge:
    """Raises :class:`Violation` for FAILED findings and keeps the others."""

    deviations: list[Finding] = field(default_factory=list)
    strict: bool = False
    """NON-STRICT findings fail the example too (``fuzz --strict``)."""

    def take(self, finding: Finding | None) -> None:
        if finding is None:
            return
        if finding.severity is Verdict.FAILED or (self.strict and finding.severity is Verdict.NON_STRICT):
            raise Violation(finding.message, row=finding.row, level=finding.severity.value)
        self.deviations.append(finding)

    def refusal(self, answer: Answered, rows: Iterable[str], what: str) -> bool:
        """The answer had to be a refusal as one of ``rows`` says; whether it was exactly that."""
        finding = judge_refusal(answer, [TABLE[row] for row in rows], what)
        self.take(finding)
        return finding is None

    def condition(self, held: bool, row: str, message: str, *, expected: str = "", actual: str = "") -> bool:
        self.take(judge_condition(held, TABLE[row], message, expected=expected, actual=actual))
        return held

    def fail(self, row: str, message: str) -> None:
        """A deviation from ``row`` (at the row's severity)."""
        self.take(deviation(TABLE[row], message))

    def summary(self) -> dict[str, int]:
        """Deviations per row."""
        counts: dict[str, int] = {}
        for finding in self.deviations:
            counts[finding.row] = counts.get(finding.row, 0) + 1
        return dict(sorted(counts.items()))


async def _not_a_case(ctx: Any) -> None:
    raise NotImplementedError("a fuzzer's case is a judging scope, never run")


def judging_scope(case_id: str, section: str, quote: str, level: Level, *, title: str, role: str) -> Case:
    """The judging scope of a ``role`` fuzzer's example: a case, never run, over every row that role can be judged
    on (its own and the ``any`` rows, ambient ones left out)."""
    return Case(case_id, "fuzz", section, quote, level, _not_a_case, title=title, role=role,
                rows=tuple(row.id for row in TABLE if row.binds in (role, "any") and not row.ambient))


__all__ = ["FuzzJudge", "judging_scope"]
