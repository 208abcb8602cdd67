"""The router suite: its declarations are well formed, its rows cover the router's sentences, and the embedded
reference router passes every case — not even NON-STRICT — while the unmutated hooks change nothing."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence

import pytest

from sdcp_conformance import spec
from sdcp_conformance.harness.case import Case, Verdict
from sdcp_conformance.harness.certify import certify
from sdcp_conformance.harness.runner import CaseResult
from sdcp_conformance.judge import TABLE
from sdcp_conformance.judge.requirements.router import ROWS
from sdcp_conformance.mutants.router import UNMUTATED as UNMUTATED_ROUTER
from sdcp_conformance.report.coverage import coverage_rows
from sdcp_conformance.suites.router import CATALOGUE
from tests.harness.graceful_goaway import goaway_after, goaways

CASES = list(CATALOGUE.cases.values())
REFERENCE_OK = frozenset({Verdict.PASSED, Verdict.SKIPPED, Verdict.INFORMATIONAL})
SEED = 3


def _describe(results: Sequence[CaseResult]) -> str:
    return "\n".join(f"{r.case.id} {r.verdict.value}: {r.message[:400]}" for r in results)


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_case_declaration(case: Case) -> None:
    assert re.fullmatch(r"RTR-(\d+(\.\d+)*|P1-[A-Z]+-\d+|SANITY)(-[A-Z0-9]+)*-\d{3}", case.id), case.id
    assert case.role == "router" and case.title and re.fullmatch(r"[a-z]+(-[a-z]+)*", case.area)
    assert spec.is_verbatim(case.quote), case.id
    assert case.rows and case.level is TABLE[case.rows[0]].level, "the case's level is its first row's"
    assert all(item.startswith("P1-") for item in case.profile)


def test_router_rows_quote_the_texts_and_bind_the_router() -> None:
    for row in ROWS:
        assert row.binds == "router" and spec.is_verbatim(row.quote), row.id


def test_every_router_row_is_judged_by_a_case() -> None:
    unjudged = [item.row.id for item in coverage_rows(CATALOGUE) if item.row.binds == "router" and not item.judged]
    assert not unjudged, f"router rows no case declares: {unjudged}"
    stale = [row.id for row in ROWS if row.not_judged]
    assert not stale, f"rows still excused although cases judge them: {stale}"


def test_the_suite_covers_every_area_the_issue_names() -> None:
    areas = {case.area for case in CASES}
    assert {"sanity", "session-open", "assignment", "drafter-expiry", "events", "policy", "failover", "front",
            "messages", "transport"} <= areas
    assert CATALOGUE.sanity_id == "RTR-SANITY-001" and CATALOGUE.base_models == ()


def test_embedded_reference_router_passes_every_case_behind_a_graceful_goaway_every_two_requests(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Every server of the run (the router's own, the harness's played verifiers, drafters and MLC) ends each
    connection after two requests (RFC 9113 §6.8): the harness's status reports, events and front requests and the
    router's own calls cross GOAWAYs all the time, and the judgement is the same as without them."""
    servers = goaway_after(monkeypatch, 2)
    report = asyncio.run(certify(role="router", seed=SEED))
    wrong = [result for result in report.results if result.verdict not in REFERENCE_OK]
    assert not wrong, f"the reference router must pass every case (NON-STRICT included):\n{_describe(wrong)}"
    assert report.status == "PASSED" and not report.skipped()
    crossed = goaways(servers)
    assert len(crossed) >= 3 and crossed[2] >= 5, crossed


def test_unmutated_hooks_pass_the_failover_and_front_cases() -> None:
    """Building the router from its parts (as every mutant does) changes nothing by itself."""
    report = asyncio.run(certify(role="router", seed=SEED, app_factory=UNMUTATED_ROUTER.factory,
                                 selectors=["failover", "front"]))
    wrong = [result for result in report.results if result.verdict not in REFERENCE_OK]
    assert not wrong, _describe(wrong)
