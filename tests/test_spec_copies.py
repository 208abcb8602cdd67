"""The draft and profile shipped in the package are what every quote is checked against.

That the copies equal the project's ground-truth spec folder (beside a
developer's checkout only) is checked by ``.ci/run`` before the test suite:
a user's fresh clone has nothing beside it, and no test looks outside the
repository.
"""

from __future__ import annotations

from sdcp_conformance import spec
from sdcp_conformance.harness.certify import default_catalogue


def test_the_shipped_texts_are_the_draft_and_the_profile() -> None:
    assert spec.text(spec.DRAFT).startswith("Speculative Decoding Coordination Protocol (SDCP)")
    assert "## Judging (how the harness turns observations into verdicts)" in spec.text(spec.PROFILE)


def test_every_case_quotes_the_draft_or_profile_verbatim() -> None:
    wrong = [case.id for case in default_catalogue().cases.values() if not spec.is_verbatim(case.quote)]
    assert not wrong, f"cases whose quote is not verbatim: {wrong}"


def test_quote_matching_rejects_invented_text() -> None:
    assert spec.is_verbatim("the verifier is the sole commit authority") is False
    assert spec.is_verbatim("The verifier is the sole commit authority.")
    assert spec.is_verbatim("Fencing: if epoch differs from the session epoch ... Idempotency:")

