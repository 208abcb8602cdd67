"""A fuzz campaign: start the environment, fuzz for a budget or a number of examples, save failures, replay.

The command line (:mod:`sdcp_conformance.cli.fuzz`) and the tests both use
these functions; they never print, they report through ``progress``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.fuzz import replay
from sdcp_conformance.fuzz.identity import CLEAN, FuzzedIut, replay_subject
from sdcp_conformance.fuzz.loop import LoopThread
from sdcp_conformance.fuzz.messages import MessageFuzzer, MessageStats, Recipe, run_messages
from sdcp_conformance.fuzz.scaffold import FuzzConfig, FuzzFailure, FuzzResult, FuzzStats, fuzz_for, save_failure
from sdcp_conformance.fuzz.stateful import StatefulRunner, replay_steps
from sdcp_conformance.fuzz.steps import Step, Violation
from sdcp_conformance.harness.environment import AppFactory
from sdcp_conformance.harness.target import TargetConfig

CHUNK = 25
"""Examples per Hypothesis run within a time budget (the budget is checked between runs)."""
QUIET_LOGGERS = ("sdcp_conformance.transport.server", "sdcp_conformance.reference.verifier.app")

Stats = FuzzStats | MessageStats


@dataclass(frozen=True)
class CampaignConfig(FuzzConfig):
    messages: bool = False
    step_count: int = 12
    out: Path = Path(".sdcp-fuzz") / "failures"
    strict: bool = False
    """NON-STRICT findings fail an example too (they are otherwise counted and reported per row)."""


@dataclass
class CampaignResult(FuzzResult[Stats]):
    """A verifier campaign's result (its stats are a message fuzzer's with ``--messages``)."""


@dataclass(frozen=True)
class ReplayResult:
    """A replay file run again (the verifier's or the drafter's campaign): whether it still fails, and where."""

    failure: FuzzFailure | None
    recorded: replay.ReplayFile
    against: FuzzedIut
    """The IUT the replay ran against."""
    other: bool = False
    """``against`` is not the recorded IUT (replayed there by explicit request)."""

    @property
    def fixed(self) -> bool:
        """The recorded IUT no longer fails (never said of another IUT)."""
        return self.failure is None and not self.other

    @property
    def replayed(self) -> int:
        return len(self.recorded.steps)

    @property
    def recorded_iut(self) -> FuzzedIut:
        return self.recorded.iut


def parse_budget(text: str) -> float:
    """``90s``, ``10m``, ``1h`` or plain seconds."""
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*", text)
    if found is None:
        raise InvalidArgument(f"--budget {text!r}: expected e.g. 90s, 10m or 1h")
    return float(found.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[found.group(2)]


def app_factory(mutant: str | None) -> AppFactory | None:
    if mutant is None or mutant in CLEAN:
        return None
    from sdcp_conformance.mutants import get_mutant
    from sdcp_conformance.mutants.fuzz_targets import FUZZ_MUTANTS_BY_NAME

    found = FUZZ_MUTANTS_BY_NAME.get(mutant)
    return (found or get_mutant(mutant)).factory


def run_campaign(config: CampaignConfig, progress: Callable[[Stats], None] | None = None) -> CampaignResult:
    if config.target is not None and config.mutant is not None:
        raise InvalidArgument("--mutant runs the embedded reference with a planted bug; it cannot go with --target")
    for name in QUIET_LOGGERS:  # a crashing IUT is judged from its answers, not from its log lines
        logging.getLogger(name).setLevel(logging.CRITICAL)
    iut = FuzzedIut.of("verifier", config.target, config.mutant)
    with LoopThread() as loop:
        loop.start(config.target, app_factory=app_factory(config.mutant))
        if config.messages:
            stats, failure = _messages(loop, config, progress)
        else:
            stats, failure = _stateful(loop, config, progress)
    saved = None
    if failure is not None:
        kind = "messages" if config.messages else "stateful"
        saved = save_failure(config.out, kind, failure, iut=iut, seed=config.seed)
    return CampaignResult(stats, failure, saved, iut)


def _stateful(loop: LoopThread, config: CampaignConfig,
              progress: Callable[[Stats], None] | None) -> tuple[Stats, FuzzFailure | None]:
    nonce = f"seed{config.seed}" if config.target is None else None  # a fresh embedded IUT: fully reproducible
    runner = StatefulRunner(loop, progress, strict=config.strict, nonce=nonce)
    return runner.stats, fuzz_for(
        lambda examples, seed: runner.run(examples=examples, seed=seed, step_count=config.step_count,
                                          database=config.database),
        examples=config.examples or 100, budget_s=config.budget_s, seed=config.seed, chunk=CHUNK)


def _messages(loop: LoopThread, config: CampaignConfig,
              progress: Callable[[Stats], None] | None) -> tuple[Stats, FuzzFailure | None]:
    fuzzer = MessageFuzzer(loop, progress, strict=config.strict)
    return fuzzer.stats, fuzz_for(
        lambda examples, seed: run_messages(fuzzer, examples=examples, seed=seed, database=config.database),
        examples=config.examples or 1000, budget_s=config.budget_s, seed=config.seed, chunk=CHUNK * 20)


def replay_file(path: Path, *, target: TargetConfig | None = None, mutant: str | None = None,
                other_iut: bool = False) -> ReplayResult:
    """Run a saved failure again against the IUT it failed against; ``fixed`` when it no longer fails.

    ``target`` and ``mutant`` name the IUT (the file's mutant applies when neither is given); another IUT than the
    recorded one is refused with :class:`InvalidArgument` unless ``other_iut``.
    """
    recorded = replay.load(path)
    against, other = replay_subject(recorded.iut, path, role="verifier", target=target, mutant=mutant,
                                    other_iut=other_iut)
    with LoopThread() as loop:
        loop.start(target, app_factory=app_factory(against.mutant))
        steps = recorded.stateful_steps()
        failure = _replay_messages(loop, steps) if recorded.kind == "messages" else replay_steps(loop, steps)
    return ReplayResult(failure, recorded, against, other)


def _replay_messages(loop: LoopThread, steps: list[Step]) -> FuzzFailure | None:
    fuzzer = MessageFuzzer(loop)
    for step in steps:
        try:
            loop.run(fuzzer.check(Recipe.from_step(step)))
        except Violation as violation:
            return FuzzFailure([step], violation.text, violation.level, row=violation.row)
    return None


__all__ = [
    "CampaignConfig",
    "CampaignResult",
    "ReplayResult",
    "app_factory",
    "parse_budget",
    "replay_file",
    "run_campaign",
]
