"""A drafter is judged for what it did, not for the first sentence its symptom touches.

Found by planted bugs in the independent (Node.js) drafter:
- a drafter that drafts from the prompt alone keeps no draft state; §6.3's MUST (R-6.3-DISCARD) is blamed only on
  its own evidence, a proposal continuing a rejected token (D-JUDGE-KEPT-STATE); otherwise it is P1-DRF-4's
  deviation;
- a drafter that never resynchronises after sdcp-stale-base is P1-DRF-6's deviation, not a failure to ignore an
  unknown member of the state (D-JUDGE-D20: a control stale-base without the member tells them apart).

And seen only where its symptom can show (issue 40): a drafter whose context keeps more than the committed prefix
before a correct last token drafts, with the bigram draft model, what a correct one drafts; the same case with the
context-dependent ``ctx-draft-near`` finds it.
"""

from __future__ import annotations

import asyncio

import pytest

from sdcp_conformance.harness.certify import default_catalogue
from sdcp_conformance.harness.runner import RunReport, run_catalogue
from sdcp_conformance.harness.specs.drafter import DrafterEnvironment
from sdcp_conformance.judge import Verdict
from sdcp_conformance.mutants.catalogue import mutants_for

CATALOGUE = default_catalogue("drafter")
DISCARD_CASES = ("DRF-6.3-DISCARD-001", "DRF-6.3-DISCARD-002", "DRF-6.2-OUTSTANDING-002")


def _run(mutant_name: str, cases: tuple[str, ...]) -> RunReport:
    mutant = next(mutant for mutant in mutants_for("drafter") if mutant.name == mutant_name)

    async def run() -> RunReport:
        env = await DrafterEnvironment.start(None, app_factory=mutant.factory)
        try:
            return await run_catalogue(env, CATALOGUE, CATALOGUE.select(cases), seed=7)
        finally:
            await env.stop()

    return asyncio.run(run())


def _judged(report: RunReport, cases: tuple[str, ...]) -> dict[str, tuple[Verdict, set[str]]]:
    return {result.case.id: (result.verdict, {finding.row for finding in result.findings})
            for result in report.results if result.case.id in cases}


def test_a_drafter_drafting_from_the_prompt_alone_is_not_said_to_keep_draft_state() -> None:
    judged = _judged(_run("drf-drafts-from-prompt", DISCARD_CASES), DISCARD_CASES)
    assert set(judged) == set(DISCARD_CASES)
    for case, (verdict, rows) in judged.items():
        assert verdict is Verdict.NON_STRICT, (case, verdict, rows)
        assert "P1-DRF-4" in rows and "R-6.3-DISCARD" not in rows, (case, rows)


def test_a_drafter_continuing_its_rejected_token_is_failed_for_keeping_draft_state() -> None:
    judged = _judged(_run("drf-keeps-rejected-draft", DISCARD_CASES), DISCARD_CASES)
    assert set(judged) == set(DISCARD_CASES)
    for case, (verdict, rows) in judged.items():
        assert verdict is Verdict.FAILED and "R-6.3-DISCARD" in rows, (case, verdict, rows)


def test_a_drafter_that_never_resynchronises_is_not_failed_on_the_unknown_member() -> None:
    case = "DRF-5.2-UNKNOWN-KEYS-003"
    judged = _judged(_run("drf-stale-base-stops", (case,)), (case,))
    assert judged[case] == (Verdict.NON_STRICT, {"P1-DRF-6/RESYNC"}), judged


@pytest.mark.parametrize(("mutant", "pairs", "verdict", "row"), [
    ("drf-keeps-rejected-positions", (("DRF-6.3-DISCARD-001", "DRF-6.3-DISCARD-003"),
                                      ("DRF-6.3-DISCARD-002", "DRF-6.3-DISCARD-004"),
                                      ("DRF-6.2-OUTSTANDING-002", "DRF-6.2-OUTSTANDING-004")),
     Verdict.FAILED, "R-6.3-DISCARD"),
    ("drf-resync-keeps-stale-draft", (("DRF-P1-DRF-6-RESYNC-001", "DRF-P1-DRF-6-RESYNC-003"),),
     Verdict.NON_STRICT, "P1-DRF-6/RESYNC"),
    ("drf-replaced-keeps-stale-draft", (("DRF-P1-DRF-7-002", "DRF-P1-DRF-7-004"),
                                        ("DRF-P1-DRF-7-003", "DRF-P1-DRF-7-005")),
     Verdict.NON_STRICT, "P1-DRF-4"),
])
def test_a_context_kept_before_the_right_last_token_shows_only_with_the_context_dependent_model(
        mutant: str, pairs: tuple[tuple[str, str], ...], verdict: Verdict, row: str) -> None:
    cases = tuple(case for pair in pairs for case in pair)
    judged = _judged(_run(mutant, cases), cases)
    for bigram, ctx in pairs:
        assert judged[bigram] == (Verdict.PASSED, set()), (bigram, judged[bigram])
        assert judged[ctx][0] is verdict and row in judged[ctx][1], (ctx, judged[ctx])
