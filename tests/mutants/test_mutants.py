"""Tests that prove the tests work: the clean reference passes every case, and every mutant fails one.

CI runs each mutant only against the cases recorded as its killers in
``sdcp_conformance/mutants/killers.json`` (``sdcp-conformance selftest
--write-killers`` refreshes it); the full matrix is the selftest's job.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from sdcp_conformance import spec
from sdcp_conformance.harness.case import Verdict
from sdcp_conformance.harness.certify import certify, default_catalogue
from sdcp_conformance.harness.runner import CaseResult
from sdcp_conformance.mutants import get_mutant
from sdcp_conformance.mutants.catalogue import load_killers
from sdcp_conformance.mutants.selftest import REFERENCE_OK, killers_in
from sdcp_conformance.mutants.verifier import CATALOGUE, MUTANTS, UNMUTATED

SEED = 1
KILLERS = load_killers()
MIN_MUTANTS = 30


def _describe(results: Sequence[CaseResult]) -> str:
    return "\n".join(f"{r.case.id} {r.verdict.value}: {r.message[:300]}" for r in results)


def test_clean_reference_passes_every_case() -> None:
    report = asyncio.run(certify(seed=SEED))
    wrong = [result for result in report.results if result.verdict not in REFERENCE_OK]
    assert not wrong, f"the reference verifier must pass every case (NON-STRICT included):\n{_describe(wrong)}"


def test_catalogue_is_large_and_names_are_unique() -> None:
    assert len(MUTANTS) >= MIN_MUTANTS
    assert len(CATALOGUE) == len(MUTANTS)


@pytest.mark.parametrize("name", sorted(CATALOGUE))
def test_mutant_cites_the_draft_or_profile_verbatim(name: str) -> None:
    assert spec.is_verbatim(get_mutant(name).violates)


def test_every_mutant_has_recorded_killers() -> None:
    missing = sorted(name for name in CATALOGUE if not KILLERS.get(name))
    assert not missing, ("mutants without killers in killers.json (run `sdcp-conformance selftest "
                         f"--write-killers`, or add a case that kills them): {missing}")


def test_killers_name_only_catalogued_mutants_and_existing_cases() -> None:
    known_cases = set(default_catalogue().cases)
    assert set(KILLERS) <= set(CATALOGUE), f"killers.json names unknown mutants {sorted(set(KILLERS) - set(CATALOGUE))}"
    unknown = {name: [case for case in cases if case not in known_cases] for name, cases in KILLERS.items()}
    assert not any(unknown.values()), f"killers.json names cases that no longer exist: {unknown}"


@pytest.mark.parametrize("name", sorted(CATALOGUE))
def test_mutant_is_killed_by_its_recorded_killers(name: str) -> None:
    mutant = get_mutant(name)
    killers = KILLERS.get(name)
    if not killers:
        pytest.fail(f"{name} has no recorded killers: it survived the last selftest")
    report = asyncio.run(certify(selectors=killers, seed=SEED, app_factory=mutant.factory))
    errors = [result for result in report.results if result.verdict is Verdict.ERROR]
    assert not errors, f"harness errors against {name}:\n{_describe(errors)}"
    assert killers_in(mutant, report), f"{name} survived its recorded killers {killers}: {report.counts()}"


def test_unmutated_hooks_pass_every_case() -> None:
    """The hookable base classes alone change nothing (each kill is the planted bug's doing), and the
    reference code they copy has not drifted from them."""
    report = asyncio.run(certify(seed=SEED, app_factory=UNMUTATED.factory))
    wrong = [result for result in report.results if result.verdict not in REFERENCE_OK]
    assert not wrong, f"the unmutated hooks fail cases the reference passes:\n{_describe(wrong)}"
