"""Stateful fuzzing of a drafter IUT with ``hypothesis.stateful.RuleBasedStateMachine``.

The harness plays the drafter's verifier and router; each rule is one way of
answering the drafter's next proposal (or of re-assigning the session), with
generated arguments, played by :class:`~sdcp_conformance.fuzz.drafter_executor.DrafterStepExecutor`
on the harness's event loop. A violation makes Hypothesis shrink the
example; the steps of the last failing run (the minimal one, which
Hypothesis replays last) are kept, so they can be saved and replayed
exactly, like the verifier fuzzer's: the runner, the recording of failures
and the replay are the scaffold's (:mod:`sdcp_conformance.fuzz.scaffold`).
An example ends with the executor's last check (what the drafter sends just
after the last step).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import initialize, precondition, rule

from sdcp_conformance.fuzz.drafter_executor import LOSSES, REFUSALS, STOPS, DrafterStepExecutor
from sdcp_conformance.fuzz.judging import FuzzJudge
from sdcp_conformance.fuzz.loop import LoopThread
from sdcp_conformance.fuzz.scaffold import FuzzFailure, FuzzMachine, FuzzStats, Runner
from sdcp_conformance.fuzz.steps import Step
from sdcp_conformance.harness.drafter_environment import DrafterEnvironment

Progress = Callable[[FuzzStats], None]


class DrafterFuzz(FuzzMachine):
    """The drafter's rules: the harness's answers as its verifier and router."""

    executor: DrafterStepExecutor

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


class DrafterStatefulRunner(Runner[DrafterStepExecutor, FuzzStats]):
    """Runs one :class:`DrafterFuzz` per example against the drafter environment on ``loop``."""

    machine = DrafterFuzz
    step_count = 8

    def __init__(self, loop: LoopThread, env: DrafterEnvironment, progress: Progress | None = None, *,
                 strict: bool = False) -> None:
        super().__init__(loop, FuzzStats(judge=FuzzJudge(strict=strict)), progress)
        self.env = env

    def new_executor(self, example: str) -> DrafterStepExecutor:
        return self.loop.run(_new_executor(self.env, example, self.stats.judge))

    def last_check(self, executor: DrafterStepExecutor) -> Coroutine[Any, Any, None]:
        """What the drafter sends just after the last step (a late second proposal, say) is judged too."""
        return executor.finish()


async def _new_executor(env: DrafterEnvironment, example: str, judge: FuzzJudge) -> DrafterStepExecutor:
    return DrafterStepExecutor(env, example, judge)  # built on the loop: it creates asyncio objects


def replay_drafter_steps(loop: LoopThread, env: DrafterEnvironment, steps: Sequence[Step], *,
                         strict: bool = False) -> FuzzFailure | None:
    """Run ``steps`` once, in order, outside Hypothesis, then the last check; the first violation is the failure."""
    return DrafterStatefulRunner(loop, env, strict=strict).replay(steps)


__all__ = ["DrafterFuzz", "DrafterStatefulRunner", "replay_drafter_steps"]
