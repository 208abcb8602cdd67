"""Stateful fuzzing of a verifier IUT with ``hypothesis.stateful.RuleBasedStateMachine``.

Each rule builds a :class:`~sdcp_conformance.fuzz.steps.Step` from its
generated arguments and hands it to a :class:`StepExecutor` on the harness's
event loop (:class:`~sdcp_conformance.fuzz.loop.LoopThread`). A violation
makes Hypothesis shrink the example; the steps of the last failing run (the
minimal one, which Hypothesis replays last) are kept as the failure, so they
can be saved and replayed exactly. The runner, the recording of failures
and the replay are the scaffold's (:mod:`sdcp_conformance.fuzz.scaffold`);
this module holds the verifier's rules and how its executor is built.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from hypothesis import strategies as st
from hypothesis.stateful import initialize, precondition, rule

from sdcp_conformance.fuzz.executor import PROPOSAL_KINDS, StepExecutor
from sdcp_conformance.fuzz.judging import FuzzJudge
from sdcp_conformance.fuzz.loop import LoopThread
from sdcp_conformance.fuzz.scaffold import FuzzFailure, FuzzMachine, FuzzStats, Runner
from sdcp_conformance.fuzz.steps import Step

Progress = Callable[[FuzzStats], None]

S = st.integers(0, 2)
"""Which of the example's sessions a step is about (modulo the number open)."""
ENCODINGS = st.sampled_from([0, 0, 1, 2, 3])
"""How a session-open is encoded: deterministic (twice as likely), keys reversed, indefinite lengths, wide ints."""
MAX_NEW = st.integers(2, 12) | st.integers(16, 64)
"""Short sessions reach finish quickly; long ones leave room for the other rules."""
STOP_AT = st.none() | st.none() | st.integers(0, 8)


class VerifierFuzz(FuzzMachine):
    """The verifier's rules (synchronous; the runner's loop does the I/O)."""

    executor: StepExecutor

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


class StatefulRunner(Runner[StepExecutor, FuzzStats]):
    """Runs one :class:`VerifierFuzz` per example against the environment on ``loop``."""

    machine = VerifierFuzz
    step_count = 12

    def __init__(self, loop: LoopThread, progress: Progress | None = None, *, strict: bool = False,
                 nonce: str | None = None) -> None:
        """``nonce`` names the examples' sessions; give a fixed one only with an IUT started afresh for this
        campaign (the embedded one), so a seed reproduces the whole campaign, session ids included — the
        seeded rule-2 outcomes depend on them. A long-lived IUT needs fresh ids each campaign (the default)."""
        super().__init__(loop, FuzzStats(judge=FuzzJudge(strict=strict)), progress, nonce=nonce)

    def new_executor(self, example: str) -> StepExecutor:
        return StepExecutor(self.loop.env, example, self.stats.judge)


def replay_steps(loop: LoopThread, steps: Sequence[Step], *, strict: bool = False) -> FuzzFailure | None:
    """Run ``steps`` once, in order, outside Hypothesis; the first violation is the failure."""
    return StatefulRunner(loop, strict=strict).replay(steps)


__all__ = ["FuzzFailure", "FuzzStats", "StatefulRunner", "VerifierFuzz", "replay_steps"]
