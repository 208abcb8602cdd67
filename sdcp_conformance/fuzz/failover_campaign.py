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

import itertools
import json
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import strategies as st
from hypothesis.database import ExampleDatabase
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.fuzz.database import run_machine
from sdcp_conformance.fuzz.failover_executor import FailoverExecutor
from sdcp_conformance.fuzz.identity import CLEAN, FuzzedIut, replay_subject
from sdcp_conformance.fuzz.loop import LoopThread
from sdcp_conformance.fuzz.steps import Step, Violation
from sdcp_conformance.harness.router_environment import RouterEnvironment
from sdcp_conformance.harness.target import TargetConfig

FORMAT = "sdcp-failover-replay/1"
S = st.integers(0, 3)
"""Which open session a step is about (modulo the number open)."""


@dataclass
class FailoverFailure:
    steps: list[Step]
    message: str
    level: str


@dataclass
class FailoverStats:
    examples: int = 0
    steps: int = 0
    failovers: int = 0
    started: float = field(default_factory=time.monotonic)
    failure: FailoverFailure | None = None
    flaky: bool = False
    found_at: int | None = None
    """The example in which the first violation showed (the rest is shrinking)."""

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started


class FailoverRunner:
    """Runs Hypothesis examples of the campaign against the environment on ``loop``."""

    def __init__(self, loop: LoopThread, env: RouterEnvironment,
                 progress: Callable[[FailoverStats], None] | None = None) -> None:
        self.loop = loop
        self.env = env
        self.stats = FailoverStats()
        self._progress = progress
        self._nonce = secrets.token_hex(4)
        self._counter = itertools.count()

    def executor(self) -> FailoverExecutor:
        self.stats.examples += 1
        return FailoverExecutor(self.env, f"{self._nonce}-{next(self._counter)}")

    def execute(self, executor: FailoverExecutor, steps: list[Step], step: Step) -> None:
        steps.append(step)
        self.stats.steps += 1
        before = executor.failovers
        try:
            self.loop.run(executor.apply(step))
        except Violation as violation:
            self.stats.failure = FailoverFailure(list(steps), violation.text, violation.level)
            if self.stats.found_at is None:
                self.stats.found_at = self.stats.examples
            raise
        except Exception as exc:  # a hang or a harness bug: still a failing, replayable schedule
            self.stats.failure = FailoverFailure(list(steps), f"{type(exc).__name__}: {exc}", "ERROR")
            raise
        finally:
            self.stats.failovers += executor.failovers - before
            if self._progress is not None:
                self._progress(self.stats)

    def finish(self, executor: FailoverExecutor) -> None:
        self.loop.run(executor.close())

    def run(self, *, examples: int, seed: int, step_count: int = 6,
            database: ExampleDatabase | None = None) -> FailoverFailure | None:
        """Up to ``examples`` examples from ``seed``; the shrunk failure, if any."""
        self.stats.failure = None
        if run_machine(machine_for(self), examples=examples, seed=seed, step_count=step_count, database=database,
                       recorded=lambda: self.stats.failure is not None):
            self.stats.flaky = True
        return self.stats.failure


def machine_for(runner: FailoverRunner) -> type[RuleBasedStateMachine]:
    """A state machine class bound to ``runner``: rules are synchronous, the runner's loop does the I/O."""

    class FailoverSchedule(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.executor = runner.executor()
            self.steps: list[Step] = []

        def do(self, rule_name: str, **args: Any) -> None:
            runner.execute(self.executor, self.steps, Step(rule_name, args))

        def teardown(self) -> None:
            runner.finish(self.executor)

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

    return FailoverSchedule


def replay_steps(loop: LoopThread, env: RouterEnvironment, steps: Sequence[Step]) -> FailoverFailure | None:
    """Run ``steps`` once, in order, outside Hypothesis; the first violation is the failure."""
    executor = FailoverExecutor(env, f"replay-{secrets.token_hex(4)}")
    done: list[Step] = []
    try:
        for step in steps:
            done.append(step)
            try:
                loop.run(executor.apply(step))
            except Violation as violation:
                return FailoverFailure(done, violation.text, violation.level)
    finally:
        loop.run(executor.close())
    return None


# --------------------------------------------------------------------------- replay files


def save_failure(folder: Path, failure: FailoverFailure, *, iut: FuzzedIut, seed: int | None) -> Path:
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
    failure: FailoverFailure | None
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
class FailoverResult:
    stats: FailoverStats
    failure: FailoverFailure | None
    saved: Path | None
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
    "FailoverFailure",
    "FailoverReplay",
    "FailoverResult",
    "FailoverRunner",
    "FailoverStats",
    "load_failure",
    "machine_for",
    "replay_failover",
    "replay_steps",
    "router_factory",
    "run_failover_campaign",
    "save_failure",
]
