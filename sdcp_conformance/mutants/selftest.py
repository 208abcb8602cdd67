"""The suite's own test: the clean reference passes every case, and every mutant fails at least one.

:func:`run_selftest` certifies the embedded reference verifier and then each
mutant (as the embedded IUT, through ``certify(app_factory=...)``), and
returns the kill matrix: for each mutant, the case IDs whose verdict counts as
detecting it. The killers files (:mod:`.catalogue`) store that matrix so CI
can re-run each mutant against its known killers only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from sdcp_conformance.harness.case import Verdict
from sdcp_conformance.harness.certify import certify, default_catalogue
from sdcp_conformance.harness.runner import CaseResult, Progress, RunReport
from sdcp_conformance.mutants.base import Mutant
from sdcp_conformance.mutants.catalogue import killers_path, load_killers

REFERENCE_OK = frozenset({Verdict.PASSED, Verdict.SKIPPED, Verdict.INFORMATIONAL})
"""What the clean reference may score: it implements the profile to the letter, so not even NON-STRICT."""


@dataclass
class MutantOutcome:
    """One mutant's certification and the cases that detected it."""

    mutant: Mutant
    killers: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    harness_errors: list[str] = field(default_factory=list)
    """Cases that ended in ERROR against this mutant (a harness bug, never a kill)."""
    crashed: str = ""
    """Why the certification itself could not run, if it could not."""
    messages: dict[str, str] = field(default_factory=dict)
    """Killing case ID → its verdict and the first line of its message (what the selftest prints per mutant)."""

    @property
    def survived(self) -> bool:
        return not self.killers


@dataclass
class SelftestReport:
    reference: RunReport | None
    mutants: list[MutantOutcome]
    seed: int

    def reference_problems(self) -> list[CaseResult]:
        if self.reference is None:
            return []
        return [result for result in self.reference.results if result.verdict not in REFERENCE_OK]

    def survivors(self) -> list[MutantOutcome]:
        return [outcome for outcome in self.mutants if outcome.survived]

    @property
    def ok(self) -> bool:
        return not self.reference_problems() and not self.survivors()

    def matrix(self) -> dict[str, list[str]]:
        return {outcome.mutant.name: outcome.killers for outcome in self.mutants}


def killers_in(mutant: Mutant, report: RunReport) -> list[str]:
    """Case IDs (each once, sorted) whose verdict counts as detecting ``mutant``."""
    return sorted({result.case.id for result in report.results if result.verdict in mutant.kill_verdicts})


async def certify_mutant(mutant: Mutant, *, selectors: Sequence[str] = (), seed: int = 1,
                         progress: Progress | None = None, role: str = "verifier") -> MutantOutcome:
    """Run the selected cases against ``mutant`` as the embedded IUT."""
    outcome = MutantOutcome(mutant)
    try:
        report = await certify(selectors=selectors, seed=seed, app_factory=mutant.factory, progress=progress,
                               role=role)
    except Exception as exc:  # a mutant that cannot even start is not a kill: the harness must judge it
        outcome.crashed = f"{type(exc).__name__}: {exc}"
        return outcome
    outcome.killers = killers_in(mutant, report)
    outcome.messages = {result.case.id: f"{result.verdict.value}: {(result.message or '').splitlines()[0]}"
                        if result.message else result.verdict.value
                        for result in report.results if result.case.id in outcome.killers}
    outcome.counts = report.counts()
    outcome.harness_errors = sorted({r.case.id for r in report.results if r.verdict is Verdict.ERROR})
    return outcome


ProgressFactory = Callable[[str, int], Progress]
"""``factory(label, cases)`` → a per-run progress callback (the CLI's rich bars)."""


async def run_selftest(mutants: Iterable[Mutant], *, selectors: Sequence[str] = (), seed: int = 1,
                       jobs: int = 1, with_reference: bool = True,
                       progress: ProgressFactory | None = None, role: str = "verifier") -> SelftestReport:
    """Certify the reference of ``role`` (unless told not to) and every mutant, ``jobs`` at a time."""
    def callback(label: str) -> Progress | None:
        return None if progress is None else progress(label, case_runs(selectors, role))

    reference = None
    if with_reference:
        reference = await certify(selectors=selectors, seed=seed, progress=callback("reference"), role=role)
    gate = asyncio.Semaphore(max(1, jobs))

    async def one(mutant: Mutant) -> MutantOutcome:
        async with gate:
            return await certify_mutant(mutant, selectors=selectors, seed=seed, progress=callback(mutant.name),
                                        role=role)

    outcomes = await asyncio.gather(*(one(mutant) for mutant in mutants))
    return SelftestReport(reference, list(outcomes), seed)


@dataclass
class SeedMatrix:
    """Each mutant against its recorded killers under several seeds: which seeds it survived."""

    seeds: list[int]
    survived: dict[str, list[int]] = field(default_factory=dict)
    """Mutant name → the seeds under which no recorded killer killed it."""
    unrecorded: list[str] = field(default_factory=list)
    """Mutants without recorded killers (they survived the last full selftest)."""

    @property
    def ok(self) -> bool:
        return not self.unrecorded and not any(self.survived.values())


async def killers_under_seeds(mutants: Iterable[Mutant], seeds: Sequence[int], *, role: str = "verifier",
                              killers: Mapping[str, list[str]] | None = None, jobs: int = 1,
                              progress: Callable[[str, int, bool], None] | None = None) -> SeedMatrix:
    """Certify each mutant with only its recorded killing cases, once per seed (a kill must not depend on it)."""
    recorded = killers if killers is not None else load_killers(killers_path(role))
    matrix = SeedMatrix(list(seeds))
    gate = asyncio.Semaphore(max(1, jobs))

    async def one(mutant: Mutant, seed: int) -> None:
        cases = recorded.get(mutant.name)
        if not cases:
            return
        async with gate:
            outcome = await certify_mutant(mutant, selectors=cases, seed=seed, role=role)
        if outcome.survived:
            matrix.survived.setdefault(mutant.name, []).append(seed)
        if progress is not None:
            progress(mutant.name, seed, not outcome.survived)

    chosen = list(mutants)
    matrix.unrecorded = [mutant.name for mutant in chosen if not recorded.get(mutant.name)]
    await asyncio.gather(*(one(mutant, seed) for mutant in chosen for seed in seeds))
    for name in matrix.survived:
        matrix.survived[name].sort()
    return matrix


def case_runs(selectors: Sequence[str] = (), role: str = "verifier") -> int:
    """How many case runs one certification makes (the sanity case runs first and last)."""
    catalogue = default_catalogue(role)
    selected = [case.id for case in catalogue.select(selectors)]
    if catalogue.sanity_id is None:
        return len(selected)
    return len([case for case in selected if case != catalogue.sanity_id]) + 2


__all__ = [
    "REFERENCE_OK",
    "MutantOutcome",
    "ProgressFactory",
    "SeedMatrix",
    "SelftestReport",
    "case_runs",
    "certify_mutant",
    "killers_in",
    "killers_under_seeds",
    "run_selftest",
]
