"""D-JUDGE-SANITY: a sanity case passed (P1-JUDGE-3) when its conversation ran to its end with no deviation
from the draft. Found by planted bugs in an independent router: one whose front left out `finish` (a profile
deviation, NON-STRICT) made the run INCOMPLETE and skipped every other case."""

from __future__ import annotations

import asyncio
import types

import pytest

from sdcp_conformance.harness import runner
from sdcp_conformance.harness.case import Case
from sdcp_conformance.harness.certify import default_catalogue
from sdcp_conformance.harness.runner import RUN_INCOMPLETE, RUN_PASSED, CaseResult, RunReport
from sdcp_conformance.judge import Verdict


def _run(monkeypatch: pytest.MonkeyPatch, sanity: Verdict, *, completed: bool) -> RunReport:
    """A run of the router catalogue whose sanity case ends as given and every other case passes."""

    async def run_case(env: object, case: Case, seed: int, run: str, *, shared: bool = False) -> CaseResult:
        if run.startswith("sanity"):
            return CaseResult(case, sanity, "the front's final output has no finish", run=run, completed=completed)
        return CaseResult(case, Verdict.PASSED, run=run, completed=True)

    monkeypatch.setattr(runner, "run_case", run_case)
    catalogue = default_catalogue("router")
    env = types.SimpleNamespace(supports_concurrency=False, describe=dict)
    return asyncio.run(runner.run_catalogue(env, catalogue, catalogue.select([]), seed=1))  # type: ignore[arg-type]


@pytest.mark.parametrize("verdict", [Verdict.NON_STRICT, Verdict.INFORMATIONAL])
def test_a_sanity_case_that_ran_to_its_end_with_profile_findings_passed(
        monkeypatch: pytest.MonkeyPatch, verdict: Verdict) -> None:
    report = _run(monkeypatch, verdict, completed=True)
    main = [result for result in report.results if result.run == "main"]
    assert main and all(result.verdict is Verdict.PASSED for result in main)  # none skipped
    assert report.status == RUN_PASSED and not report.incomplete_reasons()


@pytest.mark.parametrize("verdict", [Verdict.NON_STRICT, Verdict.FAILED])
def test_a_sanity_case_that_stopped_or_failed_did_not(monkeypatch: pytest.MonkeyPatch, verdict: Verdict) -> None:
    report = _run(monkeypatch, verdict, completed=verdict is Verdict.FAILED)
    skipped = [result for result in report.results if result.verdict is Verdict.SKIPPED]
    assert skipped and all("sanity case failed first" in result.message for result in skipped)
    assert report.status == RUN_INCOMPLETE
    assert any("sanity case RTR-SANITY-001" in reason for reason in report.incomplete_reasons())


def test_completion_survives_the_json_report() -> None:
    case = default_catalogue("router").cases["RTR-SANITY-001"]
    record = CaseResult(case, Verdict.NON_STRICT, run="sanity-first", completed=True).to_json()
    assert record["completed"] is True
