"""A statistical case's rule-2 test, fed its rounds in order: the part of the case that may run in another process.

The harness drafts, sends and reads verdicts; what the sequential test needs of each round is small (a
:class:`~sdcp_conformance.oracle.rule2_designs.RoundSpec`, the emitted tokens, whether the round counts), and
the test itself — the exact law, the alternatives, the e-process — is most of the harness's work per round
(issue 16). :class:`Rule2Judge` does that work for one case; the functions at the bottom are what a worker
process serves for many cases at once (:mod:`sdcp_conformance.harness.rule2_judging`). Nothing here does I/O.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sdcp_conformance.oracle.rule2_designs import RoundSpec
from sdcp_conformance.oracle.rule2_trace import TracedEProcess
from sdcp_conformance.oracle.statistics import laws_with_alternatives


@dataclass(frozen=True)
class JudgedRound:
    """One round as the test sees it."""

    spec: RoundSpec
    emitted: tuple[int, ...]
    counted: bool
    """False when a row is fragile: the round was sent, the test ignores it."""
    what: str
    """How the round is named in the test's evidence (a decisive event quotes it)."""


class Rule2Judge:
    """One case's e-process, fed rounds in the order the case decided (never in the order verdicts arrived).

    Once the test rejects, later rounds are not fed: the decision and the count of rounds it took depend on the
    outcomes only, however many rounds were still in flight.
    """

    def __init__(self, alpha: float, seed: float) -> None:
        self.test = TracedEProcess(alpha, random.Random(seed))
        self.judged = 0
        """Rounds fed before the test rejected (counted or not)."""

    def feed(self, rounds: Sequence[JudgedRound]) -> bool:
        """Judge ``rounds`` in order; returns whether the test has rejected.

        The laws of the rounds' counted part, and their alternatives, are computed together (numpy's cost per
        call is most of a round's): bit for bit what each round gives alone, so a batch's size, which depends on
        timing, never changes a decision. Rounds after a rejection are computed and not fed.
        """
        counted = [judged for judged in rounds if judged.counted] if not self.test.rejected else []
        family_laws = iter(laws_with_alternatives([judged.spec.law_arguments() for judged in counted]))
        for judged in rounds:
            if self.test.rejected:
                break
            self.judged += 1
            if judged.counted:
                law, alternatives = next(family_laws)
                self.test.update(law, law.cell_of(judged.emitted), judged.what, alternatives)
        return self.test.rejected

    def result(self) -> TracedEProcess:
        """The test as it ends, without what it kept only to bet with (the memory of earlier laws)."""
        self.test.forget_outcomes()
        return self.test


# ---------------------------------------------------------------------- what a worker process serves

Judges = dict[str, Rule2Judge]


def open_judge(judges: Judges, key: str, alpha: float, seed: float) -> None:
    judges[key] = Rule2Judge(alpha, seed)


def feed_judge(judges: Judges, key: str, rounds: Sequence[JudgedRound]) -> bool:
    return judges[key].feed(rounds)


def close_judge(judges: Judges, key: str) -> tuple[TracedEProcess, int]:
    """The finished test and how many rounds it judged; the judge is forgotten."""
    judge = judges.pop(key)
    return judge.result(), judge.judged


CALLS: dict[str, Callable[..., Any]] = {"open": open_judge, "feed": feed_judge, "close": close_judge}
"""The calls a judge host accepts, by name."""


__all__ = ["CALLS", "JudgedRound", "Judges", "Rule2Judge", "close_judge", "feed_judge", "open_judge"]
