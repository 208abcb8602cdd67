"""P1-ERR-1 and P1-JUDGE-1 on a refusal's problem ``type``: the harness matches it by its suffix, so the refusal
counts, and a type that is not the whole URN is a NON-STRICT deviation of its own (P1-JUDGE-1 names "the type's URN
prefix under P1-ERR-1" as NON-STRICT)."""

from __future__ import annotations

import json

import pytest

from sdcp_conformance.harness.case import Catalogue, Level
from sdcp_conformance.harness.iut import Answer
from sdcp_conformance.harness.judging import JudgedContext
from sdcp_conformance.judge import Verdict

CATALOGUE = Catalogue(role="verifier")


@CATALOGUE.case("T-ERR-1", area="fencing", section="6.3", quote="respond 409", level=Level.MUST,
                rows=("R-6.3-FENCING",))
async def refused(ctx: JudgedContext) -> None:
    """A stand-in case: only its declaration is used."""


def _answer(type_uri: str) -> Answer:
    body = json.dumps({"type": type_uri, "title": "x", "status": 409}).encode()
    return Answer(409, body, "application/problem+json")


@pytest.mark.parametrize(("type_uri", "severities"), [
    ("urn:ietf:params:sdcp:problem:sdcp-stale-epoch", []),
    ("urn:ietf:params:sdcp:sdcp-stale-epoch", [Verdict.NON_STRICT]),
    ("https://example.com/problems/sdcp-stale-epoch", [Verdict.NON_STRICT]),
    ("sdcp-stale-epoch", [Verdict.NON_STRICT]),
    ("urn:ietf:params:sdcp:problem:sdcp-stale-base", [Verdict.FAILED]),
])
def test_a_type_is_matched_by_its_suffix_and_judged_on_its_urn(type_uri: str, severities: list[Verdict]) -> None:
    ctx = JudgedContext(CATALOGUE.cases["T-ERR-1"], 1, "main")
    matched = ctx.expect_refusal(_answer(type_uri), "R-6.3-FENCING", what="a stale epoch")
    assert matched is (Verdict.FAILED not in severities)
    assert [finding.severity for finding in ctx.findings] == severities
    assert all(finding.row == "P1-ERR-1" for finding in ctx.findings if finding.severity is Verdict.NON_STRICT)
