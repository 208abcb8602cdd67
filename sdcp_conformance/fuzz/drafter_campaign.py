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
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis.database import ExampleDatabase

from sdcp_conformance.fuzz import replay
from sdcp_conformance.fuzz.campaign import ReplayResult
from sdcp_conformance.fuzz.drafter_stateful import DrafterFuzzStats, DrafterStatefulRunner, replay_drafter_steps
from sdcp_conformance.fuzz.identity import CLEAN, FuzzedIut, replay_subject
from sdcp_conformance.fuzz.loop import LoopThread
from sdcp_conformance.fuzz.stateful import FuzzFailure
from sdcp_conformance.harness.drafter_environment import DrafterEnvironment
from sdcp_conformance.harness.target import TargetConfig

CHUNK = 10


@dataclass(frozen=True)
class DrafterCampaignConfig:
    target: TargetConfig | None = None
    mutant: str | None = None
    examples: int | None = None
    budget_s: float | None = None
    seed: int = 0
    database: ExampleDatabase | None = None
    step_count: int = 8
    out: Path = Path(".sdcp-fuzz") / "failures"
    strict: bool = False


@dataclass
class DrafterCampaignResult:
    stats: DrafterFuzzStats
    failure: FuzzFailure | None
    saved: Path | None
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
                         progress: Callable[[DrafterFuzzStats], None] | None = None) -> DrafterCampaignResult:
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
    if config.budget_s is None:
        return runner.run(examples=config.examples or 50, seed=config.seed, step_count=config.step_count,
                          database=config.database)
    started, round_ = time.monotonic(), 0
    while time.monotonic() - started < config.budget_s:
        failure = runner.run(examples=CHUNK, seed=config.seed + round_, step_count=config.step_count,
                             database=config.database)
        if failure is not None:
            return failure
        round_ += 1
    return None


def save(folder: Path, failure: FuzzFailure, *, iut: FuzzedIut, seed: int | None) -> Path:
    """A replay file of the shrunk steps, recording the drafter they failed against."""
    return replay.save(folder, "stateful", [step.to_json() for step in failure.steps], failure.message,
                       failure.level, iut=iut, seed=seed)


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
