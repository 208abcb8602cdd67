"""Stateful fuzzing of a verifier IUT with ``hypothesis.stateful.RuleBasedStateMachine``.

Each rule builds a :class:`~sdcp_conformance.fuzz.steps.Step` from its
generated arguments and hands it to a :class:`StepExecutor` on the harness's
event loop (:class:`~sdcp_conformance.fuzz.loop.LoopThread`). A violation
makes Hypothesis shrink the example; the steps of the last failing run (the
minimal one, which Hypothesis replays last) are kept as the failure, so they
can be saved and replayed exactly.
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
from sdcp_conformance.fuzz.executor import PROPOSAL_KINDS, StepExecutor
from sdcp_conformance.fuzz.judging import FuzzJudge
from sdcp_conformance.fuzz.loop import LoopThread
from sdcp_conformance.fuzz.steps import Step, Violation

Progress = Callable[["FuzzStats"], None]

S = st.integers(0, 2)
"""Which of the example's sessions a step is about (modulo the number open)."""
ENCODINGS = st.sampled_from([0, 0, 1, 2, 3])
"""How a session-open is encoded: deterministic (twice as likely), keys reversed, indefinite lengths, wide ints."""
MAX_NEW = st.integers(2, 12) | st.integers(16, 64)
"""Short sessions reach finish quickly; long ones leave room for the other rules."""
STOP_AT = st.none() | st.none() | st.integers(0, 8)


@dataclass
class FuzzFailure:
    steps: list[Step]
    message: str
    level: str
    transcript: str = ""
    row: str = ""
    """The requirement row the failing answer broke."""
    flaky: bool = False
    """Hypothesis could not make it fail again: the IUT answered this wrongly at least once, but not every time."""


@dataclass
class FuzzStats:
    examples: int = 0
    steps: int = 0
    started: float = field(default_factory=time.monotonic)
    failure: FuzzFailure | None = None
    flaky: bool = False
    """A failure did not reproduce while Hypothesis shrank it (reported, never ignored)."""
    judge: FuzzJudge = field(default_factory=FuzzJudge)
    """Every NON-STRICT / INFORMATIONAL finding of the campaign, per row (FAILED ones end an example)."""

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started


class StatefulRunner:
    """Runs one Hypothesis state machine per example against the environment on ``loop``."""

    def __init__(self, loop: LoopThread, progress: Progress | None = None, *, strict: bool = False,
                 nonce: str | None = None) -> None:
        """``nonce`` names the examples' sessions; give a fixed one only with an IUT started afresh for this
        campaign (the embedded one), so a seed reproduces the whole campaign, session ids included — the
        seeded rule-2 outcomes depend on them. A long-lived IUT needs fresh ids each campaign (the default)."""
        self.loop = loop
        self.stats = FuzzStats(judge=FuzzJudge(strict=strict))
        self._progress = progress
        self._nonce = nonce or secrets.token_hex(4)
        self._counter = itertools.count()

    def executor(self) -> StepExecutor:
        self.stats.examples += 1
        return StepExecutor(self.loop.env, f"{self._nonce}-{next(self._counter)}", self.stats.judge)

    def execute(self, executor: StepExecutor, steps: list[Step], step: Step) -> None:
        steps.append(step)
        self.stats.steps += 1
        try:
            self.loop.run(executor.apply(step))
        except Violation as violation:
            self.stats.failure = FuzzFailure(list(steps), violation.text, violation.level, _transcript(executor),
                                             violation.row)
            raise
        except Exception as exc:  # a hang or a harness bug: still a failing, replayable sequence
            self.stats.failure = FuzzFailure(list(steps), f"{type(exc).__name__}: {exc}", "ERROR",
                                             _transcript(executor))
            raise
        finally:
            if self._progress is not None:
                self._progress(self.stats)

    def run(self, *, examples: int, seed: int, step_count: int = 12,
            database: ExampleDatabase | None = None) -> FuzzFailure | None:
        """Up to ``examples`` examples from ``seed``; returns the shrunk failure, if any."""
        self.stats.failure = None
        if run_machine(machine_for(self), examples=examples, seed=seed, step_count=step_count, database=database,
                       recorded=lambda: self.stats.failure is not None):
            self._flaky()
        return self.stats.failure

    def _flaky(self) -> None:
        """The IUT failed once and then not again on the same steps: a nondeterministic bug. It is reported as
        found (its steps are kept), marked flaky, rather than counted and passed over."""
        self.stats.flaky = True
        if self.stats.failure is not None:
            self.stats.failure.flaky = True


def machine_for(runner: StatefulRunner) -> type[RuleBasedStateMachine]:
    """A state machine class bound to ``runner`` (rules are synchronous; the runner's loop does the I/O)."""

    class VerifierFuzz(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.executor = runner.executor()
            self.steps: list[Step] = []

        def do(self, rule_name: str, **args: Any) -> None:
            runner.execute(self.executor, self.steps, Step(rule_name, args))

        def has_session(self) -> bool:
            return bool(self.executor.sessions)

        @initialize(rule_=st.sampled_from([1, 2]), max_new=MAX_NEW, stop_at=STOP_AT,
                    low_rounds=st.sampled_from([2, 1000]), m_max=st.integers(1, 8), seed=st.integers(0, 2**32),
                    prompt=st.integers(0, 3), drafter=st.integers(0, 1), m_init=st.integers(1, 8),
                    encoding=ENCODINGS, self_skip=st.booleans())
        def start(self, rule_: int, max_new: int, stop_at: int | None, low_rounds: int, m_max: int, seed: int,
                  prompt: int, drafter: int, m_init: int, encoding: int, self_skip: bool) -> None:
            self.do("open", rule=rule_, max_new=max_new, stop_at=stop_at, low_rounds=low_rounds, m_max=m_max,
                    seed=seed, prompt=prompt, encoding=encoding, self_skip=self_skip)
            self.do("assign", s=0, drafter=drafter, m_init=m_init)

        @rule(rule_=st.sampled_from([1, 2]), max_new=MAX_NEW, stop_at=STOP_AT,
              low_rounds=st.sampled_from([2, 1000]), m_max=st.integers(1, 8), seed=st.integers(0, 2**32),
              prompt=st.integers(0, 3), encoding=ENCODINGS, self_skip=st.booleans())
        def open_session(self, rule_: int, max_new: int, stop_at: int | None, low_rounds: int, m_max: int,
                         seed: int, prompt: int, encoding: int, self_skip: bool) -> None:
            self.do("open", rule=rule_, max_new=max_new, stop_at=stop_at, low_rounds=low_rounds, m_max=m_max,
                    seed=seed, prompt=prompt, encoding=encoding, self_skip=self_skip)

        @precondition(has_session)
        @rule(s=S, drafter=st.integers(0, 1), m_init=st.integers(1, 8))
        def assign(self, s: int, drafter: int, m_init: int) -> None:
            self.do("assign", s=s, drafter=drafter, m_init=m_init)

        @precondition(has_session)
        @rule(s=S, m=st.integers(1, 8), choice=st.integers(0, 2**16))
        def propose_valid(self, s: int, m: int, choice: int) -> None:
            self.do("propose", s=s, kind="valid", m=m, choice=choice)

        @precondition(has_session)
        @rule(s=S, kind=st.sampled_from(PROPOSAL_KINDS), m=st.integers(1, 8), choice=st.integers(0, 2**16))
        def propose(self, s: int, kind: str, m: int, choice: int) -> None:
            self.do("propose", s=s, kind=kind, m=m, choice=choice)

        # Hypothesis picks among rules uniformly: two more names give hostile proposals the weight of three rules.
        propose_again = propose
        propose_once_more = propose

        @precondition(has_session)
        @rule(s=S, index=st.integers(0, 63))
        def retry(self, s: int, index: int) -> None:
            self.do("retry", s=s, index=index)

        @precondition(has_session)
        @rule(s=S, m=st.integers(1, 8), choice=st.integers(0, 2**16))
        def concurrent(self, s: int, m: int, choice: int) -> None:
            self.do("concurrent", s=s, m=m, choice=choice)

        @precondition(has_session)
        @rule(s=S, delta=st.integers(-1, 3), temperature=st.sampled_from([500, 1000, 1500]),
              seed=st.integers(0, 2**32))
        def policy(self, s: int, delta: int, temperature: int, seed: int) -> None:
            self.do("policy", s=s, delta=delta, temperature=temperature, seed=seed)

        @precondition(has_session)
        @rule(s=S, enforcing=st.booleans())
        def fence(self, s: int, enforcing: bool) -> None:
            self.do("fence", s=s, enforcing=enforcing)

        @precondition(has_session)
        @rule(s=S, drafter=st.integers(0, 1))
        def resume(self, s: int, drafter: int) -> None:
            self.do("resume", s=s, drafter=drafter)

        @precondition(has_session)
        @rule(s=S, start=st.integers(0, 64))
        def output(self, s: int, start: int) -> None:
            self.do("output", s=s, start=start)

    return VerifierFuzz


def replay_steps(loop: LoopThread, steps: Sequence[Step], *, strict: bool = False) -> FuzzFailure | None:
    """Run ``steps`` once, in order, outside Hypothesis; the first violation is the failure."""
    executor = StepExecutor(loop.env, f"replay-{secrets.token_hex(4)}", FuzzJudge(strict=strict))
    done: list[Step] = []
    for step in steps:
        done.append(step)
        try:
            loop.run(executor.apply(step))
        except Violation as violation:
            return FuzzFailure(done, violation.text, violation.level, _transcript(executor), violation.row)
    return None


def _transcript(executor: StepExecutor) -> str:
    entries = executor.ctx.transcript.entries()[-12:]
    return "\n".join(entry.render() for entry in entries)


__all__ = ["FuzzFailure", "FuzzStats", "StatefulRunner", "machine_for", "replay_steps"]
