"""The statistical rule-2 mutants are catalogued, each with a statistical case recorded as its killer.

The kill itself is checked by ``tests/mutants`` (every catalogued mutant
against its recorded killers, with a fixed seed for the harness's drafter;
the IUT's values come from its CSPRNG, so a mutant survives only with
negligible probability — see each case's power statement and
``benchmarks/bench_rule2_calibration.py``).
"""

from __future__ import annotations

from sdcp_conformance.mutants.catalogue import load_killers
from sdcp_conformance.mutants.verifier import CATALOGUE as MUTANTS
from sdcp_conformance.mutants.verifier.rule2_stats import RULE2_STAT_MUTANTS


def test_at_least_twelve_statistical_mutants_are_catalogued() -> None:
    assert len(RULE2_STAT_MUTANTS) >= 12
    assert all(MUTANTS.get(mutant.name) is mutant for mutant in RULE2_STAT_MUTANTS)


def test_each_statistical_mutant_is_killed_by_a_statistical_case() -> None:
    killers = load_killers()
    for mutant in RULE2_STAT_MUTANTS:
        recorded = killers.get(mutant.name, [])
        # seeded exact cases may kill it too; what matters is that the distributional test does
        assert any(case.startswith("VER-6.4-RULE2-STAT-") for case in recorded), mutant.name
