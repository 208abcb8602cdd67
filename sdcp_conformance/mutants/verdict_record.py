"""Per-case verdicts recorded at a fixed seed, so a refactor can show it changed none.

For each role: the embedded reference over the whole catalogue, and every mutant of the role's catalogue over its
recorded killing cases (``killers-ROLE.json``; the sanity case runs with them). ``tools/record_verdicts.py`` writes
the recording (the same runs several times: a mutant whose bug shows only with some timings is recorded with every
verdict it got, :data:`VARIES`); a test certifies again and compares, case by case. A verdict here is what the
run reports (the second run's, for a case run again after a missed deadline, P1-JUDGE-5).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from sdcp_conformance.harness.certify import certify
from sdcp_conformance.harness.runner import RunReport
from sdcp_conformance.mutants.base import Mutant
from sdcp_conformance.mutants.catalogue import killers_path, load_killers, mutants_for

RECORD_SEED = 1
REFERENCE = "reference"
"""The recording's entry for the clean reference (no mutant has this name)."""

Verdicts = dict[str, dict[str, str]]
"""Run (``reference`` or a mutant's name) → case ID → verdict."""


def verdicts_of(report: RunReport) -> dict[str, str]:
    """Case ID → verdict; a case that runs twice (the sanity case, first and last) is ``ID`` and ``ID#2``, so
    neither run hides the other."""
    found: dict[str, str] = {}
    for result in report.results:
        key = result.case.id if result.case.id not in found else f"{result.case.id}#2"
        found[key] = result.verdict.value
    return dict(sorted(found.items()))


async def record_role(role: str, *, mutants: Iterable[Mutant] | None = None, seed: int = RECORD_SEED,
                      jobs: int = 4, with_reference: bool = True) -> Verdicts:
    """The verdicts of ``role``'s reference (every case) and of each mutant (its recorded killers), at ``seed``."""
    killers = load_killers(killers_path(role))
    chosen = list(mutants if mutants is not None else mutants_for(role))
    gate = asyncio.Semaphore(max(1, jobs))

    async def one(name: str, factory: Callable[..., Any] | None, selectors: list[str]) -> tuple[str, dict[str, str]]:
        async with gate:
            report = await certify(selectors=selectors, seed=seed, app_factory=factory, role=role)
            return name, verdicts_of(report)

    runs = [one(REFERENCE, None, [])] if with_reference else []
    runs += [one(mutant.name, mutant.factory, killers[mutant.name]) for mutant in chosen if killers.get(mutant.name)]
    return dict(sorted(await asyncio.gather(*runs)))


VARIES = "|"
"""Joins the verdicts a case was recorded with when they differed between recordings of the same seed (a mutant
whose bug shows only with some timings: ``FAILED|PASSED``); any of them is then the recorded verdict."""


def merged(recordings: Sequence[Verdicts]) -> Verdicts:
    """One recording from several of the same runs: a case's verdict, or the verdicts it had joined by ``|``."""
    runs: dict[str, dict[str, set[str]]] = {}
    for recording in recordings:
        for run, cases in recording.items():
            for case, verdict in cases.items():
                runs.setdefault(run, {}).setdefault(case, set()).update(verdict.split(VARIES))
    return {run: {case: VARIES.join(sorted(seen)) for case, seen in sorted(cases.items())}
            for run, cases in sorted(runs.items())}


def differences(recorded: Mapping[str, Mapping[str, str]], now: Mapping[str, Mapping[str, str]]) -> list[str]:
    """One line per case whose verdict is not the recorded one (nor one of the recorded ones, where they varied),
    or that one side lacks, for the runs ``now`` holds."""
    lines = []
    for run, cases in sorted(now.items()):
        before = recorded.get(run)
        if before is None:
            lines.append(f"{run}: not in the recording")
            continue
        for case in sorted(set(before) | set(cases)):
            was, verdict = before.get(case), cases.get(case)
            if was is None or verdict is None or verdict not in was.split(VARIES):
                lines.append(f"{run} {case}: recorded {was or 'absent'}, now {verdict or 'absent'}")
    return lines


def load_record(path: Path) -> dict[str, Verdicts]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return {role: {run: dict(cases) for run, cases in runs.items()} for role, runs in data.items()}


def write_record(record: Mapping[str, Verdicts], path: Path) -> None:
    path.write_text(json.dumps({role: record[role] for role in sorted(record)}, indent=1) + "\n", encoding="utf-8")


__all__ = ["RECORD_SEED", "REFERENCE", "VARIES", "Verdicts", "differences", "load_record", "merged", "record_role",
           "verdicts_of", "write_record"]
