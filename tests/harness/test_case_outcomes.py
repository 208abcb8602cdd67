"""How the runner turns what a case raised into its verdict, including cases that run sessions in a TaskGroup."""

from __future__ import annotations

import asyncio
from typing import Any

from sdcp_conformance.harness.case import Catalogue, Level
from sdcp_conformance.harness.judging import JudgedContext
from sdcp_conformance.harness.patience import Patience
from sdcp_conformance.harness.runner import run_case
from sdcp_conformance.judge import Verdict


class BareEnvironment:
    """Just enough environment for :func:`run_case`: every capability, a plain judged context."""

    def __init__(self) -> None:
        self.patience = Patience(5.0, 35.0)

    def capabilities(self) -> frozenset[str]:
        return frozenset()

    supports_concurrency = False

    def reset(self) -> None:
        return None

    async def before_case(self, case: Any) -> None:
        return None

    def release(self, context: Any) -> None:
        return None

    async def after_case(self, context: Any) -> None:
        return None

    def new_context(self, case: Any, seed: int, run: str) -> JudgedContext:
        return JudgedContext(case, seed, run)

    def describe(self) -> dict[str, Any]:
        return {"iut": "none", "role": "verifier"}


CATALOGUE = Catalogue(role="verifier")
QUOTE = "The output is identical to greedy decoding of the target model"


async def _finding_then_stop(ctx: JudgedContext) -> None:
    await asyncio.sleep(0)
    ctx.fail("one session's round deviated", row="R-6.4-RULE1")


async def _long_task(ctx: JudgedContext, done: list[str]) -> None:
    try:
        await asyncio.Event().wait()  # cancelled by the TaskGroup when its sibling fails
    except asyncio.CancelledError:
        done.append("cancelled")
        raise


CANCELLED: list[str] = []


@CATALOGUE.case("T-1", area="rule-1", section="6.4", quote=QUOTE, level=Level.MUST, rows=("R-6.4-RULE1",))
async def stop_in_a_task(ctx: JudgedContext) -> None:
    async with asyncio.TaskGroup() as group:
        group.create_task(_finding_then_stop(ctx))
        group.create_task(_long_task(ctx, CANCELLED))


@CATALOGUE.case("T-2", area="rule-1", section="6.4", quote=QUOTE, level=Level.MUST, rows=("R-6.4-RULE1",))
async def bug_beside_a_stop(ctx: JudgedContext) -> None:
    async def bug() -> None:
        await asyncio.sleep(0)
        raise KeyError("a harness bug")

    async with asyncio.TaskGroup() as group:
        group.create_task(_finding_then_stop(ctx))
        group.create_task(bug())


@CATALOGUE.case("T-3", area="rule-1", section="6.4", quote=QUOTE, level=Level.MUST, rows=("R-6.4-RULE1",))
async def skip_in_a_task(ctx: JudgedContext) -> None:
    async def skip() -> None:
        ctx.skip("the target lacks what this session needs")

    async with asyncio.TaskGroup() as group:
        group.create_task(skip())


def _run(case_id: str) -> Any:
    return asyncio.run(run_case(BareEnvironment(), CATALOGUE.cases[case_id], seed=1))  # type: ignore[arg-type]


def test_a_stop_inside_a_task_group_is_the_cases_finding_and_the_other_sessions_are_cancelled() -> None:
    result = _run("T-1")
    assert result.verdict is Verdict.FAILED
    assert [finding.row for finding in result.findings] == ["R-6.4-RULE1"]
    assert CANCELLED == ["cancelled"]


def test_a_harness_bug_in_one_task_is_an_error_even_beside_a_finding() -> None:
    result = _run("T-2")
    assert result.verdict is Verdict.ERROR
    assert "KeyError" in result.message


def test_a_skip_inside_a_task_group_skips_the_case() -> None:
    result = _run("T-3")
    assert result.verdict is Verdict.SKIPPED
    assert "lacks" in result.message
