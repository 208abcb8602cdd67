"""The router's rules: the Jepsen-style failover campaign, a Hypothesis-generated schedule of sessions, commits,
verifier kills, partitions and drafter deaths, judged after every step by one history checker.

``fuzz --role router`` runs it against the embedded reference router (or a
mutant, or a ``--target``). Each example starts from every instance up
(``setup``), opens sessions at the router's front and lets Hypothesis choose
what happens next; a violation makes Hypothesis shrink the schedule, and the
steps of the shortest violating history are saved as a replay file
(``sdcp-failover-replay/1``, naming the router it failed against, as
:mod:`sdcp_conformance.fuzz.identity` records it) that ``fuzz --role router
--replay FILE`` runs again against that router, reporting ``fixed`` once it
no longer fails. The runner and the replay are the scaffold's
(:mod:`sdcp_conformance.fuzz.scaffold`), the campaign is the one loop's
(:mod:`sdcp_conformance.fuzz.campaign`); the steps are played by
:class:`~sdcp_conformance.fuzz.rules.failover_steps.FailoverExecutor`.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import initialize, rule

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.fuzz import campaign
from sdcp_conformance.fuzz import replay as replay_files
from sdcp_conformance.fuzz.campaign import FuzzConfig, FuzzResult, ReplayResult
from sdcp_conformance.fuzz.loop import LoopThread
from sdcp_conformance.fuzz.rules.failover_steps import FailoverExecutor
from sdcp_conformance.fuzz.scaffold import FuzzFailure, FuzzMachine, FuzzStats, Runner
from sdcp_conformance.fuzz.steps import Step
from sdcp_conformance.harness.specs.router import RouterEnvironment
from sdcp_conformance.harness.target import TargetConfig

FORMAT = replay_files.FAILOVER.name
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


# --------------------------------------------------------------------------- the campaign


@dataclass(frozen=True)
class FailoverConfig(FuzzConfig):
    """A failover campaign: its failures are saved only where ``out`` names (none by default)."""

    step_count: int = 6
    out: Path | None = None


FailoverResult = FuzzResult[FailoverStats]
FailoverReplay = ReplayResult


class FailoverRole(campaign.Role[FailoverConfig, RouterEnvironment]):
    """The router's campaign; its replay files are ``sdcp-failover-replay/1``."""

    name = "router"
    examples = 20
    chunk = 20
    loggers = ("sdcp_conformance.reference.router", "sdcp_conformance.transport.server")
    format = replay_files.FAILOVER

    def planted(self, mutant: str) -> Any:
        from sdcp_conformance.mutants.router import CATALOGUE as ROUTER_MUTANTS_BY_NAME

        found = ROUTER_MUTANTS_BY_NAME.get(mutant)
        if found is None:
            known = ", ".join(sorted(ROUTER_MUTANTS_BY_NAME))
            raise InvalidArgument(f"no router mutant named {mutant!r}; known: {known}")
        return found.factory

    def environment(self, target: TargetConfig | None, app_factory: Any) -> Coroutine[Any, Any, RouterEnvironment]:
        return RouterEnvironment.start(target, app_factory=app_factory)

    def runner(self, loop: LoopThread, env: RouterEnvironment, config: FailoverConfig | None,
               progress: Callable[[FailoverStats], None] | None) -> FailoverRunner:
        return FailoverRunner(loop, env, progress)


ROUTER = FailoverRole()


def run_failover_campaign(config: FailoverConfig,
                          progress: Callable[[FailoverStats], None] | None = None) -> FailoverResult:
    return campaign.run(ROUTER, config, progress)


def replay_failover(path: Path, *, target: TargetConfig | None = None, mutant: str | None = None,
                    other_iut: bool = False) -> FailoverReplay:
    """Run a saved failure again against the router it failed against (the file's mutant applies unless another
    is named); another router than the recorded one is refused with :class:`InvalidArgument` unless ``other_iut``."""
    return campaign.replay(ROUTER, path, target=target, mutant=mutant, other_iut=other_iut)


def load_failure(path: Path) -> tuple[list[Step], str | None]:
    """(steps, mutant) of a replay file."""
    recorded = replay_files.load(path, replay_files.FAILOVER)
    return recorded.stateful_steps(), recorded.mutant


__all__ = [
    "FORMAT",
    "ROUTER",
    "FailoverConfig",
    "FailoverReplay",
    "FailoverResult",
    "FailoverRole",
    "FailoverRunner",
    "FailoverSchedule",
    "FailoverStats",
    "load_failure",
    "replay_failover",
    "run_failover_campaign",
]
