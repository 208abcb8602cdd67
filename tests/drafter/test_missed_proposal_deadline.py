"""P1-JUDGE-5 on the drafter's side: a proposal that does not come in time is a missed deadline, not yet a
deviation. The case runs again alone after the others with longer waits (D-JUDGE-TIME-3); a drafter late only the
first time passes, one silent both times is "too slow … twice" at the row the case waited on.

The drafters here are the reference with one change made in this file: after the first verdict of its first
sessions assigned ``m_init`` 3 (DRF-6.2-PROPOSAL-001's), it never proposes again for them.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any, ClassVar

from sdcp_conformance.harness.certify import certify
from sdcp_conformance.harness.patience import RERUN_SCALE
from sdcp_conformance.judge import Verdict
from sdcp_conformance.protocol.messages import Verdict as VerdictMessage
from sdcp_conformance.reference.drafter.app import DrafterApp
from sdcp_conformance.reference.drafter.session import DrafterSession, Next

CASE = "DRF-6.2-PROPOSAL-001"
RUN_DEADLINE_S = 240.0
QUIET_AFTER_S = 2.0
"""The least wait for a proposal after the first (D-JUDGE-D5: five quiet windows of the pace, at least 2 s)."""


def _silencing(sessions: int) -> type[DrafterSession]:
    class SilentAfterFirstVerdict(DrafterSession):
        left: ClassVar[int] = sessions

        def on_verdict(self, verdict: VerdictMessage) -> Next:
            step = super().on_verdict(verdict)
            if self.assignment.m_init == 3 and SilentAfterFirstVerdict.left > 0:
                SilentAfterFirstVerdict.left -= 1
                return self.stop("planted: silent after the first verdict")
            return step

    return SilentAfterFirstVerdict


def _certified(sessions: int) -> Any:
    session_class = _silencing(sessions)

    def factory(config: Any, model: Any, cache: Any, verifier: Any, router: Any) -> DrafterApp:
        app = DrafterApp(config, model, cache, verifier, router)
        app.session_class = session_class
        return app

    report = asyncio.run(asyncio.wait_for(certify(role="drafter", selectors=[CASE], seed=1, app_factory=factory),
                                          RUN_DEADLINE_S))
    return next(result for result in report.results if result.case.id == CASE)


def test_a_proposal_late_only_the_first_time_is_asked_again_and_passes() -> None:
    result = _certified(sessions=1)
    assert result.rerun, "the case ran once: the missing proposal was judged without a second run"
    assert result.verdict is Verdict.PASSED, result.message
    assert any("P1-JUDGE-5: the first run missed 1 deadline(s)" in note for note in result.notes), result.notes


def test_a_drafter_silent_twice_is_too_slow_at_the_row_it_was_waited_on() -> None:
    result = _certified(sessions=2)
    assert result.rerun
    assert result.verdict is Verdict.FAILED, result.message
    [finding] = [finding for finding in result.findings if finding.severity is Verdict.FAILED]
    assert finding.row == "R-6.5.2-CONTINUE"
    first = re.search(r"the first time: round 2: no proposal arrived within ([0-9.]+) s$", finding.message)
    assert first is not None, finding.message
    waited = float(first.group(1))
    assert waited >= QUIET_AFTER_S  # D-JUDGE-D5's floor
    rerun_wait = f"{waited * RERUN_SCALE:g} s"  # the rerun waits RERUN_SCALE times longer
    assert finding.message.startswith(f"too slow: no answer in {rerun_wait}, twice (no proposal from the drafter): "
                                      f"round 2: no proposal arrived within {rerun_wait}"), finding.message
