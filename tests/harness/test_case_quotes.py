"""A case quotes its primary requirement row's sentence unless its declaration quotes more (or other) text."""

from __future__ import annotations

import pytest

from sdcp_conformance import spec
from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.harness.case import Case, Catalogue, Level
from sdcp_conformance.harness.certify import default_catalogue
from sdcp_conformance.harness.target import ROLES
from sdcp_conformance.judge import TABLE

CASES = [case for role in ROLES for case in default_catalogue(role).cases.values()]


async def _noop(ctx: object) -> None:
    return None


def test_the_suites_have_cases_of_every_role() -> None:
    assert {case.role for case in CASES} == set(ROLES)


def test_every_quote_is_the_primary_rows_sentence_or_verbatim_text() -> None:
    wrong = [case.id for case in CASES
             if not case.rows or (case.quote != TABLE[case.primary_row].quote and not spec.is_verbatim(case.quote))]
    assert not wrong, f"cases whose quote is neither their primary row's sentence nor verbatim text: {wrong}"


def test_no_declaration_repeats_its_primary_rows_quote() -> None:
    repeated = [case.id for case in CASES if case.quote_declared and case.quote == TABLE[case.primary_row].quote]
    assert not repeated, f"cases declaring quote= equal to their primary row's sentence (leave quote= out): {repeated}"


def test_a_case_without_a_quote_takes_its_primary_rows_sentence() -> None:
    catalogue = Catalogue()
    catalogue.case("TEST-QUOTE-001", area="a", section="6.3", level=Level.MUST,
                   rows=("R-6.3-ATOMIC", "R-6.3-FENCING"))(_noop)
    catalogue.case("TEST-QUOTE-002", area="a", section="6.3", quote="The verifier is the sole commit authority.",
                   level=Level.MUST, rows=("R-6.3-ATOMIC",))(_noop)
    defaulted, declared = catalogue.cases["TEST-QUOTE-001"], catalogue.cases["TEST-QUOTE-002"]
    assert defaulted.quote == TABLE["R-6.3-ATOMIC"].quote
    assert not defaulted.quote_declared
    assert declared.quote == "The verifier is the sole commit authority."
    assert declared.quote_declared
    assert defaulted.describe()["quote"] == TABLE["R-6.3-ATOMIC"].quote
    assert "quote_declared" not in defaulted.describe()


def test_a_case_built_directly_has_a_declared_quote() -> None:
    case = Case("TEST-QUOTE-003", "a", "6.3", "a quote", Level.MUST, _noop)
    assert case.quote_declared


def test_a_case_without_rows_or_quote_is_refused_at_once() -> None:
    catalogue = Catalogue()
    with pytest.raises(InvalidArgument) as refused:
        catalogue.case("TEST-QUOTE-004", area="a", section="6.3", level=Level.MUST)
    message = str(refused.value)
    assert "TEST-QUOTE-004" in message
    assert "\n" not in message
    assert not catalogue.cases


def test_a_case_whose_primary_row_is_unknown_and_without_quote_is_refused() -> None:
    with pytest.raises(InvalidArgument, match="TEST-QUOTE-005"):
        Catalogue().case("TEST-QUOTE-005", area="a", section="6.3", level=Level.MUST, rows=("R-NO-SUCH-ROW",))
