"""The failover campaign: quiet on the reference router, and it finds the fence-order and resume-record mutants
with a history of a few steps, saved to a file that replays (fixed seeds; each run is tens of seconds at most)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.fuzz.rules.failover import (
    FailoverConfig,
    load_failure,
    replay_failover,
    run_failover_campaign,
)

SHORT = 5
"""At most this many steps, ``setup`` included: open, a commit or two, a kill or a partition."""


def test_reference_router_survives_kills_partitions_and_drafter_deaths() -> None:
    result = run_failover_campaign(FailoverConfig(examples=12, seed=4))
    assert result.failure is None, f"{result.failure.message if result.failure else ''}"
    assert result.stats.failovers >= 3, "the schedule exercised failovers"


def test_fence_order_mutant_is_found_with_a_short_history_that_replays(tmp_path: Path) -> None:
    result = run_failover_campaign(FailoverConfig(mutant="resume-before-fence", examples=40, seed=1, out=tmp_path))
    failure = result.failure
    assert failure is not None and failure.message.startswith("R-6.9-FENCE-FIRST")
    assert len(failure.steps) <= SHORT, [step.describe() for step in failure.steps]
    assert result.saved is not None
    steps, mutant = load_failure(result.saved)
    assert mutant == "resume-before-fence" and steps == failure.steps
    again = replay_failover(result.saved)
    assert not again.fixed and again.failure is not None and again.failure.message.startswith("R-6.9-FENCE-FIRST")
    with pytest.raises(InvalidArgument, match="--against-other-iut"):
        replay_failover(result.saved, mutant="none")  # the clean reference router is another router
    elsewhere = replay_failover(result.saved, mutant="none", other_iut=True)
    assert elsewhere.failure is None and elsewhere.other and not elsewhere.fixed
    assert elsewhere.replayed == len(steps)


def test_resume_record_mutant_is_found_with_a_short_history() -> None:
    result = run_failover_campaign(FailoverConfig(mutant="resume-from-previous-record", examples=40, seed=1))
    failure = result.failure
    assert failure is not None and failure.message.startswith("R-6.9-ROUTER-RESUME")
    assert len(failure.steps) <= SHORT, [step.describe() for step in failure.steps]
    assert [step.rule for step in failure.steps][-1] in ("kill", "partition")
