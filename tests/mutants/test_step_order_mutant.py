"""Temperature applied after top-p: VER-6.4-RULE2-012 fails it on §4.1's sentence under every seed, and passes the
reference under the same seeds (the case's telling rounds do not depend on the seed)."""

from __future__ import annotations

import asyncio

import pytest

from sdcp_conformance.harness.case import Verdict
from sdcp_conformance.harness.certify import certify
from sdcp_conformance.mutants import get_mutant
from sdcp_conformance.mutants.catalogue import load_killers

CASE = "VER-6.4-RULE2-012"
MUTANT = "rule2-temperature-after-top-p"


def _judged(seed: int, mutant: str | None) -> tuple[Verdict, set[str]]:
    factory = None if mutant is None else get_mutant(mutant).factory
    report = asyncio.run(certify(selectors=[CASE], seed=seed, app_factory=factory))
    result = next(result for result in report.results if result.case.id == CASE)
    return result.verdict, {finding.row for finding in result.findings}


@pytest.mark.parametrize("seed", range(1, 6))
def test_temperature_after_top_p_fails_on_the_sampling_sentence(seed: int) -> None:
    assert _judged(seed, MUTANT) == (Verdict.FAILED, {"R-4.1-SAMPLING"})


@pytest.mark.parametrize("seed", range(1, 6))
def test_top_p_before_top_k_fails_on_the_sampling_sentence_too(seed: int) -> None:
    assert _judged(seed, "rule2-top-p-before-top-k") == (Verdict.FAILED, {"R-4.1-SAMPLING"})


@pytest.mark.parametrize("seed", range(1, 6))
def test_the_reference_passes(seed: int) -> None:
    assert _judged(seed, None) == (Verdict.PASSED, set())


def test_the_case_is_a_recorded_killer() -> None:
    assert CASE in load_killers()[MUTANT]
