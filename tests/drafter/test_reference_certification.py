"""`certify --role drafter` passes the embedded reference drafter: every case, not even a NON-STRICT one."""

from __future__ import annotations

import asyncio

import pytest

from sdcp_conformance.harness.certify import certify
from sdcp_conformance.harness.runner import RUN_PASSED
from sdcp_conformance.judge import Verdict

REFERENCE_OK = {Verdict.PASSED, Verdict.SKIPPED, Verdict.INFORMATIONAL}


@pytest.mark.slow
def test_the_embedded_reference_drafter_passes_every_case() -> None:
    report = asyncio.run(certify(role="drafter", seed=7))
    wrong = [f"{r.case.id} {r.verdict.value}: {r.message[:300]}" for r in report.results
             if r.verdict not in REFERENCE_OK]
    assert not wrong, "\n".join(wrong)
    assert report.status == RUN_PASSED, report.incomplete_reasons()
    skipped = {r.case.id for r in report.results if r.verdict is Verdict.SKIPPED}
    assert not skipped, f"the embedded reference offers every capability: {skipped}"
    assert report.environment["role"] == "drafter" and report.environment["embedded"] is True
