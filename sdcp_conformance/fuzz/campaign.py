"""The one campaign loop, whatever the role under test: start the environment, fuzz for a budget or a number of
examples, save the failure, replay.

A role (:mod:`sdcp_conformance.fuzz.rules`) says on a :class:`Role` what is
its own: its environment and planted bugs, its runner, its defaults and the
format of its replay files. Everything else is here, once: :func:`run` fuzzes
the IUT a :class:`FuzzConfig` names (:func:`fuzz_for`: a number of examples,
or chunks of examples from successive seeds until a time budget is spent) and
saves the shrunk failure as a replay file (:mod:`sdcp_conformance.fuzz.replay`)
recording the IUT it failed against; :func:`replay` runs such a file again
against that IUT only. The command line (:mod:`sdcp_conformance.cli.fuzz`) and
the tests use these functions; they never print, they report through
``progress``.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from hypothesis.database import ExampleDatabase

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.fuzz import replay as replay_files
from sdcp_conformance.fuzz.identity import CLEAN, FuzzedIut, one_iut, replay_subject
from sdcp_conformance.fuzz.loop import LoopThread
from sdcp_conformance.fuzz.scaffold import FuzzFailure, Runner
from sdcp_conformance.harness.environment import RoleEnvironment
from sdcp_conformance.harness.target import TargetConfig

DEFAULT_OUT = Path(".sdcp-fuzz") / "failures"

F = TypeVar("F")
T = TypeVar("T")
C = TypeVar("C", bound="FuzzConfig")
Env = TypeVar("Env", bound=RoleEnvironment)
Progress = Callable[[Any], None]


@dataclass(frozen=True)
class FuzzConfig:
    """What every role's campaign is told: whom to fuzz, for how many examples or how long, from which seed, with
    how many steps an example, which corpus, and where a failure is saved."""

    target: TargetConfig | None = None
    mutant: str | None = None
    examples: int | None = None
    """None: the role's default (:attr:`Role.examples`)."""
    seed: int = 0
    step_count: int = 12
    database: ExampleDatabase | None = None
    out: Path | None = DEFAULT_OUT
    """Where a failure is saved as a replay file; None: it is not saved."""
    budget_s: float | None = None
    strict: bool = False
    """NON-STRICT findings fail an example too (they are otherwise counted and reported per row)."""


@dataclass
class FuzzResult(Generic[T]):
    """What a campaign found: its stats, the shrunk failure and where it was saved, and whom it fuzzed."""

    stats: T
    failure: FuzzFailure | None
    saved: Path | None
    iut: FuzzedIut = field(default_factory=FuzzedIut)
    """The IUT fuzzed (what the replay file records)."""


@dataclass(frozen=True)
class ReplayResult:
    """A replay file run again (any role's campaign): whether it still fails, and where."""

    failure: FuzzFailure | None
    recorded: replay_files.ReplayFile
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


class Role(Generic[C, Env]):
    """What a role's campaign is made of: the loop (:func:`run`, :func:`replay`) asks it, and nothing else differs.

    A role names itself, its defaults, the loggers its campaigns quiet and its replay file format; it finds its
    planted bugs (:meth:`planted`), starts its environment (:meth:`environment`, or :meth:`start` and :meth:`stop`
    where the loop holds it) and builds its runner (:meth:`runner`). A role that fuzzes otherwise than with its
    runner alone overrides :meth:`fuzz`, :meth:`kind` and :meth:`replay_steps`.
    """

    name: ClassVar[str]
    """The role of the IUT (as a replay file and ``--role`` name it)."""
    examples: ClassVar[int]
    """Examples when the config names none."""
    chunk: ClassVar[int]
    """Examples per Hypothesis run within a time budget (the budget is checked between runs)."""
    loggers: ClassVar[tuple[str, ...]] = ()
    """Quieted while fuzzing: a crashing IUT is judged from its answers, not from its log lines."""
    format: ClassVar[replay_files.ReplayFormat] = replay_files.FUZZ

    # ------------------------------------------------------------------ what a role says

    def planted(self, mutant: str) -> Any:
        """The app factory of the role's reference with the planted bug ``mutant``."""
        raise NotImplementedError

    def environment(self, target: TargetConfig | None, app_factory: Any) -> Coroutine[Any, Any, Env]:
        """The coroutine that starts the role's environment for ``target``, else for ``app_factory``'s app (None:
        the embedded reference)."""
        raise NotImplementedError

    def runner(self, loop: LoopThread, env: Env, config: C | None, progress: Progress | None) -> Runner[Any, Any]:
        """The runner of a campaign told ``config`` (None: of a replay)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ what the loop calls

    def app_factory(self, mutant: str | None) -> Any:
        """None for the clean embedded reference, else the planted bug's app factory."""
        return None if mutant is None or mutant in CLEAN else self.planted(mutant)

    def quiet(self) -> None:
        for name in self.loggers:
            logging.getLogger(name).setLevel(logging.CRITICAL)

    def start(self, loop: LoopThread, target: TargetConfig | None, mutant: str | None) -> Env:
        return loop.run(self.environment(target, self.app_factory(mutant)), 120.0)

    def stop(self, loop: LoopThread, env: Env) -> None:
        loop.run(env.stop(), 60.0)

    def fuzz(self, loop: LoopThread, env: Env, config: C, progress: Progress | None) -> tuple[Any, FuzzFailure | None]:
        """The campaign's stats and its shrunk failure, if any."""
        runner = self.runner(loop, env, config, progress)
        return runner.stats, fuzz_for(
            lambda examples, seed: runner.run(examples=examples, seed=seed, step_count=config.step_count,
                                              database=config.database),
            examples=config.examples or self.examples, budget_s=config.budget_s, seed=config.seed, chunk=self.chunk)

    def kind(self, config: C) -> str:
        """The kind of failure a campaign told ``config`` finds (as its replay file records it)."""
        return self.format.kinds[0]

    def replay_steps(self, loop: LoopThread, env: Env, recorded: replay_files.ReplayFile) -> FuzzFailure | None:
        """Run the recorded steps once, in order, outside Hypothesis; the first violation is the failure."""
        return self.runner(loop, env, None, None).replay(recorded.stateful_steps())


# --------------------------------------------------------------------------- the loop


@contextmanager
def _serving(role: Role[C, Env], target: TargetConfig | None, mutant: str | None) -> Iterator[tuple[LoopThread, Env]]:
    """The role's environment for ``target`` (else the embedded reference with ``mutant``) on a loop of its own."""
    role.quiet()
    with LoopThread() as loop:
        env = role.start(loop, target, mutant)
        try:
            yield loop, env
        finally:
            role.stop(loop, env)


def run(role: Role[C, Any], config: C, progress: Progress | None = None) -> FuzzResult[Any]:
    """Fuzz the IUT ``config`` names as ``role``; the shrunk failure, if any, is saved in ``config.out``."""
    one_iut(config.target, config.mutant)
    iut = FuzzedIut.of(role.name, config.target, config.mutant)
    with _serving(role, config.target, config.mutant) as (loop, env):
        stats, failure = role.fuzz(loop, env, config, progress)
    saved = None
    if failure is not None and config.out is not None:
        saved = save_failure(config.out, role.kind(config), failure, iut=iut, seed=config.seed, fmt=role.format)
    return FuzzResult(stats, failure, saved, iut)


def replay(role: Role[Any, Any], path: Path, *, target: TargetConfig | None = None, mutant: str | None = None,
           other_iut: bool = False) -> ReplayResult:
    """Run a saved failure again against the IUT it failed against; ``fixed`` when it no longer fails.

    ``target`` and ``mutant`` name the IUT (the file's mutant applies when neither is given); another IUT than the
    recorded one is refused with :class:`InvalidArgument` unless ``other_iut``.
    """
    recorded = replay_files.load(path, role.format)
    against, other = replay_subject(recorded.iut, path, role=role.name, target=target, mutant=mutant,
                                    other_iut=other_iut)
    with _serving(role, target, against.mutant) as (loop, env):
        failure = role.replay_steps(loop, env, recorded)
    return ReplayResult(failure, recorded, against, other)


def save_failure(folder: Path, kind: str, failure: FuzzFailure, *, iut: FuzzedIut, seed: int | None,
                 fmt: replay_files.ReplayFormat = replay_files.FUZZ) -> Path:
    """A replay file (:mod:`sdcp_conformance.fuzz.replay`) of the shrunk steps, recording the IUT they failed
    against."""
    return replay_files.save(folder, kind, [step.to_json() for step in failure.steps], failure.message,
                             failure.level, iut=iut, seed=seed, fmt=fmt)


def fuzz_for(run: Callable[[int, int], F | None], *, examples: int, budget_s: float | None, seed: int,
             chunk: int) -> F | None:
    """``run(examples, seed)`` once, or, with a time budget, ``run(chunk, seed + round)`` for round 0, 1, … until a
    failure (returned) or the budget is spent (checked between runs)."""
    if budget_s is None:
        return run(examples, seed)
    started, round_ = time.monotonic(), 0
    while time.monotonic() - started < budget_s:
        failure = run(chunk, seed + round_)
        if failure is not None:
            return failure
        round_ += 1
    return None


def parse_budget(text: str) -> float:
    """``90s``, ``10m``, ``1h`` or plain seconds."""
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*", text)
    if found is None:
        raise InvalidArgument(f"--budget {text!r}: expected e.g. 90s, 10m or 1h")
    return float(found.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[found.group(2)]


__all__ = [
    "DEFAULT_OUT",
    "FuzzConfig",
    "FuzzResult",
    "ReplayResult",
    "Role",
    "fuzz_for",
    "parse_budget",
    "replay",
    "run",
    "save_failure",
]
