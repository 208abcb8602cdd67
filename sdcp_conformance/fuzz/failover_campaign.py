"""The Jepsen-style failover campaign against a router: a Hypothesis-generated schedule of sessions, commits,
verifier kills, partitions and drafter deaths, judged after every step by one history checker.

``fuzz --role router`` runs it against the embedded reference router (or a
mutant, or a ``--target``). Each example starts from every instance up
(``setup``), opens sessions at the router's front and lets Hypothesis choose
what happens next; a violation makes Hypothesis shrink the schedule, and the
steps of the shortest violating history are saved as a replay file
(``sdcp-failover-replay/1``, naming the router it failed against, as
:mod:`sdcp_conformance.fuzz.identity` records it) that ``fuzz --role router
--replay FILE`` runs again against that router, reporting ``fixed`` once it
no longer fails.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from hypothesis import strategies as st
from hypothesis.database import ExampleDatabase
from hypothesis.stateful import initialize, rule

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.fuzz.failover_executor import FailoverExecutor
from sdcp_conformance.fuzz.identity import CLEAN, FuzzedIut, replay_subject
from sdcp_conformance.fuzz.loop import LoopThread
from sdcp_conformance.fuzz.scaffold import FuzzFailure, FuzzMachine, FuzzResult, FuzzStats, Runner
from sdcp_conformance.fuzz.steps import Step
from sdcp_conformance.harness.router_environment import RouterEnvironment
from sdcp_conformance.harness.target import TargetConfig

FORMAT = "sdcp-failover-replay/1"
S = st.integers(0, 3)
"""Which open session a step is about (modulo the number open)."""


@dataclass
class FailoverStats(FuzzStats):
    failovers: int = 0
    """Verifier kills and partitions that led to a completed failover."""

    @property
    def found_at(self) -> int | None:
        """The example in which the first violation showed (the rest is shrinking)."""
        return self.first_found[0] if self.first_found is not None else None


class FailoverSchedule(FuzzMachine):
    """The campaign's rules: sessions, commits and faults (rules are synchronous, the runner's loop does the I/O)."""

    executor: FailoverExecutor

    @initialize(enforcing=st.booleans(), prompt=st.integers(0, 3))
    def start(self, enforcing: bool, prompt: int) -> None:
        self.do("setup", enforcing=enforcing)
        self.do("open", prompt=prompt)

    @rule(prompt=st.integers(0, 3))
    def open(self, prompt: int) -> None:
        self.do("open", prompt=prompt)

    @rule(s=S, n=st.integers(1, 3))
    def commit(self, s: int, n: int) -> None:
        self.do("commit", s=s, n=n)

    commit_again = commit  # commits carry the history the failovers must preserve: twice the weight

    @rule(s=S)
    def kill(self, s: int) -> None:
        self.do("kill", s=s)

    @rule(s=S, late=st.integers(0, 2))
    def partition(self, s: int, late: int) -> None:
        self.do("partition", s=s, late=late)

    # Hypothesis picks among rules uniformly: two more names give the faults the weight of four rules.
    kill_again = kill
    partition_again = partition

    @rule(d=st.integers(0, 2))
    def drafter_dies(self, d: int) -> None:
        self.do("drafter_dies", d=d)

    @rule(i=st.integers(0, 5))
    def revive(self, i: int) -> None:
        self.do("revive", i=i)

    @rule(s=S)
    def read(self, s: int) -> None:
        self.do("read", s=s)

    @rule(s=S)
    def finish(self, s: int) -> None:
        self.do("finish", s=s)


class FailoverRunner(Runner[FailoverExecutor, FailoverStats]):
    """Runs one :class:`FailoverSchedule` per example against the environment on ``loop``."""

    machine = FailoverSchedule
    step_count = 6

    def __init__(self, loop: LoopThread, env: RouterEnvironment,
                 progress: Callable[[FailoverStats], None] | None = None) -> None:
        super().__init__(loop, FailoverStats(), progress)
        self.env = env
        self._tallied = 0

    def new_executor(self, example: str) -> FailoverExecutor:
        self._tallied = 0
        return FailoverExecutor(self.env, example)

    def tally(self, executor: FailoverExecutor) -> None:
        self.stats.failovers += executor.failovers - self._tallied
        self._tallied = executor.failovers

    def close(self, executor: FailoverExecutor) -> Coroutine[Any, Any, None]:
        return executor.close()

    def failure(self, steps: Sequence[Step], exc: Exception, executor: FailoverExecutor) -> FuzzFailure:
        """The history checker's violation names its row in its message; the failure records no other."""
        return replace(super().failure(steps, exc, executor), row="")


def replay_steps(loop: LoopThread, env: RouterEnvironment, steps: Sequence[Step]) -> FuzzFailure | None:
    """Run ``steps`` once, in order, outside Hypothesis; the first violation is the failure."""
    return FailoverRunner(loop, env).replay(steps)


# --------------------------------------------------------------------------- replay files


def save_failure(folder: Path, failure: FuzzFailure, *, iut: FuzzedIut, seed: int | None) -> Path:
    """A replay file of the shrunk schedule, recording the router it failed against."""
    folder.mkdir(parents=True, exist_ok=True)
    label = iut.mutant or "iut"
    path = folder / f"failover-{label}-{time.strftime('%Y%m%d-%H%M%S')}-{len(list(folder.glob('*.json')))}.json"
    record = {"format": FORMAT, "failure": failure.message, "level": failure.level, **iut.to_json(), "seed": seed,
              "replay": iut.replay_command(path), "steps": [step.to_json() for step in failure.steps]}
    path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return path


def load_failure(path: Path) -> tuple[list[Step], str | None]:
    """(steps, mutant) of a replay file."""
    steps, iut = _load(path)
    return steps, iut.mutant


def _load(path: Path) -> tuple[list[Step], FuzzedIut]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InvalidArgument(f"{path}: cannot read the replay file: {exc}") from exc
    if not isinstance(raw, dict) or raw.get("format") != FORMAT or not isinstance(raw.get("steps"), list):
        raise InvalidArgument(f"{path}: not an {FORMAT} file")
    return [Step.from_json(step) for step in raw["steps"]], FuzzedIut.from_json(raw, path, role="router")


@dataclass(frozen=True)
class FailoverReplay:
    failure: FuzzFailure | None
    replayed: int
    """Steps replayed."""
    recorded_iut: FuzzedIut
    """The router the failure was found against."""
    against: FuzzedIut
    """The router the replay ran against."""
    other: bool = False
    """``against`` is not the recorded router (replayed there by explicit request)."""

    @property
    def fixed(self) -> bool:
        """The recorded router no longer fails (never said of another one)."""
        return self.failure is None and not self.other


# --------------------------------------------------------------------------- running a campaign


@dataclass(frozen=True)
class FailoverConfig:
    target: TargetConfig | None = None
    mutant: str | None = None
    examples: int = 20
    seed: int = 0
    step_count: int = 6
    database: ExampleDatabase | None = None
    out: Path | None = None


@dataclass
class FailoverResult(FuzzResult[FailoverStats]):
    iut: FuzzedIut = field(default_factory=lambda: FuzzedIut("router"))
    """The router fuzzed (what the replay file records)."""


def router_factory(mutant: str | None) -> Any:
    if mutant is None or mutant in CLEAN:
        return None
    from sdcp_conformance.mutants.router_catalogue import ROUTER_MUTANTS_BY_NAME

    found = ROUTER_MUTANTS_BY_NAME.get(mutant)
    if found is None:
        raise InvalidArgument(f"no router mutant named {mutant!r}; known: {', '.join(sorted(ROUTER_MUTANTS_BY_NAME))}")
    return found.factory


def _quiet_logs() -> None:
    import logging

    for name in ("sdcp_conformance.reference.router", "sdcp_conformance.transport.server"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


def run_failover_campaign(config: FailoverConfig,
                          progress: Callable[[FailoverStats], None] | None = None) -> FailoverResult:
    if config.target is not None and config.mutant is not None:
        raise InvalidArgument("--mutant runs the embedded reference router with a planted bug; not with --target")
    _quiet_logs()
    iut = FuzzedIut.of("router", config.target, config.mutant)
    with LoopThread() as loop:
        env = loop.run(RouterEnvironment.start(config.target, app_factory=router_factory(config.mutant)), 120.0)
        try:
            runner = FailoverRunner(loop, env, progress)
            failure = runner.run(examples=config.examples, seed=config.seed, step_count=config.step_count,
                                 database=config.database)
        finally:
            loop.run(env.stop(), 60.0)
    saved = None
    if failure is not None and config.out is not None:
        saved = save_failure(config.out, failure, iut=iut, seed=config.seed)
    return FailoverResult(runner.stats, failure, saved, iut)


def replay_failover(path: Path, *, target: TargetConfig | None = None, mutant: str | None = None,
                    other_iut: bool = False) -> FailoverReplay:
    """Run a saved failure again against the router it failed against (the file's mutant applies unless another
    is named); another router than the recorded one is refused with :class:`InvalidArgument` unless ``other_iut``."""
    steps, recorded = _load(path)
    against, other = replay_subject(recorded, path, role="router", target=target, mutant=mutant, other_iut=other_iut)
    _quiet_logs()
    with LoopThread() as loop:
        env = loop.run(RouterEnvironment.start(target, app_factory=router_factory(against.mutant)), 120.0)
        try:
            failure = replay_steps(loop, env, steps)
        finally:
            loop.run(env.stop(), 60.0)
    return FailoverReplay(failure, len(steps), recorded, against, other)


__all__ = [
    "FORMAT",
    "FailoverConfig",
    "FailoverReplay",
    "FailoverResult",
    "FailoverRunner",
    "FailoverSchedule",
    "FailoverStats",
    "load_failure",
    "replay_failover",
    "replay_steps",
    "router_factory",
    "run_failover_campaign",
    "save_failure",
]
