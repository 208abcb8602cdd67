"""The order a run starts its cases in: sanity first and last, long cases first, exclusive ones together at the end,
each group shuffled by the seed (so a seed replays its order, and another seed gives another)."""

from __future__ import annotations

import pytest

from sdcp_conformance.harness.case import Case
from sdcp_conformance.harness.certify import default_catalogue
from sdcp_conformance.harness.runner import LONG_CASE_S, order_cases
from sdcp_conformance.harness.shards import recorded_durations


@pytest.mark.parametrize("role", ["verifier", "router", "drafter"])
def test_long_cases_start_first_and_exclusive_cases_run_together_at_the_end(role: str) -> None:
    catalogue = default_catalogue(role)
    selected = list(catalogue.cases.values())
    plan = order_cases(catalogue, selected, seed=11)
    durations = recorded_durations(catalogue)

    assert catalogue.sanity_id is not None
    sanity = catalogue.cases[catalogue.sanity_id]
    assert (plan[0], plan[-1]) == ((sanity, "sanity-first"), (sanity, "sanity-last"))
    main = [case for case, run in plan if run == "main"]
    assert sorted(case.id for case in main) == sorted(case.id for case in selected if case.id != catalogue.sanity_id)

    def group(case: Case) -> str:
        if case.exclusive:
            return "exclusive"
        return "long" if durations.get(case.id, 0.0) >= LONG_CASE_S else "short"

    groups = [group(case) for case in main]
    # each group is one run of neighbours, in the order long, short, exclusive (where a role has them)
    runs = [name for index, name in enumerate(groups) if index == 0 or groups[index - 1] != name]
    assert runs == [name for name in ("long", "short", "exclusive") if name in groups]
    if role == "verifier":
        assert {"long", "short", "exclusive"} <= set(groups)
        assert all("STAT" in case.id or "LOG" in case.id or "OUTPUT" in case.id
                   for case in main if group(case) == "long")


def test_a_seed_replays_its_order_and_another_seed_shuffles_within_each_group() -> None:
    catalogue = default_catalogue("verifier")
    selected = list(catalogue.cases.values())
    first = [case.id for case, _ in order_cases(catalogue, selected, seed=1)]
    assert [case.id for case, _ in order_cases(catalogue, selected, seed=1)] == first
    other = [case.id for case, _ in order_cases(catalogue, selected, seed=2)]
    assert other != first
    exclusive = {case.id for case in selected if case.exclusive}
    assert [i for i in first if i in exclusive] != [i for i in other if i in exclusive]
    assert [i for i in first if i not in exclusive] != [i for i in other if i not in exclusive]
