"""The drafter suite catches every planted bug: each mutant is killed by its recorded cases under five seeds.

``sdcp_conformance/mutants/killers-drafter.json`` records, per mutant, the cases that killed it in the last
``sdcp-conformance selftest --role drafter --write-killers``; here each mutant runs only those, once per seed,
all in one environment per mutant (several mutants at a time: the cases mostly wait on the drafter).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from sdcp_conformance import spec
from sdcp_conformance.harness.certify import default_catalogue
from sdcp_conformance.harness.runner import RunReport, run_catalogue
from sdcp_conformance.harness.specs.drafter import DrafterEnvironment
from sdcp_conformance.judge import Verdict
from sdcp_conformance.mutants.base import DrafterMutant
from sdcp_conformance.mutants.catalogue import killers_path, load_killers, mutants_for
from sdcp_conformance.mutants.drafter import MUTANTS as DRAFTER_MUTANTS
from sdcp_conformance.mutants.drafter import UNMUTATED as UNMUTATED_DRAFTER
from sdcp_conformance.mutants.selftest import killers_in
from sdcp_conformance.reference.drafter.app import DrafterApp
from sdcp_conformance.reference.drafter.session import DrafterSession

SEEDS = (1, 2, 3, 4, 5)
KILLERS = load_killers(killers_path("drafter"))
CATALOGUE = default_catalogue("drafter")
JOBS = 10


def test_the_catalogue_is_registered_large_and_cites_the_texts() -> None:
    assert mutants_for("drafter") == DRAFTER_MUTANTS
    assert len(DRAFTER_MUTANTS) >= 16
    names = [mutant.name for mutant in DRAFTER_MUTANTS]
    assert len(set(names)) == len(names)
    others = {mutant.name for mutant in mutants_for("verifier")}
    assert not others & set(names), "mutant names are unique across roles"
    for mutant in DRAFTER_MUTANTS:
        assert spec.is_verbatim(mutant.violates), mutant.name


def test_every_mutant_has_recorded_killers_that_exist() -> None:
    assert set(KILLERS) == {mutant.name for mutant in DRAFTER_MUTANTS}, "run selftest --role drafter --write-killers"
    for name, cases in KILLERS.items():
        assert cases, f"{name} survived the last selftest"
        assert set(cases) <= set(CATALOGUE.cases), f"{name}: unknown cases {set(cases) - set(CATALOGUE.cases)}"


def test_the_unmutated_factory_builds_the_plain_reference() -> None:
    assert UNMUTATED_DRAFTER.app is DrafterApp and UNMUTATED_DRAFTER.session is None
    assert DrafterApp.session_class is DrafterSession


async def _seeds(mutant: DrafterMutant, gate: asyncio.Semaphore) -> tuple[DrafterMutant, list[RunReport]]:
    async with gate:
        env = await DrafterEnvironment.start(None, app_factory=mutant.factory)
        try:
            selected = CATALOGUE.select(KILLERS[mutant.name])
            return mutant, [await run_catalogue(env, CATALOGUE, selected, seed=seed) for seed in SEEDS]
        finally:
            await env.stop()


def _describe(report: RunReport) -> str:
    return "; ".join(f"{r.case.id} {r.verdict.value} {r.message[:120]}" for r in report.results)


@pytest.mark.slow
def test_every_mutant_is_killed_by_its_recorded_cases_under_five_seeds() -> None:
    async def everything() -> Sequence[tuple[DrafterMutant, list[RunReport]]]:
        gate = asyncio.Semaphore(JOBS)
        return await asyncio.gather(*(_seeds(mutant, gate) for mutant in DRAFTER_MUTANTS))

    survivors, errors = [], []
    for mutant, reports in asyncio.run(everything()):
        for seed, report in zip(SEEDS, reports, strict=True):
            errors += [f"{mutant.name} seed {seed}: {r.case.id} {r.message[:200]}" for r in report.results
                       if r.verdict is Verdict.ERROR]
            if not killers_in(mutant, report):
                survivors.append(f"{mutant.name} seed {seed}: {_describe(report)}")
    assert not errors, "\n".join(errors)
    assert not survivors, "\n".join(survivors)
