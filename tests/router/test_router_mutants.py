"""Tests that prove the router suite works: every router mutant is killed by its recorded cases, under each of
five fixed seeds.

``sdcp-conformance selftest --role router --write-killers`` records each mutant's killing cases in
``sdcp_conformance/mutants/killers-router.json``. Here each mutant runs as the embedded IUT of one environment,
and for each seed its recorded killers run in that seed's order (sanity first) until one of them returns a
verdict that counts as detecting it; a seed under which none does fails the test.
"""

from __future__ import annotations

import asyncio

import pytest

from sdcp_conformance import spec
from sdcp_conformance.harness.case import Verdict
from sdcp_conformance.harness.runner import order_cases, run_case
from sdcp_conformance.harness.specs.router import RouterEnvironment
from sdcp_conformance.mutants.base import RouterMutant
from sdcp_conformance.mutants.catalogue import ROLES as ROLE_MUTANTS
from sdcp_conformance.mutants.catalogue import killers_path, load_killers, mutants_for
from sdcp_conformance.mutants.router import CATALOGUE as ROUTER_MUTANTS_BY_NAME
from sdcp_conformance.mutants.router import MUTANTS as ROUTER_MUTANTS
from sdcp_conformance.suites.router import CATALOGUE

SEEDS = (1, 2, 3, 4, 5)
KILLERS = load_killers(killers_path("router"))


def test_catalogue_is_registered_large_and_named_uniquely() -> None:
    assert "router" in ROLE_MUTANTS and len(mutants_for("router")) == len(ROUTER_MUTANTS) >= 12
    names = [mutant.name for mutant in ROUTER_MUTANTS]
    assert len(set(names)) == len(names)
    others = {mutant.name for role in ROLE_MUTANTS if role != "router" for mutant in mutants_for(role)}
    assert not set(names) & others, "mutant names are unique across roles"


@pytest.mark.parametrize("mutant", ROUTER_MUTANTS, ids=lambda mutant: mutant.name)
def test_mutant_cites_the_draft_or_profile_verbatim(mutant: RouterMutant) -> None:
    assert spec.is_verbatim(mutant.violates)


def test_every_mutant_has_recorded_killers_that_exist() -> None:
    missing = sorted(name for name in ROUTER_MUTANTS_BY_NAME if not KILLERS.get(name))
    assert not missing, f"router mutants without killers (run selftest --role router --write-killers): {missing}"
    unknown = {name: [case for case in cases if case not in CATALOGUE.cases] for name, cases in KILLERS.items()}
    assert set(KILLERS) <= set(ROUTER_MUTANTS_BY_NAME) and not any(unknown.values()), unknown


async def _killed_under(mutant: RouterMutant, killers: list[str]) -> dict[int, str | None]:
    """For each seed, the first recorded killer that detects the mutant (``None``: none did)."""
    selected = CATALOGUE.select(killers)
    env = await RouterEnvironment.start(None, app_factory=mutant.factory)
    found: dict[int, str | None] = {}
    try:
        for seed in SEEDS:
            found[seed] = None
            for case, run in order_cases(CATALOGUE, selected, seed):
                if run == "sanity-last":
                    continue
                result = await run_case(env, case, seed, run)
                assert result.verdict is not Verdict.ERROR, f"{case.id}: {result.message}"
                if result.verdict in mutant.kill_verdicts:
                    found[seed] = case.id
                    break
    finally:
        await env.stop()
    return found


CONCURRENT = 9
"""Mutants certified at once: the cases mostly wait (for expiries, for a router that never acts), so running
several side by side on one loop keeps the whole matrix within about a minute."""


async def _matrix() -> dict[str, dict[int, str | None]]:
    gate = asyncio.Semaphore(CONCURRENT)

    async def one(mutant: RouterMutant) -> tuple[str, dict[int, str | None]]:
        async with gate:
            return mutant.name, await _killed_under(mutant, KILLERS.get(mutant.name, []))

    return dict(await asyncio.gather(*(one(mutant) for mutant in ROUTER_MUTANTS if KILLERS.get(mutant.name))))


@pytest.fixture(scope="module")
def kill_matrix() -> dict[str, dict[int, str | None]]:
    return asyncio.run(asyncio.wait_for(_matrix(), 600))


@pytest.mark.parametrize("mutant", ROUTER_MUTANTS, ids=lambda mutant: mutant.name)
def test_mutant_is_killed_by_its_recorded_killers_under_five_seeds(
        mutant: RouterMutant, kill_matrix: dict[str, dict[int, str | None]]) -> None:
    killers = KILLERS.get(mutant.name)
    if not killers:
        pytest.fail(f"{mutant.name} has no recorded killers: it survived the last selftest")
    found = kill_matrix[mutant.name]
    survived = [seed for seed in SEEDS if found.get(seed) is None]
    assert not survived, f"{mutant.name} survived its recorded killers {killers} under seeds {survived}"
