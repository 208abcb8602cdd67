"""`certify --role drafter` passes the embedded reference drafter: every case, not even a NON-STRICT one."""

from __future__ import annotations

import asyncio

import pytest

from sdcp_conformance.harness.certify import certify
from sdcp_conformance.harness.runner import RUN_PASSED
from sdcp_conformance.judge import Verdict
from tests.harness.graceful_goaway import goaway_after, goaways

REFERENCE_OK = {Verdict.PASSED, Verdict.SKIPPED, Verdict.INFORMATIONAL}


@pytest.mark.slow
def test_the_embedded_reference_drafter_passes_every_case_behind_a_graceful_goaway_every_two_requests(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Every server of the run (the drafter's own, the harness's played verifiers, router and MLC) ends each
    connection after two requests (RFC 9113 §6.8): both sides' clients cross GOAWAYs all the time, and the
    judgement is the same as without them. (A proposal that arrived while a lower-epoch assignment was crossing one
    was once refused at once, which stopped the drafter: a false finding.)"""
    servers = goaway_after(monkeypatch, 2)
    report = asyncio.run(certify(role="drafter", seed=7))
    crossed = goaways(servers)
    assert len(crossed) >= 3 and crossed[2] >= 5, crossed
    wrong = [f"{r.case.id} {r.verdict.value}: {r.message[:300]}" for r in report.results
             if r.verdict not in REFERENCE_OK]
    assert not wrong, "\n".join(wrong)
    assert report.status == RUN_PASSED, report.incomplete_reasons()
    skipped = {r.case.id for r in report.results if r.verdict is Verdict.SKIPPED}
    assert not skipped, f"the embedded reference offers every capability: {skipped}"
    assert report.environment["role"] == "drafter" and report.environment["embedded"] is True
