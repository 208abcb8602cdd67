"""The drafter's rules (``fuzz --role drafter``): the harness's answers as the drafter's verifier and router, and
the drafter's campaign.

Each rule is one way of answering the drafter's next proposal (or of
re-assigning the session), with generated arguments, played by
:class:`~sdcp_conformance.fuzz.rules.drafter_steps.DrafterStepExecutor` on the
harness's event loop. A violation makes Hypothesis shrink the example; the
steps of the last failing run (the minimal one, which Hypothesis replays
last) are kept, so they can be saved and replayed exactly, like the verifier
fuzzer's: the runner, the recording of failures and the replay are the
scaffold's (:mod:`sdcp_conformance.fuzz.scaffold`), the campaign is the one
loop's (:mod:`sdcp_conformance.fuzz.campaign`). An example ends with the
executor's last check (what the drafter sends just after the last step).

The environment is :class:`~sdcp_conformance.harness.specs.drafter.DrafterEnvironment`
(the embedded reference drafter, a mutant of it, or a target file's drafter).
Failures are saved as the verifier fuzzer's replay files are
(:mod:`sdcp_conformance.fuzz.replay`), recording the drafter they failed
against (``"role": "drafter"``, the target or the mutant) so that ``fuzz
--role drafter --replay FILE`` replays them against that drafter only.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import initialize, precondition, rule

from sdcp_conformance.fuzz import campaign
from sdcp_conformance.fuzz.campaign import FuzzConfig, FuzzResult, ReplayResult
from sdcp_conformance.fuzz.judging import FuzzJudge
from sdcp_conformance.fuzz.loop import LoopThread
from sdcp_conformance.fuzz.rules.drafter_steps import LOSSES, REFUSALS, STOPS, DrafterStepExecutor
from sdcp_conformance.fuzz.scaffold import FuzzMachine, FuzzStats, Runner
from sdcp_conformance.harness.specs.drafter import DrafterEnvironment
from sdcp_conformance.harness.target import TargetConfig

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


class DrafterRunner(Runner[DrafterStepExecutor, FuzzStats]):
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


# --------------------------------------------------------------------------- the campaign


@dataclass(frozen=True)
class DrafterCampaignConfig(FuzzConfig):
    step_count: int = 8


DrafterCampaignResult = FuzzResult[FuzzStats]


class DrafterRole(campaign.Role[DrafterCampaignConfig, DrafterEnvironment]):
    """The drafter's campaign: a reproducible embedded drafter (D-DRF-17), so replays and shrinking see the same
    drafter every time."""

    name = "drafter"
    examples = 50
    chunk = 10
    loggers = ("sdcp_conformance.reference.drafter",)

    def planted(self, mutant: str) -> Any:
        from sdcp_conformance.mutants.catalogue import get_mutant

        return get_mutant(mutant, "drafter").factory

    def environment(self, target: TargetConfig | None, app_factory: Any) -> Coroutine[Any, Any, DrafterEnvironment]:
        return DrafterEnvironment.start(target, app_factory=app_factory, reproducible=True)

    def runner(self, loop: LoopThread, env: DrafterEnvironment, config: DrafterCampaignConfig | None,
               progress: Progress | None) -> DrafterRunner:
        return DrafterRunner(loop, env, progress, strict=config is not None and config.strict)


DRAFTER = DrafterRole()


def run_drafter_campaign(config: DrafterCampaignConfig, progress: Progress | None = None) -> DrafterCampaignResult:
    return campaign.run(DRAFTER, config, progress)


def replay_drafter_file(path: Path, *, target: TargetConfig | None = None, mutant: str | None = None,
                        other_iut: bool = False) -> ReplayResult:
    """Run a saved drafter failure again against the drafter it failed against; ``fixed`` when it no longer fails.

    Another drafter than the recorded one is refused with :class:`~sdcp_conformance.errors.InvalidArgument` unless
    ``other_iut``.
    """
    return campaign.replay(DRAFTER, path, target=target, mutant=mutant, other_iut=other_iut)


__all__ = ["DRAFTER", "DrafterCampaignConfig", "DrafterCampaignResult", "DrafterFuzz", "DrafterRole",
           "DrafterRunner", "replay_drafter_file", "run_drafter_campaign"]
