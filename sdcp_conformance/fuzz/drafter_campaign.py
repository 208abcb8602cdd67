"""A drafter fuzz campaign (``fuzz --role drafter``): start the drafter environment, fuzz, save, replay.

The environment is :class:`~sdcp_conformance.harness.drafter_environment.DrafterEnvironment`
(the embedded reference drafter, a mutant of it, or a target file's drafter)
on a :class:`~sdcp_conformance.fuzz.loop.LoopThread`. Failures are saved as
the verifier fuzzer's replay files are (:mod:`sdcp_conformance.fuzz.replay`),
with ``"role": "drafter"`` added so that ``fuzz --role drafter --replay FILE``
knows whom to replay them against.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis.database import ExampleDatabase

from sdcp_conformance.fuzz import replay
from sdcp_conformance.fuzz.drafter_stateful import DrafterFuzzStats, DrafterStatefulRunner, replay_drafter_steps
from sdcp_conformance.fuzz.loop import LoopThread
from sdcp_conformance.fuzz.stateful import FuzzFailure
from sdcp_conformance.harness.drafter_environment import DrafterEnvironment
from sdcp_conformance.harness.target import TargetConfig

CHUNK = 10
CLEAN = ("none", "reference")


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


@dataclass(frozen=True)
class DrafterReplayResult:
    fixed: bool
    failure: FuzzFailure | None
    recorded: replay.ReplayFile


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
    with LoopThread() as loop:
        env = _start(loop, config.target, config.mutant)
        try:
            runner = DrafterStatefulRunner(loop, env, progress, strict=config.strict)
            failure = _fuzz(runner, config)
        finally:
            loop.run(env.stop(), 60.0)
    saved = None if failure is None else save(config.out, failure, mutant=config.mutant, seed=config.seed)
    return DrafterCampaignResult(runner.stats, failure, saved)


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


def save(folder: Path, failure: FuzzFailure, *, mutant: str | None, seed: int | None) -> Path:
    """A replay file of the shrunk steps, marked as the drafter's."""
    path = replay.save(folder, "stateful", [step.to_json() for step in failure.steps], failure.message,
                       failure.level, mutant=mutant, seed=seed)
    record = json.loads(path.read_text(encoding="utf-8"))
    record["role"] = "drafter"
    record["replay"] = record["replay"].replace("fuzz --replay", "fuzz --role drafter --replay")
    path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return path


def replay_drafter_file(path: Path, *, target: TargetConfig | None = None,
                        mutant: str | None = None) -> DrafterReplayResult:
    """Run a saved drafter failure again; ``fixed`` when it no longer fails."""
    recorded = replay.load(path)
    chosen = mutant if mutant is not None else (recorded.mutant if target is None else None)
    with LoopThread() as loop:
        env = _start(loop, target, chosen)
        try:
            failure = replay_drafter_steps(loop, env, recorded.stateful_steps())
        finally:
            loop.run(env.stop(), 60.0)
    return DrafterReplayResult(failure is None, failure, recorded)


__all__ = ["DrafterCampaignConfig", "DrafterCampaignResult", "DrafterReplayResult", "app_factory",
           "replay_drafter_file", "run_drafter_campaign", "save"]
