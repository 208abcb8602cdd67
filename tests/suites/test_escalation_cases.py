"""The escalation cases against a verifier that reports a load, as a vendor's does (§6.5.1).

The embedded IUT's load is pinned to 0 where the cases pin it, so that m_cap has one right value; a vendor's
verifier reports its own load, which may keep m_cap lower. Here the embedded IUT reports load 2: the cases
must still catch an m_cap that is too high, which no load allows, and must not fail the clean reference.
Both planted bugs leave m_cap right where the cases used to look (an even m_cap, or the load-0 branch only):
a stand-in verifier in JavaScript with either bug passed the whole suite before.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from sdcp_conformance.harness.certify import certify
from sdcp_conformance.harness.contexts.verifier import VerifierContext
from sdcp_conformance.judge import Verdict
from sdcp_conformance.mutants import get_mutant
from sdcp_conformance.suites.verifier import escalation

REPORTED_LOAD = 2


@pytest.fixture
def reported_load(monkeypatch: pytest.MonkeyPatch) -> None:
    async def pin(ctx: VerifierContext, load: int) -> bool:
        ctx.env.pin_load(REPORTED_LOAD)
        return True

    monkeypatch.setattr(escalation, "_pin", pin)


@pytest.mark.usefixtures("reported_load")
@pytest.mark.parametrize(("case", "mutant", "verdict"), [
    ("VER-6.5-ESC-003", None, Verdict.PASSED),
    ("VER-6.5-ESC-003", "reduce-rounds-up", Verdict.FAILED),
    ("VER-6.5-ESC-005", None, Verdict.PASSED),
    ("VER-6.5-ESC-005", "restore-past-m-init", Verdict.NON_STRICT),
])
def test_a_reported_load_excuses_a_lower_m_cap_never_a_higher_one(case: str, mutant: str | None, verdict: Verdict,
                                                                  tmp_path: Path) -> None:
    factory = get_mutant(mutant).factory if mutant is not None else None
    report = asyncio.run(certify(selectors=[case], seed=1, app_factory=factory, workdir=tmp_path))
    result = next(result for result in report.results if result.case.id == case)
    assert result.verdict is verdict, result.message
    if mutant is not None:  # the finding names the load the IUT reported: the load-0 branch was left
        assert f"load {REPORTED_LOAD}" in result.message or f"loads [{REPORTED_LOAD}," in result.message, \
            result.message


@pytest.mark.usefixtures("reported_load")
@pytest.mark.parametrize(("mutant", "verdict"), [(None, Verdict.PASSED),
                                                 ("self-decoding-state-active", Verdict.NON_STRICT)])
def test_the_state_during_self_decoding_is_read_without_controlling_the_load(mutant: str | None, verdict: Verdict,
                                                                            tmp_path: Path) -> None:
    """ESC-009 reads P1-STATE-1's 3 where the harness sets the load; ESC-017 reads it from any verifier, while
    the cache holds one of the period's appends (so the period cannot end under the read)."""
    factory = get_mutant(mutant).factory if mutant is not None else None
    report = asyncio.run(certify(selectors=["VER-6.5-ESC-017"], seed=1, app_factory=factory, workdir=tmp_path))
    result = next(result for result in report.results if result.case.id == "VER-6.5-ESC-017")
    assert result.verdict is verdict, result.message
    assert not result.notes, f"the state was not read during the period: {result.notes}"
