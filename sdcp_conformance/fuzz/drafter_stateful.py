"""Stateful fuzzing of a drafter IUT with ``hypothesis.stateful.RuleBasedStateMachine``.

The harness plays the drafter's verifier and router; each rule is one way of
answering the drafter's next proposal (or of re-assigning the session), with
generated arguments, played by :class:`~sdcp_conformance.fuzz.drafter_executor.DrafterStepExecutor`
on the harness's event loop. A violation makes Hypothesis shrink the
example; the steps of the last failing run (the minimal one, which
Hypothesis replays last) are kept, so they can be saved and replayed
exactly, like the verifier fuzzer's (:mod:`sdcp_conformance.fuzz.stateful`).
"""

from __future__ import annotations

import itertools
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st
from hypothesis.database import ExampleDatabase
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule

from sdcp_conformance.fuzz.database import run_machine
from sdcp_conformance.fuzz.drafter_executor import LOSSES, REFUSALS, STOPS, DrafterStepExecutor
from sdcp_conformance.fuzz.judging import FuzzJudge
from sdcp_conformance.fuzz.loop import LoopThread
from sdcp_conformance.fuzz.stateful import FuzzFailure
from sdcp_conformance.fuzz.steps import Step, Violation
from sdcp_conformance.harness.drafter_environment import DrafterEnvironment

Progress = Callable[["DrafterFuzzStats"], None]


@dataclass
class DrafterFuzzStats:
    examples: int = 0
    steps: int = 0
    started: float = field(default_factory=time.monotonic)
    failure: FuzzFailure | None = None
    flaky: bool = False
    judge: FuzzJudge = field(default_factory=FuzzJudge)
    first_found: tuple[int, int, float] | None = None
    """(examples, steps, seconds) when the first failure was seen, before shrinking."""

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started


class DrafterStatefulRunner:
    """Runs one Hypothesis state machine per example against the drafter environment on ``loop``."""

    def __init__(self, loop: LoopThread, env: DrafterEnvironment, progress: Progress | None = None, *,
                 strict: bool = False) -> None:
        self.loop = loop
        self.env = env
        self.stats = DrafterFuzzStats(judge=FuzzJudge(strict=strict))
        self._progress = progress
        self._nonce = secrets.token_hex(4)
        self._counter = itertools.count()

    def executor(self) -> DrafterStepExecutor:
        self.stats.examples += 1
        return self.loop.run(_new_executor(self.env, f"{self._nonce}-{next(self._counter)}", self.stats.judge))

    def execute(self, executor: DrafterStepExecutor, steps: list[Step], step: Step) -> None:
        steps.append(step)
        self.stats.steps += 1
        try:
            self.loop.run(executor.apply(step))
        except Violation as violation:
            self.stats.failure = FuzzFailure(list(steps), violation.text, violation.level, _transcript(executor),
                                             violation.row)
            if self.stats.first_found is None:
                self.stats.first_found = (self.stats.examples, self.stats.steps, self.stats.elapsed)
            raise
        except Exception as exc:  # a hang or a harness bug: still a failing, replayable sequence
            self.stats.failure = FuzzFailure(list(steps), f"{type(exc).__name__}: {exc}", "ERROR",
                                             _transcript(executor))
            raise
        finally:
            if self._progress is not None:
                self._progress(self.stats)

    def finish(self, executor: DrafterStepExecutor, steps: list[Step]) -> None:
        """The example's last check (a late second proposal, say); a violation fails the example's steps."""
        try:
            self.loop.run(executor.finish())
        except Violation as violation:
            self.stats.failure = FuzzFailure(list(steps), violation.text, violation.level, _transcript(executor),
                                             violation.row)
            if self.stats.first_found is None:
                self.stats.first_found = (self.stats.examples, self.stats.steps, self.stats.elapsed)
            raise

    def run(self, *, examples: int, seed: int, step_count: int = 8,
            database: ExampleDatabase | None = None) -> FuzzFailure | None:
        """Up to ``examples`` examples from ``seed``; returns the shrunk failure, if any."""
        self.stats.failure = None
        # The corpus in ``database`` is replayed even under a seed (Hypothesis' @seed alone would turn it off).
        if run_machine(drafter_machine_for(self), examples=examples, seed=seed, step_count=step_count,
                       database=database, recorded=lambda: self.stats.failure is not None):
            self._flaky()
        return self.stats.failure

    def _flaky(self) -> None:
        """A failure that did not happen again on the same steps: reported as found, marked flaky."""
        self.stats.flaky = True
        if self.stats.failure is not None:
            self.stats.failure.flaky = True


async def _new_executor(env: DrafterEnvironment, example: str, judge: FuzzJudge) -> DrafterStepExecutor:
    return DrafterStepExecutor(env, example, judge)  # built on the loop: it creates asyncio objects


def drafter_machine_for(runner: DrafterStatefulRunner) -> type[RuleBasedStateMachine]:
    """A state machine class bound to ``runner``."""

    class DrafterFuzz(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.executor = runner.executor()
            self.steps: list[Step] = []

        def do(self, rule_name: str, **args: Any) -> None:
            runner.execute(self.executor, self.steps, Step(rule_name, args))

        def teardown(self) -> None:
            runner.finish(self.executor, self.steps)

        def live(self) -> bool:
            return not self.executor.stopped()

        # Rule 2 first: the shrinker prefers it, and a rule-2 failure does not depend on M (a rule-1 redraft of
        # the same M is byte for byte a retry).
        @initialize(rule_=st.sampled_from([2, 1]), m_max=st.integers(1, 8), m_init=st.integers(1, 8),
                    prompt=st.integers(0, 3), temperature=st.integers(0, 2))
        def start(self, rule_: int, m_max: int, m_init: int, prompt: int, temperature: int) -> None:
            self.do("start", rule=rule_, m_max=m_max, m_init=m_init, prompt=prompt, temperature=temperature)

        @precondition(live)
        @rule(accepted=st.integers(0, 8), reduce=st.booleans(), m_cap=st.integers(1, 8), bonus=st.integers(0, 119))
        def verdict(self, accepted: int, reduce: bool, m_cap: int, bonus: int) -> None:
            self.do("verdict", accepted=accepted, reduce=reduce, m_cap=m_cap, bonus=bonus)

        # Hypothesis picks among rules uniformly: more names give verdicts, losses and stale bases more weight.
        verdict_again = verdict
        verdict_once_more = verdict

        @precondition(live)
        @rule(ms=st.integers(50, 150))  # at least 50 ms: a second proposal shows up within the step holding the first
        def hold(self, ms: int) -> None:
            self.do("hold", ms=ms)

        @precondition(live)
        @rule(kind=st.integers(0, len(LOSSES) - 1))
        def lose(self, kind: int) -> None:
            self.do("lose", kind=kind)

        lose_again = lose

        @precondition(live)
        @rule(kind=st.integers(0, len(REFUSALS) - 1))
        def refuse(self, kind: int) -> None:
            self.do("refuse", kind=kind)

        @precondition(live)
        @rule(advance=st.integers(1, 3), forge=st.booleans())
        def stale(self, advance: int, forge: bool) -> None:
            self.do("stale", advance=advance, forge=forge)

        stale_again = stale

        @precondition(live)
        @rule(action=st.integers(0, len(STOPS) - 1))
        def stop(self, action: int) -> None:
            self.do("stop", action=action)

        @rule(epoch_delta=st.integers(0, 1), verifier=st.integers(0, 1), m_init=st.integers(1, 8),
              policy=st.integers(0, 3))
        def reassign(self, epoch_delta: int, verifier: int, m_init: int, policy: int) -> None:
            self.do("reassign", epoch_delta=epoch_delta, verifier=verifier, m_init=m_init, policy=policy)

    return DrafterFuzz


def replay_drafter_steps(loop: LoopThread, env: DrafterEnvironment, steps: Sequence[Step], *,
                         strict: bool = False) -> FuzzFailure | None:
    """Run ``steps`` once, in order, outside Hypothesis; the first violation is the failure."""
    executor = loop.run(_new_executor(env, f"replay-{secrets.token_hex(4)}", FuzzJudge(strict=strict)))
    done: list[Step] = []
    for step in steps:
        done.append(step)
        try:
            loop.run(executor.apply(step))
        except Violation as violation:
            return FuzzFailure(done, violation.text, violation.level, _transcript(executor), violation.row)
    try:
        loop.run(executor.finish())
    except Violation as violation:
        return FuzzFailure(done, violation.text, violation.level, _transcript(executor), violation.row)
    return None


def _transcript(executor: DrafterStepExecutor) -> str:
    entries = executor.ctx.transcript.entries()[-12:]
    return "\n".join(entry.render() for entry in entries)


__all__ = ["DrafterFuzzStats", "DrafterStatefulRunner", "drafter_machine_for", "replay_drafter_steps"]
