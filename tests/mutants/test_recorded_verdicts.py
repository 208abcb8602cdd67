"""The per-case verdicts recorded at seed 1 (``tools/record_verdicts.py``) before the role layer was folded into
one: each role's reference over its whole catalogue and every mutant over its recorded killers give them still."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from sdcp_conformance.harness.case import Case, Level, Verdict
from sdcp_conformance.harness.runner import CaseResult, RunReport
from sdcp_conformance.harness.suites import SUITES
from sdcp_conformance.mutants.catalogue import mutants_for
from sdcp_conformance.mutants.verdict_record import (
    REFERENCE,
    differences,
    load_record,
    merged,
    record_role,
    verdicts_of,
)

RECORD = Path(__file__).resolve().parents[1] / "fixtures" / "recorded-verdicts.json"


def test_the_recording_covers_every_role_its_reference_and_every_mutant() -> None:
    record = load_record(RECORD)
    assert set(record) == set(SUITES)
    for role, runs in record.items():
        assert REFERENCE in runs
        assert set(runs) - {REFERENCE} == {mutant.name for mutant in mutants_for(role)}, role
        assert all(verdict == "PASSED" for verdict in runs[REFERENCE].values()), role
        for name, cases in runs.items():
            if name != REFERENCE:
                assert any(verdict in ("FAILED", "NON-STRICT") for verdict in cases.values()), \
                    f"{role} {name}: recorded without a kill that held in every recording"


def _case(case_id: str) -> Case:
    async def run(ctx: object) -> None:
        return None

    return Case(case_id, "area", "1", "quote", Level.MUST, run, "title")


def test_a_case_that_runs_twice_keeps_both_verdicts_and_differences_name_each_change() -> None:
    sanity, other = _case("X-SANITY-001"), _case("X-OTHER-001")
    report = RunReport(1, [CaseResult(sanity, Verdict.PASSED), CaseResult(other, Verdict.FAILED),
                           CaseResult(sanity, Verdict.INCOMPLETE)], 0.0, 0.0, {})
    found = verdicts_of(report)
    assert found == {"X-OTHER-001": "FAILED", "X-SANITY-001": "PASSED", "X-SANITY-001#2": "INCOMPLETE"}
    recorded = {"m": {"X-OTHER-001": "FAILED", "X-SANITY-001": "PASSED", "X-SANITY-001#2": "PASSED"}}
    assert differences(recorded, {"m": found}) == ["m X-SANITY-001#2: recorded PASSED, now INCOMPLETE"]
    assert differences(recorded, {"m": {"X-OTHER-001": "FAILED"}}) == [
        "m X-SANITY-001: recorded PASSED, now absent", "m X-SANITY-001#2: recorded PASSED, now absent"]
    assert differences({}, {"n": found}) == ["n: not in the recording"]
    assert differences(recorded, recorded) == []


def test_verdicts_that_differ_between_recordings_are_all_kept_and_any_of_them_matches() -> None:
    first = {"m": {"A": "FAILED", "B": "PASSED"}, "reference": {"A": "PASSED"}}
    second = {"m": {"A": "NON-STRICT", "B": "PASSED"}, "reference": {"A": "PASSED"}}
    record = merged([first, second, first])
    assert record == {"m": {"A": "FAILED|NON-STRICT", "B": "PASSED"}, "reference": {"A": "PASSED"}}
    assert differences(record, {"m": {"A": "NON-STRICT", "B": "PASSED"}}) == []
    assert differences(record, {"m": {"A": "PASSED", "B": "PASSED"}}) == ["m A: recorded FAILED|NON-STRICT, now PASSED"]
    assert differences(record, {"reference": {"A": "FAILED"}}) == ["reference A: recorded PASSED, now FAILED"]


@pytest.mark.slow
@pytest.mark.parametrize("role", sorted(SUITES))
def test_the_same_seed_gives_the_recorded_verdicts(role: str) -> None:
    """The reference's verdicts exactly; a mutant's within what the recordings saw (a few mutants' bugs show only
    with some timings, and were recorded with each verdict they got). A mutant whose verdicts differ is certified
    once more, and only a difference that holds both times is reported: one timing the recordings did not meet
    is not a change the code made."""
    recorded = load_record(RECORD)[role]
    now = asyncio.run(record_role(role, jobs=2))
    changed = differences(recorded, now)
    differing = {line.split(" ", 1)[0] for line in changed} - {REFERENCE}
    if differing:
        chosen = [mutant for mutant in mutants_for(role) if mutant.name in differing]
        again = asyncio.run(record_role(role, mutants=chosen, jobs=2, with_reference=False))
        held = set(differences(recorded, again))
        changed = [line for line in changed if line.split(" ", 1)[0] == REFERENCE or line in held]
    assert not changed, "\n".join(changed)
