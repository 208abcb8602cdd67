"""Conformance cases as declarations keyed to the draft's sentences (h2spec, tlsfuzzer style).

A case names a stable ID, the section and the sentence it checks, the
requirement level, and an async ``run`` function that converses with the
implementation under test through a :class:`~sdcp_conformance.harness.context.CaseContext`.
The runner, the reports and the coverage table are generated from these
declarations. A case ends in one of the verdicts of :class:`Verdict`; the
evidence (every message exchanged) comes from the context's transcript.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sdcp_conformance.errors import InvalidArgument, SdcpConformanceError

if TYPE_CHECKING:
    from sdcp_conformance.harness.context import CaseContext


class Level(enum.Enum):
    """Requirement level of the sentence a case checks (RFC 2119, plus the profile)."""

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


class Verdict(enum.Enum):
    """Autobahn-style verdicts."""

    PASSED = "PASSED"
    FAILED = "FAILED"
    NON_STRICT = "NON-STRICT"
    """Violates only a profile choice or a SHOULD."""
    INFORMATIONAL = "INFORMATIONAL"
    SKIPPED = "SKIPPED"
    ERROR = "ERROR"
    """The harness itself broke: a bug in this package, never the IUT's fault."""
    XFAIL = "XFAIL"
    """Failed as the vendor's expected-failures file says it would; does not fail the run."""
    XPASS = "XPASS"
    """Listed as an expected failure but passed: the list is stale, and the run fails."""


class CaseOutcome(SdcpConformanceError):
    """Raised inside a case to end it with a verdict other than PASSED."""

    verdict: Verdict = Verdict.FAILED

    def __init__(self, message: str, *, expected: Sequence[str] = (), actual: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.expected = list(expected)
        self.actual = actual


class CaseFailed(CaseOutcome):
    verdict = Verdict.FAILED


class CaseNonStrict(CaseOutcome):
    verdict = Verdict.NON_STRICT


class CaseSkipped(CaseOutcome):
    verdict = Verdict.SKIPPED


class CaseInformational(CaseOutcome):
    verdict = Verdict.INFORMATIONAL


CaseFunction = Callable[["CaseContext"], Awaitable[None]]


@dataclass(frozen=True)
class Case:
    """One conformance case: what it checks and how."""

    id: str
    area: str
    section: str
    quote: str
    level: Level
    run: CaseFunction
    title: str = ""
    requires: tuple[str, ...] = ()
    """Capabilities of the target the case needs, e.g. ``"model:ctx"``; missing ones skip it."""
    timeout_s: float = 60.0
    profile: tuple[str, ...] = ()
    """Profile items (``P1-…``) the case also relies on."""
    black_box_note: str = ""
    """When a sentence cannot be fully judged black-box: why, and what the case checks instead."""

    def describe(self) -> dict[str, Any]:
        return {
            "id": self.id, "area": self.area, "section": self.section, "quote": self.quote,
            "level": self.level.value, "title": self.title, "requires": list(self.requires),
            "profile": list(self.profile), "black_box_note": self.black_box_note,
        }


@dataclass
class Catalogue:
    """The cases of one suite, by ID; IDs are unique and stable forever."""

    cases: dict[str, Case] = field(default_factory=dict)
    sanity_id: str | None = None

    def add(self, case: Case) -> Case:
        if case.id in self.cases:
            raise InvalidArgument(f"duplicate case id {case.id}")
        self.cases[case.id] = case
        return case

    def case(
        self,
        id: str,
        *,
        area: str,
        section: str,
        quote: str,
        level: Level,
        title: str = "",
        requires: Sequence[str] = (),
        timeout_s: float = 60.0,
        profile: Sequence[str] = (),
        black_box_note: str = "",
        sanity: bool = False,
    ) -> Callable[[CaseFunction], CaseFunction]:
        """Decorator declaring a case."""

        def register(run: CaseFunction) -> CaseFunction:
            self.add(Case(id, area, section, quote, level, run, title or (run.__doc__ or "").strip().split("\n")[0],
                          tuple(requires), timeout_s, tuple(profile), black_box_note))
            if sanity:
                self.sanity_id = id
            return run

        return register

    def select(self, selectors: Sequence[str] = ()) -> list[Case]:
        """Cases whose ID or area matches any selector (an ID, an ID prefix, or an area); all if none."""
        if not selectors:
            return list(self.cases.values())
        chosen = [case for case in self.cases.values()
                  if any(case.id == s or case.id.startswith(s) or case.area == s for s in selectors)]
        if not chosen:
            raise InvalidArgument(f"no case matches {list(selectors)}")
        return chosen


__all__ = [
    "Case",
    "CaseFailed",
    "CaseFunction",
    "CaseInformational",
    "CaseNonStrict",
    "CaseOutcome",
    "CaseSkipped",
    "Catalogue",
    "Level",
    "Verdict",
]
