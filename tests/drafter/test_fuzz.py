"""`fuzz --role drafter`: the reference survives a short campaign; three planted bugs are found, shrunk, replayed.

Fixed seeds and a reproducible embedded drafter (D-DRF-17) make the campaigns repeat; each finding must be the
bug's own row, shrunk to a few steps, and its replay file must fail again against the mutant and be reported
fixed against the clean reference.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.fuzz.rules.drafter import DrafterCampaignConfig, replay_drafter_file, run_drafter_campaign

FINDS = {
    "drf-pipelined-proposals": ({"R-6.2-ONE-OUTSTANDING"}, 1),
    "drf-resync-digest-unchecked": ({"R-6.2-BASE", "R-4.2-CHAIN"}, 2),
    "drf-retry-redrafts": ({"R-6.9-RETRY"}, 2),
}
"""Mutant → (the rows its finding may name, the campaign seed)."""
MAX_STEPS = 4


@pytest.mark.slow
def test_the_reference_drafter_survives_a_short_campaign(tmp_path: Path) -> None:
    result = run_drafter_campaign(DrafterCampaignConfig(examples=15, seed=3, out=tmp_path))
    assert result.failure is None, f"{result.failure.message if result.failure else ''}"
    assert not result.stats.flaky
    assert result.stats.judge.summary() == {}, [(d.row, d.message) for d in result.stats.judge.deviations]
    assert result.stats.examples >= 15


@pytest.mark.slow
@pytest.mark.parametrize("mutant", sorted(FINDS))
def test_a_planted_bug_is_found_shrunk_and_replayed(mutant: str, tmp_path: Path) -> None:
    rows, seed = FINDS[mutant]
    result = run_drafter_campaign(DrafterCampaignConfig(mutant=mutant, examples=40, seed=seed, out=tmp_path))
    failure = result.failure
    assert failure is not None, f"{mutant} was not found in {result.stats.examples} examples"
    assert failure.row in rows and failure.level == "FAILED", failure.message
    assert not failure.flaky and 1 < len(failure.steps) <= MAX_STEPS, [step.describe() for step in failure.steps]
    assert result.saved is not None
    again = replay_drafter_file(result.saved)
    assert not again.fixed and again.failure is not None and again.failure.row in rows
    with pytest.raises(InvalidArgument, match="--against-other-iut"):
        replay_drafter_file(result.saved, mutant="none")  # the clean reference is another drafter
    elsewhere = replay_drafter_file(result.saved, mutant="none", other_iut=True)
    assert elsewhere.failure is None and elsewhere.other and not elsewhere.fixed
