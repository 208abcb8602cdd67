"""The vendor's declaration decides the test plan (D-JUDGE-DECL-1), and a claim the IUT contradicts is a finding.

Against the embedded reference and a verifier changed here to refuse every rule-2 contract as not supported
(``sdcp-bad-contract``, which §5.1 Table 2 allows a verifier that does not offer rule 2): unclaimed, its rule-2
cases are NOT CLAIMED and the run can pass; claimed, the claim fails.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.harness.case import Case
from sdcp_conformance.harness.certify import certify
from sdcp_conformance.harness.runner import RUN_FAILED, RUN_INCOMPLETE, RUN_PASSED, CaseResult, RunReport
from sdcp_conformance.harness.terms import Terms
from sdcp_conformance.judge import Level, Verdict
from sdcp_conformance.judge.declaration import CLAIM_ROW, FEATURES, parse_declaration, template
from sdcp_conformance.protocol.errors import ProtocolError
from sdcp_conformance.protocol.messages import SessionOpen
from sdcp_conformance.protocol.problems import ProblemType
from sdcp_conformance.reference.verifier.app import VerifierApp

RULE2_CASE = "VER-6.4-RULE2-001"
OTHER_CASE = "VER-6.3-FENCING-001"
RUN_TIMEOUT_S = 600.0


class RefusesRule2(VerifierApp):
    """A verifier without rule 2: it refuses such contracts as the draft lets it (422 sdcp-bad-contract)."""

    def _check_model(self, opening: SessionOpen) -> None:
        super()._check_model(opening)
        if opening.contract.rule == 2:
            raise ProtocolError(ProblemType.BAD_CONTRACT, "rule 2 is not supported")


def _declaration(*claims: str, role: str = "verifier", version: str = "v1.2.3") -> Any:
    text = template(role).replace('implementation = ""', 'implementation = "test"')
    text = text.replace('version = ""', f'version = "{version}"').replace('contact = ""', 'contact = "t@example.org"')
    for claim in claims:
        text = text.replace(f"{claim} = false", f"{claim} = true")
    return parse_declaration(text.encode(), "test declaration", role)


def _certify(tmp_path: Path, declaration: Any, app: Any = None) -> RunReport:
    return asyncio.run(asyncio.wait_for(certify(None, selectors=(RULE2_CASE, OTHER_CASE), seed=7, app_factory=app,
                                                workdir=tmp_path, declaration=declaration), RUN_TIMEOUT_S))


def _verdicts(report: RunReport) -> dict[str, CaseResult]:
    return {result.case.id: result for result in report.results if result.run == "main"}


def test_the_template_lists_every_feature_of_the_role_unclaimed() -> None:
    for role, features in FEATURES.items():
        declaration = _declaration(role=role)
        assert declaration.claims == frozenset() and set(declaration.describe()["not_claimed"]) == set(features)


@pytest.mark.parametrize(("change", "complaint"), [
    (('version = "v1.2.3"', 'version = "main"'), "names a branch"),
    (('contact = "t@example.org"', 'contact = ""'), "contact is empty"),
    (("[features]", "[features]\nwarp_drive = true"), "unknown feature"),
    (("rule2 = false", 'rule2 = "yes"'), "must be true or false"),
])
def test_a_declaration_that_certifies_nothing_definite_is_refused_in_one_line(change: tuple[str, str],
                                                                             complaint: str) -> None:
    text = _declaration().data.decode().replace(*change)
    with pytest.raises(InvalidArgument, match=complaint):
        parse_declaration(text.encode(), "d.toml", "verifier")
    with pytest.raises(InvalidArgument, match="the IUT certified is a drafter"):
        parse_declaration(_declaration().data, "d.toml", "drafter")


@pytest.mark.slow
def test_unclaimed_rule2_cases_are_not_claimed_and_the_run_passes(tmp_path: Path) -> None:
    for app, name in ((None, "reference"), (RefusesRule2, "refuses-rule2")):
        report = _certify(tmp_path / name, _declaration(), app)
        verdicts = _verdicts(report)
        assert verdicts[RULE2_CASE].verdict is Verdict.NOT_CLAIMED, name
        assert "rule2" in verdicts[RULE2_CASE].message and not verdicts[RULE2_CASE].transcript
        assert verdicts[OTHER_CASE].verdict is Verdict.PASSED, name
        assert report.status == RUN_PASSED, (name, report.incomplete_reasons())


@pytest.mark.slow
def test_claimed_rule2_refused_as_unsupported_fails_on_the_claim(tmp_path: Path) -> None:
    report = _certify(tmp_path / "claimed", _declaration("rule2", "seeded_rule2"), RefusesRule2)
    result = _verdicts(report)[RULE2_CASE]
    assert result.verdict is Verdict.FAILED
    assert [finding.row for finding in result.findings] == [CLAIM_ROW]
    assert "sdcp-bad-contract" in result.findings[0].message and "rule2" in result.findings[0].message
    assert report.status == RUN_FAILED
    reference = _verdicts(_certify(tmp_path / "reference", _declaration("rule2", "seeded_rule2")))
    assert reference[RULE2_CASE].verdict is Verdict.PASSED


def _case(features: tuple[str, ...] = ()) -> Case:
    async def body(_ctx: object) -> None:
        return None

    return Case("X-1", "area", "6.4", "q", Level.MUST, body, rows=("R-5.1-RESOURCES",), features=features)


def test_a_claimed_feature_whose_case_was_skipped_makes_it_incomplete() -> None:
    for declaration, verdict in ((_declaration("load_hook"), Verdict.INCOMPLETE), (_declaration(), Verdict.SKIPPED),
                                 (None, Verdict.SKIPPED)):
        result = CaseResult(_case(("load_hook",)), Verdict.SKIPPED, "the target lacks load:control")
        Terms(declaration=declaration).apply(result)
        assert result.verdict is verdict
        assert ("claims load_hook" in result.message) is (verdict is Verdict.INCOMPLETE)
        assert "the target lacks load:control" in result.message


def test_a_case_using_a_feature_it_does_not_declare_is_a_harness_bug() -> None:
    result = CaseResult(_case(), Verdict.PASSED, features_used={"rule2", "not-a-verifier-feature"})
    Terms().apply(result)
    assert result.verdict is Verdict.ERROR and "harness bug" in result.message and "rule2" in result.message
    assert "not-a-verifier-feature" not in result.message
    declared = CaseResult(_case(("rule2",)), Verdict.PASSED, features_used={"rule2"})
    Terms().apply(declared)
    assert declared.verdict is Verdict.PASSED
    # A deviation is not hidden behind the harness's own bug ...
    failed = CaseResult(_case(), Verdict.FAILED, "a deviation", features_used={"rule2"})
    Terms().apply(failed)
    assert failed.verdict is Verdict.FAILED and "harness bug" in failed.notes[-1]
    # ... unless the plan ran the feature against an IUT that does not claim it.
    unclaimed = CaseResult(_case(), Verdict.FAILED, "a deviation", features_used={"rule2"})
    Terms(declaration=_declaration()).apply(unclaimed)
    assert unclaimed.verdict is Verdict.ERROR and "does not claim" in unclaimed.message


@pytest.mark.slow
def test_the_suite_tables_give_each_case_the_features_it_uses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A case the table leaves without its feature is caught by what it sends, not by what it says."""
    from sdcp_conformance.harness.certify import default_catalogue

    catalogue = default_catalogue("verifier")
    declared = catalogue.cases[RULE2_CASE]
    monkeypatch.setitem(catalogue.cases, RULE2_CASE, Case(**{**declared.__dict__, "features": ()}))
    report = asyncio.run(asyncio.wait_for(certify(None, selectors=(RULE2_CASE,), seed=7, workdir=tmp_path),
                                          RUN_TIMEOUT_S))
    result = _verdicts(report)[RULE2_CASE]
    assert result.verdict is Verdict.ERROR and "harness bug" in result.message
    assert report.status in (RUN_FAILED, RUN_INCOMPLETE)
