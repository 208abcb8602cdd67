"""The verifier's rules: the stateful fuzzer's protocol sequences (or ``--messages``: single hostile messages) and
its campaign.

Each rule builds a :class:`~sdcp_conformance.fuzz.steps.Step` from its
generated arguments; the verifier's steps
(:class:`~sdcp_conformance.fuzz.rules.verifier_steps.StepExecutor`) play it
through the harness roles (router, drafters, cache) and check every step
against :mod:`~sdcp_conformance.fuzz.model`, the harness's own account of
what a correct verifier must answer. A violation makes Hypothesis shrink the
example; the steps of the last failing run (the minimal one, which
Hypothesis replays last) are kept as the failure, so they can be saved and
replayed exactly. The runner, the recording of failures and the replay are
the scaffold's (:mod:`sdcp_conformance.fuzz.scaffold`), the campaign is the
one loop's (:mod:`sdcp_conformance.fuzz.campaign`); this module holds the
verifier's rules, how its executor is built and what its campaign is told.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hypothesis import strategies as st
from hypothesis.stateful import initialize, precondition, rule

from sdcp_conformance.fuzz import campaign
from sdcp_conformance.fuzz.campaign import FuzzConfig, FuzzResult, ReplayResult, fuzz_for
from sdcp_conformance.fuzz.judging import FuzzJudge
from sdcp_conformance.fuzz.loop import LoopThread
from sdcp_conformance.fuzz.messages import MessageFuzzer, MessageStats, replay_messages, run_messages
from sdcp_conformance.fuzz.replay import ReplayFile
from sdcp_conformance.fuzz.rules.verifier_steps import PROPOSAL_KINDS, StepExecutor
from sdcp_conformance.fuzz.scaffold import FuzzFailure, FuzzMachine, FuzzStats, Runner
from sdcp_conformance.harness.specs.verifier import AppFactory, VerifierEnvironment
from sdcp_conformance.harness.target import TargetConfig

Stats = FuzzStats | MessageStats
Progress = Callable[[Stats], None]

CHUNK = 25
"""Examples per Hypothesis run within a time budget (the budget is checked between runs)."""
MESSAGE_CHUNK = CHUNK * 20
"""Messages per Hypothesis run within a time budget."""

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


class VerifierRunner(Runner[StepExecutor, FuzzStats]):
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


# --------------------------------------------------------------------------- the campaign


@dataclass(frozen=True)
class CampaignConfig(FuzzConfig):
    messages: bool = False
    """Single hostile messages (:mod:`~sdcp_conformance.fuzz.messages`) instead of protocol sequences."""


CampaignResult = FuzzResult[Stats]
"""A verifier campaign's result (its stats are a message fuzzer's with ``--messages``)."""


class VerifierRole(campaign.Role[CampaignConfig, VerifierEnvironment]):
    """The verifier's campaign: the environment lives on the loop (:meth:`LoopThread.start`), which stops it."""

    name = "verifier"
    examples = 100
    chunk = CHUNK
    loggers = ("sdcp_conformance.transport.server", "sdcp_conformance.reference.verifier.app")

    def planted(self, mutant: str) -> AppFactory:
        from sdcp_conformance.mutants import get_mutant
        from sdcp_conformance.mutants.verifier.fuzz_targets import FUZZ_MUTANTS_BY_NAME

        found = FUZZ_MUTANTS_BY_NAME.get(mutant)
        return (found or get_mutant(mutant)).factory

    def start(self, loop: LoopThread, target: TargetConfig | None, mutant: str | None) -> VerifierEnvironment:
        return loop.start(target, app_factory=self.app_factory(mutant))

    def stop(self, loop: LoopThread, env: VerifierEnvironment) -> None:
        """The loop stops it as it closes."""

    def runner(self, loop: LoopThread, env: VerifierEnvironment, config: CampaignConfig | None,
               progress: Progress | None) -> VerifierRunner:
        if config is None:
            return VerifierRunner(loop)
        nonce = f"seed{config.seed}" if config.target is None else None  # a fresh embedded IUT: fully reproducible
        return VerifierRunner(loop, progress, strict=config.strict, nonce=nonce)

    def fuzz(self, loop: LoopThread, env: VerifierEnvironment, config: CampaignConfig,
             progress: Progress | None) -> tuple[Stats, FuzzFailure | None]:
        if not config.messages:
            return super().fuzz(loop, env, config, progress)
        fuzzer = MessageFuzzer(loop, progress, strict=config.strict)
        return fuzzer.stats, fuzz_for(
            lambda examples, seed: run_messages(fuzzer, examples=examples, seed=seed, database=config.database),
            examples=config.examples or 1000, budget_s=config.budget_s, seed=config.seed, chunk=MESSAGE_CHUNK)

    def kind(self, config: CampaignConfig) -> str:
        return "messages" if config.messages else "stateful"

    def replay_steps(self, loop: LoopThread, env: VerifierEnvironment, recorded: ReplayFile) -> FuzzFailure | None:
        if recorded.kind == "messages":
            return replay_messages(loop, recorded.stateful_steps())
        return super().replay_steps(loop, env, recorded)


VERIFIER = VerifierRole()


def run_campaign(config: CampaignConfig, progress: Progress | None = None) -> CampaignResult:
    return campaign.run(VERIFIER, config, progress)


def replay_file(path: Path, *, target: TargetConfig | None = None, mutant: str | None = None,
                other_iut: bool = False) -> ReplayResult:
    """Run a saved failure again against the IUT it failed against; ``fixed`` when it no longer fails.

    ``target`` and ``mutant`` name the IUT (the file's mutant applies when neither is given); another IUT than the
    recorded one is refused with :class:`~sdcp_conformance.errors.InvalidArgument` unless ``other_iut``.
    """
    return campaign.replay(VERIFIER, path, target=target, mutant=mutant, other_iut=other_iut)


__all__ = [
    "VERIFIER",
    "CampaignConfig",
    "CampaignResult",
    "VerifierFuzz",
    "VerifierRole",
    "VerifierRunner",
    "replay_file",
    "run_campaign",
]
