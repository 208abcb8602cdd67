"""The draft and profile shipped in the package are the project's ground truth, unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest

from sdcp_conformance import spec
from sdcp_conformance.harness.certify import default_catalogue

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "spec"


@pytest.mark.parametrize("name", [spec.DRAFT, spec.PROFILE])
def test_shipped_copy_matches_shared_spec(name: str) -> None:
    original = SHARED / name
    assert original.is_file(), f"the ground truth {original} is missing beside the checkout"
    assert spec.text(name) == original.read_text(encoding="utf-8")


def test_every_case_quotes_the_draft_or_profile_verbatim() -> None:
    wrong = [case.id for case in default_catalogue().cases.values() if not spec.is_verbatim(case.quote)]
    assert not wrong, f"cases whose quote is not verbatim: {wrong}"


def test_quote_matching_rejects_invented_text() -> None:
    assert spec.is_verbatim("the verifier is the sole commit authority") is False
    assert spec.is_verbatim("The verifier is the sole commit authority.")
    assert spec.is_verbatim("Fencing: if epoch differs from the session epoch ... Idempotency:")

