"""Driving the verifiers of bench_harness.py: every case against every verifier, interleaved.

All verifiers are started first, each with its own harness environment (listeners, cache, PKI), and each is
warmed up (the sanity case, then one untimed run of the statistical cases: the oracle's caches, every process's
first calls). Then each statistical case runs ``reps`` times against each verifier in turn (case by case,
verifier by verifier), so a change of the machine's load touches every verifier alike; then the ordinary cases
the same way; then, per verifier, the statistical cases all at once as a certification runs them. Last, against
the first verifier only, the statistical cases once more under cProfile, and the reports of the "together" run.
Every run of a case has its own seed: a verifier in its own process keeps the sessions of earlier runs.
"""

from __future__ import annotations

import copy
import cProfile
import dataclasses
import io
import pstats
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness_iuts import (
    Child,
    Meter,
    Took,
    bigram_target,
    exchanges,
    node_standin_command,
    reference_command,
    standin_command,
    verdicts,
)

from sdcp_conformance.harness.case import Case, Catalogue
from sdcp_conformance.harness.runner import CaseResult, RunReport, run_case, run_catalogue
from sdcp_conformance.harness.specs.verifier import VerifierEnvironment
from sdcp_conformance.oracle.rule2_designs import DESIGNS, design
from sdcp_conformance.report import write_run

JOBS = 4
"""Cases at once in the "together" run (the runner's default)."""
ROUND_KINDS = ("proposal", "q_rows GET", "log GET", "log PUT")
"""The exchanges of one statistical round; anything else in a transcript is set-up (opens, assignments)."""
WARM_UP, TOGETHER, PROFILED, REP = 3, 1, 2, 10
"""Seed offsets of the runs (a rep r runs with seed + REP * r)."""


@dataclass
class Measured:
    case: Case
    result: CaseResult
    took: Took

    @property
    def rounds(self) -> int:
        return verdicts(self.result)

    @property
    def sessions(self) -> int:
        """The sessions in flight per wave: the design's (its note names it), 1 for an ordinary case."""
        named = next((note for note in self.result.notes if note.startswith("design ")), None)
        return design(named.split()[1].rstrip(":")).sessions if named else 1

    @property
    def round_exchanges(self) -> float:
        kinds = exchanges(self.result)
        return sum(kinds[kind] for kind in ROUND_KINDS) / max(1, self.rounds)


@dataclass
class Drive:
    """One verifier, its harness environment, and everything measured against it."""

    label: str
    env: VerifierEnvironment
    meter: Meter
    stat: list[Measured] = field(default_factory=list)
    ordinary: list[Measured] = field(default_factory=list)
    together: tuple[RunReport, Took] | None = None
    profile: tuple[pstats.Stats, int, Took] | None = None
    reports: tuple[Took, pstats.Stats] | None = None

    async def measure(self, case: Case, seed: int) -> Measured:
        result, took = await self.meter.measure(run_case(self.env, case, seed))
        return Measured(case, result, took)

    def by_case(self) -> dict[str, list[Measured]]:
        grouped: dict[str, list[Measured]] = {}
        for measured in self.stat:
            grouped.setdefault(measured.case.id, []).append(measured)
        return grouped


def design_names(cases: Sequence[Case]) -> list[str]:
    """The rule-2 design each STAT case runs (rule2_stats.py ends its black-box note with the design's targets)."""
    return [next(d.name for d in DESIGNS if f"Design: {d.targets}." in case.black_box_note) for case in cases]


async def _start(label: str, kind: str, work: Path, children: list[Child]) -> Drive:
    folder = work / kind
    folder.mkdir(parents=True, exist_ok=True)
    if kind == "embedded":
        env = await VerifierEnvironment.start(None, workdir=folder)
        return Drive(label, env, Meter(env, None))
    target = bigram_target(folder)
    commands = {"node": node_standin_command, "standin": standin_command, "reference": reference_command}
    child = Child(commands[kind](target), folder / "iut.log")
    children.append(child)
    child.ready()
    env = await VerifierEnvironment.start(target)
    return Drive(label, env, Meter(env, child))


async def drive_all(verifiers: Sequence[tuple[str, str]], cases: tuple[list[Case], list[Case]], catalogue: Catalogue,
                    seed: int, reps: int, work: Path, *, profile: bool) -> list[Drive]:
    """``verifiers``: (label, kind) with kind ``node`` or ``standin`` (the stand-ins), ``reference`` (own process) or
    ``embedded``."""
    stat, ordinary = cases
    drives: list[Drive] = []
    children: list[Child] = []
    try:
        for label, kind in verifiers:
            drives.append(await _start(label, kind, work, children))
        sanity = catalogue.cases[catalogue.sanity_id or ""]
        for drive in drives:
            warm = await run_case(drive.env, sanity, seed, "sanity-first")
            if warm.verdict.value != "PASSED":
                raise RuntimeError(f"{drive.label}: the sanity case is {warm.verdict.value}: {warm.message}")
            for case in stat:
                await run_case(drive.env, case, seed + WARM_UP)
        for rep in range(reps):
            for case in stat:
                for drive in drives:
                    drive.stat.append(await drive.measure(case, seed + REP * rep))
        for case in ordinary:
            for drive in drives:
                drive.ordinary.append(await drive.measure(case, seed))
        for drive in drives:
            drive.together = await drive.meter.measure(run_catalogue(drive.env, catalogue, stat, seed=seed + TOGETHER,
                                                                     jobs=JOBS))
        if profile and drives and drives[0].together is not None:
            drives[0].profile = await _profiled(drives[0], stat, seed + PROFILED)
            drives[0].reports = _write_reports(drives[0].together[0], catalogue, work / "reports")
    finally:
        for drive in drives:
            await drive.env.stop()
        for child in children:
            child.stop()
    return drives


async def _profiled(drive: Drive, cases: list[Case], seed: int) -> tuple[pstats.Stats, int, Took]:
    profiler = cProfile.Profile()

    async def run_all() -> int:
        rounds = 0
        for case in cases:
            profiler.enable()
            try:
                result = await run_case(drive.env, case, seed)
            finally:
                profiler.disable()
            rounds += verdicts(result)
        return rounds

    rounds, took = await drive.meter.measure(run_all())
    return pstats.Stats(profiler, stream=io.StringIO()), rounds, took


def _write_reports(report: RunReport, catalogue: Catalogue, folder: Path) -> tuple[Took, pstats.Stats]:
    """Write the run's reports twice: timed, then under the profiler (each time from unrendered transcripts)."""
    wall, cpu = time.perf_counter(), time.process_time()
    write_run(_fresh(report), folder / "timed", catalogue=catalogue)
    took = Took(time.perf_counter() - wall, time.process_time() - cpu, None, None)
    profiler = cProfile.Profile()
    profiler.runcall(write_run, _fresh(report), folder / "profiled", catalogue=catalogue)
    return took, pstats.Stats(profiler, stream=io.StringIO())


def _fresh(report: RunReport) -> RunReport:
    """A copy whose transcript entries are unrendered (an entry keeps its rendering once made)."""
    results = [dataclasses.replace(result, transcript=[copy.copy(entry) for entry in result.transcript])
               for result in report.results]
    return dataclasses.replace(report, results=results)


__all__ = ["JOBS", "ROUND_KINDS", "Drive", "Measured", "design_names", "drive_all"]
