"""P1-JUDGE-5 in the runner (D-JUDGE-TIME-3): a case that missed a deadline and did not pass runs again alone after
the others with longer deadlines; a second miss is one "too slow … twice" finding beside the semantic ones; a case
that failed without missing a deadline runs once."""

from __future__ import annotations

import asyncio
from collections import Counter

from sdcp_conformance.harness.case import Catalogue, Level, Verdict
from sdcp_conformance.harness.judging import JudgedContext
from sdcp_conformance.harness.patience import RERUN_SCALE
from sdcp_conformance.harness.runner import run_catalogue
from tests.harness.test_case_outcomes import BareEnvironment

QUOTE = "The output is identical to greedy decoding of the target model"
CATALOGUE = Catalogue(role="verifier")
ENV = BareEnvironment()
CALLS: list[tuple[str, float]] = []
"""(case, deadline scale it ran with), in the order the cases ran."""


def _miss(ctx: JudgedContext) -> None:
    """What the IUT link records when a request's deadline expires, and the finding a case then makes of it."""
    deadline = 5.0 * ENV.patience.scale
    what = f"POST proposals: no response headers within {deadline:g} s"
    ctx.missed_deadline(what, deadline, "headers timeout")
    ctx.deviate("R-5.1-RESOURCES", f"POST proposals: expected success, got no answer (headers timeout: {what})")


@CATALOGUE.case("T-SANITY-001", area="sanity", section="6.4", quote=QUOTE, level=Level.MUST, sanity=True)
async def sanity(ctx: JudgedContext) -> None:
    CALLS.append((ctx.case_id, ENV.patience.scale))


@CATALOGUE.case("T-ONCE-001", area="rule-1", section="6.4", quote=QUOTE, level=Level.MUST, rows=("R-6.4-RULE1",))
async def slow_once(ctx: JudgedContext) -> None:
    CALLS.append((ctx.case_id, ENV.patience.scale))
    if Counter(name for name, _ in CALLS)[ctx.case_id] == 1:
        _miss(ctx)


@CATALOGUE.case("T-TWICE-001", area="rule-1", section="6.4", quote=QUOTE, level=Level.MUST, rows=("R-6.4-RULE1",))
async def slow_twice(ctx: JudgedContext) -> None:
    CALLS.append((ctx.case_id, ENV.patience.scale))
    _miss(ctx)
    ctx.deviate("R-6.4-RULE1", "round 2 committed a token that is not the greedy one")
    _miss(ctx)


@CATALOGUE.case("T-LOST-001", area="rule-1", section="6.4", quote=QUOTE, level=Level.MUST, rows=("R-6.4-RULE1",))
async def lost_twice(ctx: JudgedContext) -> None:
    """A proposal's verdict is lost with its connection and the resend refused 403 (after a switch the same drafter
    is not assigned, §6.3 step 1), then the case cannot go on: twice."""
    CALLS.append((ctx.case_id, ENV.patience.scale))
    ctx.transcript.lost_answer("POST proposals: GOAWAY(PROTOCOL_ERROR, last_stream_id=81) before stream 79 was "
                               "answered; sent again 1 time(s), then 403 sdcp-not-assigned", refused=True)
    ctx.fail("POST proposals: expected success, got 403 sdcp-not-assigned", row="R-5.1-RESOURCES")


@CATALOGUE.case("T-WRONG-001", area="rule-1", section="6.4", quote=QUOTE, level=Level.MUST, rows=("R-6.4-RULE1",))
async def wrong(ctx: JudgedContext) -> None:
    CALLS.append((ctx.case_id, ENV.patience.scale))
    ctx.deviate("R-6.4-RULE1", "round 1 committed a token that is not the greedy one")


def test_cases_that_missed_a_deadline_run_again_alone_at_the_end() -> None:
    CALLS.clear()
    report = asyncio.run(run_catalogue(ENV, CATALOGUE, list(CATALOGUE.cases.values()), seed=3))  # type: ignore[arg-type]
    results = {(result.case.id, result.run): result for result in report.results}

    assert CALLS[0][0] == "T-SANITY-001"
    assert sorted(name for name, _ in CALLS[1:5]) == ["T-LOST-001", "T-ONCE-001", "T-TWICE-001", "T-WRONG-001"]
    # The first runs, then the three that missed a deadline or lost an answer, again (scaled), then the sanity case.
    assert sorted(CALLS[5:8]) == [("T-LOST-001", RERUN_SCALE), ("T-ONCE-001", RERUN_SCALE),
                                  ("T-TWICE-001", RERUN_SCALE)]
    assert CALLS[8] == ("T-SANITY-001", 1.0) and len(CALLS) == 9
    assert all(scale == 1.0 for _, scale in CALLS[:5])

    once = results[("T-ONCE-001", "main")]
    assert once.verdict is Verdict.PASSED and once.rerun and not once.findings
    assert "missed 1 deadline" in once.notes[0] and "P1-JUDGE-5" in once.notes[0]

    twice = results[("T-TWICE-001", "main")]
    assert twice.verdict is Verdict.FAILED
    assert [finding.row for finding in twice.findings] == ["R-6.4-RULE1", "R-5.1-RESOURCES"]
    assert twice.findings[0].message == "round 2 committed a token that is not the greedy one"
    assert twice.findings[1].message.startswith(
        f"too slow: no answer in {5.0 * RERUN_SCALE:g} s, twice (headers timeout)"), twice.findings[1].message

    lost = results[("T-LOST-001", "main")]
    assert lost.verdict is Verdict.INCOMPLETE and lost.message.startswith("incomplete: twice"), lost.message
    assert "403 sdcp-not-assigned" in lost.message
    assert not [finding for finding in lost.findings if finding.severity is not Verdict.INFORMATIONAL]
    assert "INCOMPLETE" in report.status and any("T-LOST-001" in reason for reason in report.incomplete_reasons())

    wrong_result = results[("T-WRONG-001", "main")]
    assert wrong_result.verdict is Verdict.FAILED and not wrong_result.rerun
    assert [name for name, _ in CALLS].count("T-WRONG-001") == 1
    assert ENV.patience.scale == 1.0
