"""The requirement table is complete, verbatim and consistent with the cases; COVERAGE.md files are current."""

from __future__ import annotations

from pathlib import Path

import pytest

from sdcp_conformance import spec
from sdcp_conformance.harness.case import Catalogue, Level
from sdcp_conformance.harness.runner import CaseResult
from sdcp_conformance.judge import ROLES, TABLE, Verdict
from sdcp_conformance.report.coverage import (
    catalogues,
    coverage_file,
    coverage_json,
    coverage_rows,
    extract_candidates,
    generate,
    main,
    role_rows,
    rows_quoting,
)

ROOT = Path(__file__).resolve().parents[2]
CATALOGUES = catalogues()


def test_every_requirement_sentence_of_the_draft_is_quoted_by_a_row() -> None:
    missing = [(section, sentence) for section, sentence in extract_candidates(spec.text(spec.DRAFT))
               if not rows_quoting(section, sentence)]
    assert not missing, f"draft sentences with a requirement keyword that no row quotes: {missing}"


def test_extraction_finds_keywords_but_not_may() -> None:
    text = "6.3. Steps\n\nIt MUST do x. It MAY do y. It SHOULD NOT do z. Done.\n"
    assert extract_candidates(text) == [("6.3", "It MUST do x."), ("6.3", "It SHOULD NOT do z.")]


def test_rows_are_verbatim_unique_and_bind_a_known_party() -> None:
    ids = [row.id for row in TABLE]
    assert len(ids) == len(set(ids))
    for row in TABLE:
        assert row.binds in ROLES, row.id
        if row.from_declaration:  # the vendor's claim: no text of the draft or profile to quote
            assert row.id.startswith("DECL-") and row.level.strict and row.ambient, row.id
            continue
        assert spec.is_verbatim(row.quote), row.id
        assert row.id.startswith("R-") == row.from_draft, f"{row.id}: R- rows are the draft's, P1- the profile's"
        if not row.from_draft:
            assert row.id.split("/")[0] in row.source, row.id


def test_profile_rows_are_never_strict_unless_they_restate_the_draft() -> None:
    """P1-JUDGE-1: NON-STRICT is kept for what only the profile decides."""
    strict_profile = [row.id for row in TABLE if row.source.startswith("P1-") and row.level.strict]
    assert strict_profile == ["P1-CTL-3/RETRY"], strict_profile  # §6.3 idempotency, restated by the profile


@pytest.mark.parametrize("catalogue", CATALOGUES, ids=lambda catalogue: catalogue.role)
def test_each_cases_declared_level_is_that_of_its_own_sentence(catalogue: Catalogue) -> None:
    """A case's level is the level of the row it is about (its first), so what it reports matches its claim."""
    wrong = {case.id: (case.level.value, TABLE[case.rows[0]].level.value if case.rows else "no row")
             for case in catalogue.cases.values() if not case.rows or TABLE[case.rows[0]].level is not case.level}
    assert not wrong, f"cases whose level is not their first row's (case, row): {wrong}"


@pytest.mark.parametrize("catalogue", CATALOGUES, ids=lambda catalogue: catalogue.role)
def test_cases_declare_only_rows_of_their_role_and_ambient_ones_only_as_their_sentence(catalogue: Catalogue) -> None:
    for case in catalogue.cases.values():
        for position, row_id in enumerate(case.rows):
            row = TABLE[row_id]
            assert not row.ambient or position == 0, \
                f"{case.id} declares the ambient row {row_id} (judged everywhere anyway) besides its sentence"
            assert row.binds in (catalogue.role, "any"), f"{case.id} declares {row_id}, which binds {row.binds}"


@pytest.mark.parametrize("catalogue", CATALOGUES, ids=lambda catalogue: catalogue.role)
def test_every_row_of_a_role_is_judged_by_a_case_or_says_why_not(catalogue: Catalogue) -> None:
    rows = coverage_rows(catalogue)
    unjustified = [item.row.id for item in rows if not item.row.ambient and not item.justified]
    assert not unjustified, f"{catalogue.role} rows with neither a case nor a reason: {unjustified}"
    excused = [item.row.id for item in rows if item.judged and item.reason]
    assert not excused, f"rows judged by a case that still carry an excuse: {excused}"


def test_the_verifier_judges_every_verifier_row() -> None:
    verifier = next(catalogue for catalogue in CATALOGUES if catalogue.role == "verifier")
    unjudged = [item.row.id for item in coverage_rows(verifier)
                if item.row.binds == "verifier" and not item.row.ambient and not item.judged]
    assert not unjudged


def test_role_rows_include_rows_binding_every_party() -> None:
    ids = {row.id for row in role_rows("verifier")}
    assert "R-5.1-MTLS" in ids and "R-6.3-FENCING" in ids and "R-6.2-ONE-OUTSTANDING" not in ids


def test_coverage_json_carries_the_verdicts_of_cases_that_ran() -> None:
    verifier = next(catalogue for catalogue in CATALOGUES if catalogue.role == "verifier")
    case = verifier.cases["VER-6.3-FENCING-001"]
    records = {r["id"]: r for r in coverage_json(coverage_rows(verifier), [CaseResult(case, Verdict.PASSED)])}
    assert "VER-6.3-FENCING-001" in records["R-6.3-FENCING"]["cases"]
    assert records["R-6.3-FENCING"]["verdicts"] == {"VER-6.3-FENCING-001": "PASSED"}
    assert records["R-6.3-FENCING"]["refusal"] == "409 sdcp-stale-epoch"


@pytest.mark.parametrize("catalogue", CATALOGUES, ids=lambda catalogue: catalogue.role)
def test_committed_coverage_table_is_current(catalogue: Catalogue) -> None:
    committed = ROOT / coverage_file(catalogue.role)
    assert committed.is_file(), "run python -m sdcp_conformance.report.coverage"
    assert committed.read_text(encoding="utf-8") == generate(catalogue), \
        "run python -m sdcp_conformance.report.coverage"


def test_generator_check_mode(tmp_path: Path) -> None:
    assert main(["--root", str(tmp_path), "--check"]) == 1
    assert main(["--root", str(tmp_path)]) == 0
    assert main(["--root", str(tmp_path), "--check"]) == 0
    text = (tmp_path / coverage_file("verifier")).read_text(encoding="utf-8")
    assert "| R-6.3-FENCING | 6.3, 6.9 | MUST | 409 sdcp-stale-epoch |" in text


def test_levels_order_strict_above_profile_above_informational() -> None:
    assert Level.MUST.rank > Level.PROFILE.rank > Level.MAY.rank
