"""Runs cases against an environment: sanity first and last, the rest in a seeded random order.

Like tlsfuzzer's runner, the sanity case (open a session, one valid round)
runs first — if it fails, the IUT is dead or misconfigured and the other
cases are skipped with that reason instead of failing a hundred times — and
last, so that an IUT that broke during the run says so. The order's seed is
recorded so an order-dependent IUT bug can be replayed. Every case has a
timeout; a case that raises something unexpected is a harness ERROR.
"""

from __future__ import annotations

import asyncio
import random
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sdcp_conformance.harness.case import Case, CaseOutcome, Catalogue, Verdict
from sdcp_conformance.harness.context import CaseContext
from sdcp_conformance.harness.environment import Environment
from sdcp_conformance.harness.expected import ExpectedFailures
from sdcp_conformance.harness.transcript import Entry


@dataclass
class CaseResult:
    case: Case
    verdict: Verdict
    message: str = ""
    expected: list[str] = field(default_factory=list)
    actual: str = ""
    duration_s: float = 0.0
    transcript: list[Entry] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    expected_failure: str | None = None
    """The reason from the expected-failures file, when this case is listed there."""
    run: str = "main"
    """``"sanity-first"``, ``"main"`` or ``"sanity-last"``."""

    @property
    def counts_as_failure(self) -> bool:
        return self.verdict in (Verdict.FAILED, Verdict.ERROR, Verdict.XPASS)

    def to_json(self) -> dict[str, Any]:
        return {
            **self.case.describe(), "verdict": self.verdict.value, "message": self.message,
            "expected": self.expected, "actual": self.actual, "duration_s": round(self.duration_s, 4),
            "notes": self.notes, "expected_failure": self.expected_failure, "run": self.run,
            "evidence": [entry.to_json() for entry in self.transcript],
        }


Progress = Callable[[CaseResult], None]


@dataclass
class RunReport:
    seed: int
    results: list[CaseResult]
    started: float
    finished: float
    environment: dict[str, Any]

    @property
    def failed(self) -> bool:
        return any(result.counts_as_failure for result in self.results)

    def counts(self) -> dict[str, int]:
        tally: dict[str, int] = {}
        for result in self.results:
            tally[result.verdict.value] = tally.get(result.verdict.value, 0) + 1
        return tally


async def run_case(env: Environment, case: Case, seed: int, run: str = "main") -> CaseResult:
    """Run one case with its timeout, mapping how it ended to a verdict."""
    missing = [need for need in case.requires if need not in env.capabilities()]
    if missing:
        return CaseResult(case, Verdict.SKIPPED, f"the target lacks {', '.join(missing)}", run=run)
    context = CaseContext(env, case.id, seed, run)
    env.current = context.transcript
    _reset(env)
    started = time.perf_counter()
    result = CaseResult(case, Verdict.PASSED, run=run)
    try:
        await asyncio.wait_for(case.run(context), case.timeout_s)
    except CaseOutcome as outcome:
        result.verdict, result.message = outcome.verdict, outcome.message
        result.expected, result.actual = outcome.expected, outcome.actual
    except TimeoutError:
        result.verdict, result.message = Verdict.FAILED, f"no conclusion within {case.timeout_s:.0f} s: the IUT hung"
    except Exception as exc:  # a bug in the harness or the case, never blamed on the IUT
        result.verdict = Verdict.ERROR
        result.message = f"harness error: {type(exc).__name__}: {exc}\n{traceback.format_exc(limit=8)}"
    finally:
        env.current = None
        _reset(env)
    result.duration_s = time.perf_counter() - started
    result.transcript = context.transcript.entries()
    result.notes = context.notes
    return result


def _reset(env: Environment) -> None:
    """Undo what a case may have switched in the harness: faults, fence enforcement, pinned load."""
    env.cache.faults.disarm()
    env.cache.enforce_fences = True
    if env.embedded_app is not None:
        env.embedded_app.pinned_load = None


def order_cases(catalogue: Catalogue, selected: Sequence[Case], seed: int) -> list[tuple[Case, str]]:
    """Sanity first and last (when it exists), the rest shuffled by ``seed``."""
    sanity = catalogue.cases.get(catalogue.sanity_id or "")
    rest = [case for case in selected if sanity is None or case.id != sanity.id]
    random.Random(seed).shuffle(rest)
    if sanity is None:
        return [(case, "main") for case in rest]
    return [(sanity, "sanity-first"), *[(case, "main") for case in rest], (sanity, "sanity-last")]


async def run_catalogue(env: Environment, catalogue: Catalogue, selected: Sequence[Case], *, seed: int,
                        expected_failures: ExpectedFailures | None = None,
                        progress: Progress | None = None) -> RunReport:
    started = time.time()
    results: list[CaseResult] = []
    dead = ""
    for case, run in order_cases(catalogue, selected, seed):
        if dead and run != "sanity-last":
            result = CaseResult(case, Verdict.SKIPPED, f"not run: the sanity case failed first ({dead})", run=run)
        else:
            result = await run_case(env, case, seed, run)
            if run == "sanity-first" and result.verdict is not Verdict.PASSED:
                dead = result.message or result.verdict.value
        if expected_failures is not None:
            expected_failures.apply(result)
        results.append(result)
        if progress is not None:
            progress(result)
    return RunReport(seed, results, started, time.time(), env.describe())


__all__ = ["CaseResult", "Progress", "RunReport", "order_cases", "run_case", "run_catalogue"]
