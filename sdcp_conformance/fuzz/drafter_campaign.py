"""A drafter fuzz campaign (``fuzz --role drafter``): start the drafter environment, fuzz, save, replay.

The environment is :class:`~sdcp_conformance.harness.drafter_environment.DrafterEnvironment`
(the embedded reference drafter, a mutant of it, or a target file's drafter)
on a :class:`~sdcp_conformance.fuzz.loop.LoopThread`. Failures are saved as
the verifier fuzzer's replay files are (:mod:`sdcp_conformance.fuzz.replay`),
recording the drafter they failed against (``"role": "drafter"``, the
target or the mutant) so that ``fuzz --role drafter --replay FILE`` replays
them against that drafter only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sdcp_conformance.fuzz import replay
from sdcp_conformance.fuzz.campaign import ReplayResult
from sdcp_conformance.fuzz.drafter_stateful import DrafterStatefulRunner, replay_drafter_steps
from sdcp_conformance.fuzz.identity import CLEAN, FuzzedIut, replay_subject
from sdcp_conformance.fuzz.loop import LoopThread
from sdcp_conformance.fuzz.scaffold import FuzzConfig, FuzzFailure, FuzzResult, FuzzStats, fuzz_for, save_failure
from sdcp_conformance.harness.drafter_environment import DrafterEnvironment
from sdcp_conformance.harness.target import TargetConfig

CHUNK = 10


@dataclass(frozen=True)
class DrafterCampaignConfig(FuzzConfig):
    step_count: int = 8
    out: Path = Path(".sdcp-fuzz") / "failures"
    strict: bool = False


@dataclass
class DrafterCampaignResult(FuzzResult[FuzzStats]):
    iut: FuzzedIut = field(default_factory=lambda: FuzzedIut("drafter"))
    """The drafter fuzzed (what the replay file records)."""


def app_factory(mutant: str | None) -> Callable[..., Any] | None:
    if mutant is None or mutant in CLEAN:
        return None
    from sdcp_conformance.mutants.drafter_catalogue import get_drafter_mutant

    return get_drafter_mutant(mutant).factory


def _start(loop: LoopThread, target: TargetConfig | None, mutant: str | None) -> DrafterEnvironment:
    return loop.run(DrafterEnvironment.start(target, app_factory=app_factory(mutant), reproducible=True), 120.0)


def run_drafter_campaign(config: DrafterCampaignConfig,
                         progress: Callable[[FuzzStats], None] | None = None) -> DrafterCampaignResult:
    logging.getLogger("sdcp_conformance.reference.drafter").setLevel(logging.CRITICAL)
    iut = FuzzedIut.of("drafter", config.target, config.mutant)
    with LoopThread() as loop:
        env = _start(loop, config.target, config.mutant)
        try:
            runner = DrafterStatefulRunner(loop, env, progress, strict=config.strict)
            failure = _fuzz(runner, config)
        finally:
            loop.run(env.stop(), 60.0)
    saved = None if failure is None else save(config.out, failure, iut=iut, seed=config.seed)
    return DrafterCampaignResult(runner.stats, failure, saved, iut)


def _fuzz(runner: DrafterStatefulRunner, config: DrafterCampaignConfig) -> FuzzFailure | None:
    return fuzz_for(lambda examples, seed: runner.run(examples=examples, seed=seed, step_count=config.step_count,
                                                      database=config.database),
                    examples=config.examples or 50, budget_s=config.budget_s, seed=config.seed, chunk=CHUNK)


def save(folder: Path, failure: FuzzFailure, *, iut: FuzzedIut, seed: int | None) -> Path:
    """A replay file of the shrunk steps, recording the drafter they failed against."""
    return save_failure(folder, "stateful", failure, iut=iut, seed=seed)


def replay_drafter_file(path: Path, *, target: TargetConfig | None = None, mutant: str | None = None,
                        other_iut: bool = False) -> ReplayResult:
    """Run a saved drafter failure again against the drafter it failed against; ``fixed`` when it no longer fails.

    Another drafter than the recorded one is refused with :class:`InvalidArgument` unless ``other_iut``.
    """
    recorded = replay.load(path)
    against, other = replay_subject(recorded.iut, path, role="drafter", target=target, mutant=mutant,
                                    other_iut=other_iut)
    with LoopThread() as loop:
        env = _start(loop, target, against.mutant)
        try:
            failure = replay_drafter_steps(loop, env, recorded.stateful_steps())
        finally:
            loop.run(env.stop(), 60.0)
    return ReplayResult(failure, recorded, against, other)


__all__ = ["DrafterCampaignConfig", "DrafterCampaignResult", "app_factory",
           "replay_drafter_file", "run_drafter_campaign", "save"]
