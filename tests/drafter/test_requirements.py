"""The drafter's requirement rows: verbatim, complete for the draft's drafter sentences, judged, and covered."""

from __future__ import annotations

import re
from pathlib import Path

from sdcp_conformance import spec
from sdcp_conformance.harness.certify import default_catalogue
from sdcp_conformance.judge import TABLE
from sdcp_conformance.judge.requirements.drafter import ROWS
from sdcp_conformance.report.coverage import coverage_file, coverage_rows, extract_candidates, generate, rows_quoting

ROOT = Path(__file__).resolve().parents[2]
CATALOGUE = default_catalogue("drafter")


def test_rows_are_verbatim_and_bind_the_drafter() -> None:
    for row in ROWS:
        assert spec.is_verbatim(row.quote), row.id
        assert row.binds == "drafter", row.id
        assert row.id.startswith(("R-", "P1-")), row.id


def test_no_drafter_row_is_left_unjudged() -> None:
    judged = {row for case in CATALOGUE.cases.values() for row in case.rows}
    for row in TABLE.binding("drafter"):
        assert not row.not_judged, f"{row.id} still says it is not judged: {row.not_judged}"
        assert row.ambient or row.id in judged, f"no drafter case declares {row.id}"


DRAFTER_SENTENCES = (
    "A contract that contains a key not defined by this document MUST be rejected",
    "with mutual certificate authentication is REQUIRED",
    "Unknown map keys MUST be ignored",
    "unknown action value MUST treat it as",
    "The drafter MUST sample each proposed token from exactly the row it publishes.",
    "A drafter MUST NOT have more than one outstanding proposal per session.",
    "The following rule is RECOMMENDED.",
    "the drafter MUST discard its draft state",
    "The proposal MUST carry q_rows",
    "Drafters MUST NOT use this derivation",
    "the current drafter MUST stop proposing for the session.",
)
"""The draft's requirement sentences that bind a drafter (or every party, the drafter included)."""


def test_every_drafter_requirement_sentence_of_the_draft_maps_to_a_drafter_case() -> None:
    """Each MUST/SHOULD/RECOMMENDED sentence binding a drafter is quoted by a drafter (or every-party) row that a
    drafter case judges, or that is judged in every conversation."""
    judged = {row for case in CATALOGUE.cases.values() for row in case.rows}
    seen = set()
    for section, sentence in extract_candidates(spec.text(spec.DRAFT)):
        rows = rows_quoting(section, sentence)
        assert rows, f"no row quotes §{section}: {sentence}"
        drafter_rows = [row for row in rows if row.binds in ("drafter", "any")]
        for marker in DRAFTER_SENTENCES:
            if marker in sentence:
                seen.add(marker)
                assert drafter_rows, f"no drafter row quotes §{section}: {sentence}"
        if drafter_rows:
            assert any(row.ambient or row.id in judged for row in drafter_rows), \
                f"no drafter case judges §{section}: {sentence}"
    assert seen == set(DRAFTER_SENTENCES)


def test_cases_declare_known_rows_and_their_level() -> None:
    for case in CATALOGUE.cases.values():
        assert case.role == "drafter"
        assert re.fullmatch(r"DRF-(SANITY|[0-9.]+|P1-[A-Z]+-[0-9]+)-[A-Z0-9-]*[0-9]{3}", case.id), case.id
        assert spec.is_verbatim(case.quote), case.id
        assert case.rows, f"{case.id} declares no row: its level would be nobody's"
        for position, row in enumerate(case.rows):
            # An ambient row is judged everywhere already; a case names one only as the sentence it is about.
            assert row in TABLE and (not TABLE[row].ambient or position == 0), f"{case.id} declares {row}"
        assert TABLE[case.rows[0]].level is case.level, f"{case.id}: level {case.level} vs its first row"


def test_every_area_has_a_case_that_runs_without_optional_capabilities() -> None:
    areas = {case.area for case in CATALOGUE.cases.values()}
    unconditional = {case.area for case in CATALOGUE.cases.values() if not case.requires}
    assert areas == unconditional


def test_committed_coverage_table_is_current() -> None:
    committed = ROOT / coverage_file("drafter")
    assert committed.is_file(), "run python -m sdcp_conformance.report.coverage"
    assert committed.read_text(encoding="utf-8") == generate(CATALOGUE)
    rows = coverage_rows(CATALOGUE)
    assert all(item.judged or item.row.ambient or item.row.binds == "any" for item in rows
               if item.row.binds == "drafter")
