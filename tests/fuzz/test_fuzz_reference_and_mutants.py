"""The fuzzers against the embedded reference (finds nothing) and against mutants (finds each, replayably).

Short, fixed-seed runs: the CI fuzz job. A vendor's long campaign is
``sdcp-conformance fuzz --target target.toml --budget 10m``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.fuzz.messages import MessageStats
from sdcp_conformance.fuzz.rules.verifier import CampaignConfig, replay_file, run_campaign
from sdcp_conformance.fuzz.scaffold import FuzzStats

# `stored-verdict-refreshed` is left out: whether 300 examples reach a retry after the counters changed
# depends on timing (the IUT's measured load), so the fuzzer finds it only sometimes; the suite's
# VER-6.3-IDEMPOTENCY-004 kills it deterministically.
STATEFUL_MUTANTS = (
    "skip-epoch-check", "ignore-fenced-append", "no-read-back", "output-before-append",
    "reverify-retried-round", "concurrent-duplicates-committed",
    "skip-base-digest-check", "skip-round-check", "stale-base-without-state", "digest-little-endian",
    "d0-without-domain", "limit-off-by-one", "ignore-m-init", "contract-digest-raw-bytes", "accept-zero-q",
    "commit-on-q-unavailable", "record-without-epoch",
)
SEEDS = {"accept-zero-q": 3, "bad-proposal-as-bad-message": 3}
"""Campaign seeds other than 1: a zero-q proposal must reach a live rule-2 session, which seed 1's 300 examples
never do (seed 3 finds both within 6 steps). Generation depends on the seed alone (D-FUZZ-REPRO), so a seed
that finds a mutant here finds it anywhere."""
JUDGING_MUTANTS = {
    # mutant: the requirement row the fuzzer's failure must name (the judge decides, not the fuzzer)
    "stale-epoch-as-bad-message": "R-6.3-FENCING",
    "stale-base-as-bad-message": "R-6.3-STALE-BASE",
    "not-assigned-as-bad-message": "R-6.3-AUTHORIZATION",
    "limit-as-bad-message": "R-6.2-LIMIT",
    "bad-proposal-as-bad-message": "R-6.4-ZERO-Q",
    "stale-base-without-state": "R-6.3-STALE-STATE",
}


def test_a_short_stateful_fuzz_of_the_reference_finds_nothing(tmp_path: Path) -> None:
    result = run_campaign(CampaignConfig(examples=60, seed=20261130, out=tmp_path))
    assert result.failure is None, f"{result.failure.message}\n" + "\n".join(
        step.describe() for step in result.failure.steps)
    assert isinstance(result.stats, FuzzStats) and result.stats.steps > 300


@pytest.mark.parametrize("mutant", STATEFUL_MUTANTS)
def test_a_short_seeded_fuzz_finds_the_mutant_and_the_replay_reproduces_it(mutant: str, tmp_path: Path) -> None:
    result = run_campaign(CampaignConfig(mutant=mutant, examples=300, seed=SEEDS.get(mutant, 1), out=tmp_path))
    assert result.failure is not None and result.saved is not None, f"{mutant} survived the fuzzer"
    # Shrinking works: the transcript a vendor gets is a handful of steps, not the generated run.
    assert len(result.failure.steps) <= 8, f"{mutant}: {len(result.failure.steps)} steps after shrinking"
    replayed = replay_file(result.saved)
    assert not replayed.fixed, f"the replay of {result.saved} no longer fails against {mutant}"


@pytest.mark.parametrize(("mutant", "row"), sorted(JUDGING_MUTANTS.items()))
def test_the_fuzzer_fails_a_draft_named_refusal_of_the_wrong_type(mutant: str, row: str, tmp_path: Path) -> None:
    """P1-JUDGE-1 in the fuzzer too: the same judge as the suite, so the same sentence gets the same verdict."""
    result = run_campaign(CampaignConfig(mutant=mutant, examples=300, seed=SEEDS.get(mutant, 1), out=tmp_path))
    assert result.failure is not None, f"{mutant} survived the fuzzer"
    assert (result.failure.level, result.failure.row) == ("FAILED", row), result.failure.message


@pytest.mark.parametrize(("mutant", "seed"), [("limit-refused-after-commit", 4), ("self-decode-despite-load", 2)])
def test_the_fuzzer_fails_a_refusal_that_commits_and_a_load_blind_escalation(mutant: str, seed: int,
                                                                             tmp_path: Path) -> None:
    # Any seed that finds the bug in 300 examples will do; seed 2 finds limit-refused-after-commit too, after
    # ~95 s of generating and shrinking, seed 4 in ~2 s (measured by running the campaign with seeds 1-6).
    result = run_campaign(CampaignConfig(mutant=mutant, examples=300, seed=seed, out=tmp_path))
    assert result.failure is not None and result.failure.level == "FAILED", f"{mutant} survived the fuzzer"


def test_a_failure_that_no_longer_fails_is_reported_fixed(tmp_path: Path) -> None:
    """``fixed`` is said of the IUT that failed: the steps of a failure recorded against the embedded reference
    (here the mutant's, as if the reference had had its bug) no longer fail it."""
    result = run_campaign(CampaignConfig(mutant="skip-round-check", examples=300, seed=1, out=tmp_path))
    assert result.saved is not None
    recorded = json.loads(result.saved.read_text(encoding="utf-8"))
    assert recorded["mutant"] == "skip-round-check" and recorded["embedded"] is True
    recorded["mutant"] = None
    as_reference = tmp_path / "as-reference.json"
    as_reference.write_text(json.dumps(recorded), encoding="utf-8")
    replayed = replay_file(as_reference)
    assert replayed.failure is None and replayed.fixed and not replayed.other


def test_a_mutant_failure_against_the_clean_reference_is_refused_or_not_called_fixed(tmp_path: Path) -> None:
    result = run_campaign(CampaignConfig(mutant="skip-round-check", examples=300, seed=1, out=tmp_path))
    assert result.saved is not None
    with pytest.raises(InvalidArgument, match=r"skip-round-check.*--against-other-iut"):
        replay_file(result.saved, mutant="none")
    elsewhere = replay_file(result.saved, mutant="none", other_iut=True)
    assert elsewhere.failure is None and elsewhere.other and not elsewhere.fixed
    assert elsewhere.against.mutant is None and elsewhere.recorded_iut.mutant == "skip-round-check"


def test_the_message_fuzzer_finds_no_5xx_in_the_reference(tmp_path: Path) -> None:
    result = run_campaign(CampaignConfig(messages=True, examples=300, seed=5, out=tmp_path))
    stats = result.stats
    assert isinstance(stats, MessageStats)
    assert result.failure is None, result.failure.message
    assert stats.messages >= 300 and stats.server_errors == 0 and stats.dropped == 0
    assert stats.judge.deviations == []
    assert stats.canary_rounds >= 15


def test_the_message_fuzzer_fails_a_malformed_contract_refused_with_the_catch_all_type(tmp_path: Path) -> None:
    """Inside the contract the draft names 422 sdcp-bad-contract (Table 2): 400 is FAILED, not a note."""
    result = run_campaign(CampaignConfig(messages=True, mutant="bad-contract-as-bad-message", examples=400, seed=1,
                                         out=tmp_path))
    assert result.failure is not None
    assert (result.failure.level, result.failure.row) == ("FAILED", "R-6.1-VALIDATES"), result.failure.message


def test_the_message_fuzzer_finds_an_input_validation_crash(tmp_path: Path) -> None:
    result = run_campaign(CampaignConfig(messages=True, mutant="unchecked-token-range", examples=2000, seed=5,
                                         out=tmp_path))
    assert result.failure is not None and result.saved is not None
    assert "5xx" in result.failure.message
    assert not replay_file(result.saved).fixed
