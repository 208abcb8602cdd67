"""The requirements list is complete and verbatim; COVERAGE.md is current; every requirement is covered or excused."""

from __future__ import annotations

from pathlib import Path

from sdcp_conformance import spec
from sdcp_conformance.harness.case import Case, Catalogue, Level
from sdcp_conformance.harness.certify import default_catalogue
from sdcp_conformance.report.coverage import (
    COVERAGE_FILE,
    coverage_json,
    covering_cases,
    extract_candidates,
    generate,
    main,
    profile_items,
    profile_rows,
    requirement_rows,
)
from sdcp_conformance.suites.verifier.requirements import REQUIREMENTS, VERIFIER, Requirement

ROOT = Path(__file__).resolve().parents[2]


async def _noop(ctx: object) -> None:
    return None


def _case(case_id: str, quote: str, profile: tuple[str, ...] = ()) -> Case:
    return Case(case_id, "fencing", "6.3", quote, Level.MUST, _noop, profile=profile)


def test_every_requirement_sentence_of_the_draft_is_listed() -> None:
    listed = [(r.section, spec.normalize(r.sentence)) for r in REQUIREMENTS]
    missing = [(section, sentence) for section, sentence in extract_candidates(spec.text(spec.DRAFT))
               if not any(s == section and text in sentence for s, text in listed)]
    assert not missing


def test_extraction_finds_keywords_but_not_may() -> None:
    text = "6.3. Steps\n\nIt MUST do x. It MAY do y. It SHOULD NOT do z. Done.\n"
    assert extract_candidates(text) == [("6.3", "It MUST do x."), ("6.3", "It SHOULD NOT do z.")]


def test_requirements_are_verbatim_unique_and_well_formed() -> None:
    ids = [r.id for r in REQUIREMENTS]
    assert len(ids) == len(set(ids))
    for requirement in REQUIREMENTS:
        assert spec.is_verbatim(requirement.sentence), requirement.id
        assert requirement.id.startswith(f"R-{requirement.section}-")
        for passage in requirement.passages:
            assert spec.normalize(passage) in spec.normalize(requirement.sentence), requirement.id
        if requirement.binds != VERIFIER:
            assert requirement.reason, f"{requirement.id} binds {requirement.binds} but gives no reason"


def test_a_case_covers_a_requirement_by_quoting_a_passage_whitespace_insensitively() -> None:
    requirement = Requirement("R-6.3-99", "6.3", Level.MUST, "The verifier MUST do a thing, always.",
                              match=("MUST do a thing",))
    cases = [_case("VER-A", "The verifier   MUST do\na thing ... other text"), _case("VER-B", "MUST do things")]
    assert covering_cases(requirement, cases) == ("VER-A",)


def test_profile_rows_count_citations_and_quotes() -> None:
    catalogue = Catalogue()
    catalogue.add(_case("VER-A", "x", profile=("P1-LOG-2",)))
    catalogue.add(_case("VER-B", "answers 409 to a `PUT` whose new record's epoch is below the highest fence epoch"))
    rows = {row.item: row.cases for row in profile_rows(catalogue)}
    assert rows["P1-LOG-2"] == ("VER-A", "VER-B")
    assert set(rows) == set(profile_items())


def test_coverage_json_carries_the_verdicts_of_cases_that_ran() -> None:
    catalogue = Catalogue()
    case = catalogue.add(_case("VER-A", "If the append fails because the log has been fenced, the verifier MUST "
                                        "discard the round, release no output, and stop serving the session."))
    from sdcp_conformance.harness.case import Verdict
    from sdcp_conformance.harness.runner import CaseResult

    records = {r["id"]: r for r in coverage_json(requirement_rows(catalogue), [CaseResult(case, Verdict.PASSED)])}
    assert records["R-6.3-03"]["cases"] == ["VER-A"]
    assert records["R-6.3-03"]["verdicts"] == {"VER-A": "PASSED"}
    assert records["R-6.1-02"]["reason"]


def test_every_requirement_has_a_case_or_a_reason() -> None:
    unjustified = [row.requirement.id for row in requirement_rows(default_catalogue()) if not row.justified]
    assert not unjustified, f"requirements with neither a case nor a reason: {unjustified}"


def test_committed_coverage_table_is_current() -> None:
    committed = ROOT / COVERAGE_FILE
    assert committed.is_file(), "run python -m sdcp_conformance.report.coverage"
    assert committed.read_text(encoding="utf-8") == generate(), "run python -m sdcp_conformance.report.coverage"


def test_generator_check_mode(tmp_path: Path) -> None:
    output = tmp_path / "COVERAGE.md"
    assert main(["--output", str(output), "--check"]) == 1
    assert main(["--output", str(output)]) == 0
    assert main(["--output", str(output), "--check"]) == 0
    assert "| R-6.3-03 | 6.3 | MUST | verifier |" in output.read_text(encoding="utf-8")
