"""A case's timeout catches a hung IUT, not a slow one (D-JUDGE-SLOW-IUT).

A verifier taking 3 s a round answered every proposal of a statistical case, yet the case's 120 s passed before
its rounds did and the IUT was reported as hung. Now the timeout is extended while the IUT keeps answering the
case's requests, up to a cap; an IUT that answers nothing still ends the case at its timeout, as hung.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from sdcp_conformance.harness import runner
from sdcp_conformance.harness.case import Catalogue, Level
from sdcp_conformance.harness.judging import JudgedContext
from sdcp_conformance.judge import Verdict
from tests.harness.test_case_outcomes import BareEnvironment

CATALOGUE = Catalogue(role="verifier")
QUOTE = "The output is identical to greedy decoding of the target model"
TIMEOUT_S = 0.4
ANSWER_EVERY_S = 0.05
"""How often the played IUT answers: well inside the (shortened) window, so a busy machine does not matter."""


def _answered(ctx: JudgedContext) -> None:
    ctx.transcript.record("to-iut", "drafter-1", "POST", "proposals", b"", 200, b"")


async def _answers_for(ctx: JudgedContext, seconds: float) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + seconds
    while loop.time() < end:
        await asyncio.sleep(ANSWER_EVERY_S)  # the played IUT's pace, not synchronisation
        _answered(ctx)


@CATALOGUE.case("T-SLOW", area="rule-1", section="6.4", quote=QUOTE, level=Level.MUST, rows=("R-6.4-RULE1",),
                timeout_s=TIMEOUT_S)
async def slow_but_answering(ctx: JudgedContext) -> None:
    await _answers_for(ctx, 2 * TIMEOUT_S)  # two timeouts of answers (within the cap of three), then it ends


@CATALOGUE.case("T-HUNG", area="rule-1", section="6.4", quote=QUOTE, level=Level.MUST, rows=("R-6.4-RULE1",),
                timeout_s=TIMEOUT_S)
async def answers_then_hangs(ctx: JudgedContext) -> None:
    _answered(ctx)
    await asyncio.Event().wait()


@CATALOGUE.case("T-ENDLESS", area="rule-1", section="6.4", quote=QUOTE, level=Level.MUST, rows=("R-6.4-RULE1",),
                timeout_s=TIMEOUT_S)
async def answers_forever(ctx: JudgedContext) -> None:
    await _answers_for(ctx, 3600.0)


@pytest.fixture(autouse=True)
def short_window(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "SLOW_IUT_WINDOW_S", 0.3)


def _run(case_id: str) -> Any:
    return asyncio.run(runner.run_case(BareEnvironment(), CATALOGUE.cases[case_id], seed=1))  # type: ignore[arg-type]


def test_an_iut_that_keeps_answering_is_given_the_time_its_answers_take() -> None:
    result = _run("T-SLOW")
    assert result.verdict is Verdict.PASSED, result.message
    assert result.completed


def test_an_iut_that_stops_answering_is_hung_at_the_cases_timeout() -> None:
    result = _run("T-HUNG")
    assert result.verdict is Verdict.FAILED and not result.completed
    assert "the IUT hung" in result.message, result.message


def test_an_iut_answering_without_end_is_stopped_at_the_cap_and_not_called_hung() -> None:
    result = _run("T-ENDLESS")
    assert result.verdict is Verdict.FAILED and not result.completed
    assert "the IUT was still answering" in result.message and "hung" not in result.message, result.message
    assert f"{runner.SLOW_IUT_FACTOR:g} times the case's" in result.message
