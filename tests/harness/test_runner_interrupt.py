"""A run that is cancelled (Ctrl-C) takes its concurrent cases down with it before it returns.

Otherwise a case still running when the environment stops meets, say, the rule-2 judge closed under it and is
reported as a harness error (with a traceback) in the report of a run that was only interrupted.
"""

from __future__ import annotations

import asyncio
import types

import pytest

from sdcp_conformance.harness import runner
from sdcp_conformance.harness.case import Case
from sdcp_conformance.harness.certify import default_catalogue
from sdcp_conformance.harness.runner import CaseResult
from sdcp_conformance.judge import Verdict

JOBS = 2


def test_cancelling_a_run_cancels_and_awaits_its_running_cases(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[str] = []
    ended: list[str] = []
    slots_taken: list[asyncio.Event] = []

    async def run_case(env: object, case: Case, seed: int, run: str, *, shared: bool = False) -> CaseResult:
        if run != "main":
            return CaseResult(case, Verdict.PASSED, run=run)
        started.append(case.id)
        if len(started) == JOBS:
            slots_taken[0].set()
        try:
            await asyncio.Event().wait()  # a case that would go on
        finally:
            ended.append(case.id)
        return CaseResult(case, Verdict.PASSED, run=run)

    monkeypatch.setattr(runner, "run_case", run_case)
    catalogue = default_catalogue()
    selected = [case for case in catalogue.select(["fencing", "idempotency"]) if not case.exclusive][:6]
    reported: list[CaseResult] = []

    async def scenario() -> None:
        slots_taken.append(asyncio.Event())
        env = types.SimpleNamespace(supports_concurrency=True, describe=dict)
        run = asyncio.ensure_future(runner.run_catalogue(env, catalogue, selected, seed=1, jobs=JOBS,  # type: ignore[arg-type]
                                                         progress=reported.append))
        await asyncio.wait_for(slots_taken[0].wait(), 10)  # both slots taken: the run now waits for one to free
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        assert sorted(ended) == sorted(started), "a case was still running when the run returned"

    asyncio.run(scenario())
    assert len(started) == JOBS
    assert all(result.run != "main" for result in reported), "a cancelled case was reported"
