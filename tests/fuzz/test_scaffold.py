"""The stateful fuzzers' one scaffold (:mod:`sdcp_conformance.fuzz.scaffold`), with a toy role: what a failing
step records, what replay stops at, how a flaky failure and a role's end-of-example hooks are handled."""

from __future__ import annotations

import inspect
from collections.abc import Coroutine, Iterator
from typing import Any

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import initialize, rule

from sdcp_conformance.fuzz.campaign import FuzzConfig, fuzz_for
from sdcp_conformance.fuzz.loop import LoopThread
from sdcp_conformance.fuzz.scaffold import (
    TRANSCRIPT_TAIL,
    FuzzFailure,
    FuzzMachine,
    FuzzStats,
    Runner,
    bind,
)
from sdcp_conformance.fuzz.steps import Step, Violation


class Entry:
    def __init__(self, text: str) -> None:
        self.text = text

    def render(self) -> str:
        return f"> {self.text}"


class Transcript:
    def __init__(self) -> None:
        self.items: list[Entry] = []

    def entries(self) -> list[Entry]:
        return list(self.items)


class Context:
    def __init__(self) -> None:
        self.transcript = Transcript()


class ToyExecutor:
    """Plays ``poke(x)`` steps: x at or above ``bad`` is a violation, x == ``crash`` a harness error."""

    def __init__(self, name: str, *, bad: int = 7, crash: int = -1, late: bool = False) -> None:
        self.name = name
        self.ctx = Context()
        self.applied: list[Step] = []
        self.bad, self.crash, self.late = bad, crash, late
        self.events: list[str] = []

    async def apply(self, step: Step) -> None:
        self.applied.append(step)
        self.ctx.transcript.items.append(Entry(step.describe()))
        x = int(step.args.get("x", 0) or 0)
        if x == self.crash:
            raise RuntimeError(f"boom at {x}")
        if x >= self.bad:
            raise Violation(f"x={x} is too much", row="R-TOY", level="FAILED")

    async def finish(self) -> None:
        self.events.append("finish")
        if self.late:
            raise Violation("a late answer", row="R-LATE", level="NON-STRICT")

    async def close(self) -> None:
        self.events.append("close")


class ToyMachine(FuzzMachine):
    @initialize(n=st.integers(0, 3))
    def start(self, n: int) -> None:
        self.do("start", n=n)

    @rule(x=st.integers(0, 10))
    def poke(self, x: int) -> None:
        self.do("poke", x=x)


class ToyRunner(Runner[ToyExecutor, FuzzStats]):
    machine = ToyMachine
    step_count = 5

    def __init__(self, loop: LoopThread, **options: Any) -> None:
        self.seen: list[tuple[int, int]] = []
        super().__init__(loop, FuzzStats(), lambda stats: self.seen.append((stats.examples, stats.steps)))
        self.options = options
        self.executors: list[ToyExecutor] = []
        self.counted = 0

    def new_executor(self, example: str) -> ToyExecutor:
        executor = ToyExecutor(example, **self.options)
        self.executors.append(executor)
        return executor

    def last_check(self, executor: ToyExecutor) -> Coroutine[Any, Any, None]:
        return executor.finish()

    def close(self, executor: ToyExecutor) -> Coroutine[Any, Any, None]:
        return executor.close()

    def tally(self, executor: ToyExecutor) -> None:
        self.counted += 1


@pytest.fixture(scope="module")
def loop() -> Iterator[LoopThread]:
    with LoopThread() as thread:
        yield thread


def poke(x: int) -> Step:
    return Step("poke", {"x": x})


def test_a_violation_records_exactly_the_steps_up_to_it_and_the_transcript(loop: LoopThread) -> None:
    runner = ToyRunner(loop)
    executor = runner.executor()
    steps: list[Step] = []
    for x in range(TRANSCRIPT_TAIL + 2):
        runner.execute(executor, steps, poke(x % 7))
    with pytest.raises(Violation):
        runner.execute(executor, steps, poke(9))
    failure = runner.stats.failure
    assert failure is not None
    assert failure.steps == [*(poke(x % 7) for x in range(TRANSCRIPT_TAIL + 2)), poke(9)]
    assert (failure.message, failure.level, failure.row) == ("x=9 is too much", "FAILED", "R-TOY")
    shown = [f"> {step.describe()}" for step in failure.steps][-TRANSCRIPT_TAIL:]
    assert failure.transcript.splitlines() == shown
    steps.append(poke(1))
    assert len(failure.steps) == TRANSCRIPT_TAIL + 3, "the failure keeps its own copy of the steps"
    assert runner.stats.first_found is not None and runner.stats.first_found[:2] == (1, TRANSCRIPT_TAIL + 3)
    assert runner.stats.examples == 1 and runner.stats.steps == TRANSCRIPT_TAIL + 3
    assert runner.counted == TRANSCRIPT_TAIL + 3 and runner.seen[-1] == (1, TRANSCRIPT_TAIL + 3)


def test_an_exception_that_is_not_a_violation_is_recorded_as_an_error(loop: LoopThread) -> None:
    runner = ToyRunner(loop, crash=3)
    executor = runner.executor()
    steps = [poke(1)]
    with pytest.raises(RuntimeError):
        runner.execute(executor, steps, poke(3))
    failure = runner.stats.failure
    assert failure is not None
    assert (failure.level, failure.message, failure.row) == ("ERROR", "RuntimeError: boom at 3", "")
    assert failure.steps == [poke(1), poke(3)] and failure.transcript == "> poke(x=3)"
    assert runner.stats.first_found is None, "only a violation is a found failure"
    assert runner.seen == [(1, 1)], "progress is reported after a failing step too"


def test_a_campaign_shrinks_to_the_shortest_violating_steps(loop: LoopThread) -> None:
    runner = ToyRunner(loop)
    failure = runner.run(examples=100, seed=1)
    assert failure is not None and not failure.flaky and not runner.stats.flaky
    assert failure.steps == [Step("start", {"n": 0}), poke(7)]
    assert failure.message == "x=7 is too much" and failure.transcript == "> start(n=0)\n> poke(x=7)"
    assert runner.stats.first_found is not None and runner.stats.examples >= runner.stats.first_found[0]
    assert all(executor.events == ["finish", "close"] for executor in runner.executors), "teardown: check, close"


def test_the_last_check_fails_the_examples_steps(loop: LoopThread) -> None:
    runner = ToyRunner(loop, bad=99, late=True)
    failure = runner.run(examples=20, seed=0, step_count=3)
    assert failure is not None and (failure.message, failure.level, failure.row) == (
        "a late answer", "NON-STRICT", "R-LATE")
    assert failure.steps == [Step("start", {"n": 0})], "shrunk to the initial step alone"


def test_a_clean_campaign_returns_no_failure_and_runs_the_step_count(loop: LoopThread) -> None:
    runner = ToyRunner(loop, bad=99)
    assert runner.run(examples=10, seed=3) is None
    assert runner.stats.examples == 10 and runner.stats.failure is None and runner.stats.first_found is None
    assert max(len(executor.applied) for executor in runner.executors) == ToyRunner.step_count


def test_a_failure_that_does_not_happen_again_is_kept_and_marked_flaky(loop: LoopThread) -> None:
    class OnceExecutor(ToyExecutor):
        failed = False

        async def apply(self, step: Step) -> None:
            self.applied.append(step)
            if step.rule == "poke" and not OnceExecutor.failed:
                OnceExecutor.failed = True
                raise Violation("seen once", row="R-ONCE")

    class OnceRunner(ToyRunner):
        def new_executor(self, example: str) -> ToyExecutor:
            return OnceExecutor(example)

    runner = OnceRunner(loop)
    failure = runner.run(examples=20, seed=0)
    assert runner.stats.flaky
    assert failure is not None and failure.flaky and failure.message == "seen once"


def test_replay_stops_at_the_first_violation(loop: LoopThread) -> None:
    runner = ToyRunner(loop)
    failure = runner.replay([poke(1), poke(8), poke(2), poke(9)])
    executor = runner.executors[-1]
    assert failure is not None and failure.steps == [poke(1), poke(8)] and failure.message == "x=8 is too much"
    assert executor.applied == [poke(1), poke(8)], "nothing after the violation is played"
    assert executor.events == ["close"], "no last check after a violation; the clean-up always"
    assert executor.name.startswith("replay-") and runner.stats.examples == 0


def test_replay_runs_the_last_check_when_every_step_passes(loop: LoopThread) -> None:
    runner = ToyRunner(loop, late=True)
    failure = runner.replay([poke(1), poke(2)])
    assert failure is not None and failure.steps == [poke(1), poke(2)] and failure.row == "R-LATE"
    assert runner.executors[-1].events == ["finish", "close"]
    assert ToyRunner(loop).replay([poke(1)]) is None


def test_a_bound_machine_keeps_its_roles_name_and_source(loop: LoopThread) -> None:
    bound = bind(ToyMachine, ToyRunner(loop))
    assert bound is not ToyMachine and issubclass(bound, ToyMachine)
    assert (bound.__name__, bound.__qualname__, bound.__module__) == ("ToyMachine", "ToyMachine", __name__)
    assert inspect.getsource(bound) == inspect.getsource(ToyMachine)  # Hypothesis keys the corpus by it


def test_fuzz_for_runs_once_without_a_budget_and_in_seeded_chunks_with_one() -> None:
    calls: list[tuple[int, int]] = []

    def run(examples: int, seed: int) -> FuzzFailure | None:
        calls.append((examples, seed))
        return FuzzFailure([], "found", "FAILED") if len(calls) == 3 else None

    assert fuzz_for(run, examples=100, budget_s=None, seed=5, chunk=25) is None and calls == [(100, 5)]
    calls.clear()
    found = fuzz_for(run, examples=100, budget_s=3600, seed=5, chunk=25)
    assert found is not None and calls == [(25, 5), (25, 6), (25, 7)]
    calls.clear()
    assert fuzz_for(run, examples=100, budget_s=0, seed=5, chunk=25) is None and calls == []


def test_the_campaign_configs_share_their_common_fields() -> None:
    from sdcp_conformance.fuzz.rules.drafter import DrafterCampaignConfig
    from sdcp_conformance.fuzz.rules.failover import FailoverConfig
    from sdcp_conformance.fuzz.rules.verifier import CampaignConfig

    common = ["target", "mutant", "examples", "seed", "step_count", "database", "out", "budget_s", "strict"]
    assert list(FuzzConfig.__dataclass_fields__) == common
    assert list(CampaignConfig.__dataclass_fields__) == [*common, "messages"]
    assert list(DrafterCampaignConfig.__dataclass_fields__) == list(FailoverConfig.__dataclass_fields__) == common
    assert (CampaignConfig().step_count, DrafterCampaignConfig().step_count, FailoverConfig().step_count) == (12, 8, 6)
    assert FailoverConfig(None, "m", 5, 4, 3).step_count == 3 and FailoverConfig().out is None, "the router's order"
