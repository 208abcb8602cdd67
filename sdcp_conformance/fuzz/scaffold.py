"""The stateful fuzzers' one scaffold, whatever the role under test: stats, runner, state machine base, replay.

A role (the verifier's, the drafter's and the router failover campaign's,
under :mod:`sdcp_conformance.fuzz.rules`) keeps only what is its own: its
rules, on a subclass of :class:`FuzzMachine`; its executor (on the one base,
:class:`~sdcp_conformance.fuzz.executor.RoleExecutor`), which plays a
:class:`~sdcp_conformance.fuzz.steps.Step` on the harness's event loop
(:class:`~sdcp_conformance.fuzz.loop.LoopThread`); and, on a subclass of
:class:`Runner`, how an example's executor is built and ended. Everything
else is here, once: each rule's step goes through :meth:`Runner.execute`,
which records a :class:`~sdcp_conformance.fuzz.steps.Violation` (or any
other exception, a hang or a harness bug, at level ``ERROR``) as the
example's failure with the steps so far and the end of its transcript. A
violation makes Hypothesis shrink the example; the steps of the last failing
run (the minimal one, which Hypothesis replays last) are kept as the
failure, so they can be saved and replayed exactly (:meth:`Runner.replay`).
The campaigns around it are one loop too (:mod:`sdcp_conformance.fuzz.campaign`).
"""

from __future__ import annotations

import itertools
import secrets
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, Protocol, TypeVar, cast

from hypothesis.database import ExampleDatabase
from hypothesis.stateful import RuleBasedStateMachine

from sdcp_conformance.fuzz.database import run_machine
from sdcp_conformance.fuzz.judging import FuzzJudge
from sdcp_conformance.fuzz.loop import LoopThread
from sdcp_conformance.fuzz.steps import Step, Violation

TRANSCRIPT_TAIL = 12
"""How many of the example's last exchanges a failure keeps."""


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
    first_found: tuple[int, int, float] | None = None
    """(examples, steps, seconds) when the first violation was seen, before shrinking."""

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started


class Executor(Protocol):
    """A role's player of one example's steps."""

    def apply(self, step: Step) -> Coroutine[Any, Any, None]: ...


E = TypeVar("E", bound=Executor)
S = TypeVar("S", bound=FuzzStats)
M = TypeVar("M", bound="FuzzMachine")


class Runner(Generic[E, S]):
    """Runs one Hypothesis state machine (:attr:`machine`, bound to this runner) per example on ``loop``.

    A role's subclass names its :attr:`machine` and default :attr:`step_count`, builds its executor
    (:meth:`new_executor`) and may end an example with a check that can fail (:meth:`last_check`) or a clean-up
    (:meth:`close`).
    """

    machine: ClassVar[type[FuzzMachine]]
    """The role's rules."""
    step_count: ClassVar[int]
    """Steps per example unless :meth:`run` is told otherwise."""

    def __init__(self, loop: LoopThread, stats: S, progress: Callable[[S], None] | None = None, *,
                 nonce: str | None = None) -> None:
        self.loop = loop
        self.stats = stats
        self._progress = progress
        self._nonce = nonce or secrets.token_hex(4)
        self._counter = itertools.count()

    # ------------------------------------------------------------------ what a role says

    def new_executor(self, example: str) -> E:
        """A fresh executor for the example named ``example``."""
        raise NotImplementedError

    def last_check(self, executor: E) -> Coroutine[Any, Any, None] | None:
        """The example's last check, after its last step (a violation there fails the example's steps)."""
        return None

    def close(self, executor: E) -> Coroutine[Any, Any, None] | None:
        """What ends the example whatever happened (so later examples do not meet what it left)."""
        return None

    def tally(self, executor: E) -> None:
        """Count what the role counts after each step (before the progress callback sees the stats)."""

    def transcript(self, executor: E) -> str:
        """The example's last exchanges, as a failure shows them ("" for an executor without a case context)."""
        ctx = getattr(executor, "ctx", None)
        if ctx is None:
            return ""
        return "\n".join(entry.render() for entry in ctx.transcript.entries()[-TRANSCRIPT_TAIL:])

    def failure(self, steps: Sequence[Step], exc: Exception, executor: E) -> FuzzFailure:
        """The failure ``exc`` makes of ``steps``: a violation as judged, anything else at level ``ERROR``."""
        if isinstance(exc, Violation):
            return FuzzFailure(list(steps), exc.text, exc.level, self.transcript(executor), exc.row)
        return FuzzFailure(list(steps), f"{type(exc).__name__}: {exc}", "ERROR", self.transcript(executor))

    # ------------------------------------------------------------------ what the machine calls

    def executor(self) -> E:
        self.stats.examples += 1
        return self.new_executor(f"{self._nonce}-{next(self._counter)}")

    def execute(self, executor: E, steps: list[Step], step: Step) -> None:
        steps.append(step)
        self.stats.steps += 1
        try:
            self.loop.run(executor.apply(step))
        except Exception as exc:  # a hang or a harness bug too: still a failing, replayable sequence
            self._found(self.failure(steps, exc, executor), exc)
            raise
        finally:
            self.tally(executor)
            if self._progress is not None:
                self._progress(self.stats)

    def finish(self, executor: E, steps: list[Step]) -> None:
        """The end of an example (the machine's teardown): :meth:`last_check`, then :meth:`close`."""
        try:
            try:
                self._hook(self.last_check(executor))
            except Violation as violation:
                self._found(self.failure(steps, violation, executor), violation)
                raise
        finally:
            self._hook(self.close(executor))

    def _hook(self, hook: Coroutine[Any, Any, None] | None) -> None:
        """A role's end-of-example hook, if it has one, on the loop."""
        if hook is not None:
            self.loop.run(hook)

    def _found(self, failure: FuzzFailure, exc: Exception) -> None:
        self.stats.failure = failure
        if isinstance(exc, Violation) and self.stats.first_found is None:
            self.stats.first_found = (self.stats.examples, self.stats.steps, self.stats.elapsed)

    # ------------------------------------------------------------------ running

    def run(self, *, examples: int, seed: int, step_count: int | None = None,
            database: ExampleDatabase | None = None) -> FuzzFailure | None:
        """Up to ``examples`` examples from ``seed``; returns the shrunk failure, if any."""
        self.stats.failure = None
        # The corpus in ``database`` is replayed even under a seed (Hypothesis' @seed alone would turn it off).
        if run_machine(bind(self.machine, self), examples=examples, seed=seed,
                       step_count=self.step_count if step_count is None else step_count, database=database,
                       recorded=lambda: self.stats.failure is not None):
            self._flaky()
        return self.stats.failure

    def _flaky(self) -> None:
        """The IUT failed once and then not again on the same steps: a nondeterministic bug. It is reported as
        found (its steps are kept), marked flaky, rather than counted and passed over."""
        self.stats.flaky = True
        if self.stats.failure is not None:
            self.stats.failure.flaky = True

    def replay(self, steps: Sequence[Step]) -> FuzzFailure | None:
        """Run ``steps`` once, in order, outside Hypothesis, then the last check; the first violation is the
        failure."""
        executor = self.new_executor(f"replay-{secrets.token_hex(4)}")
        done: list[Step] = []
        try:
            for step in steps:
                done.append(step)
                self.loop.run(executor.apply(step))
            self._hook(self.last_check(executor))
        except Violation as violation:
            return self.failure(done, violation, executor)
        finally:
            self._hook(self.close(executor))
        return None


class FuzzMachine(RuleBasedStateMachine):
    """A role's state machine: its rules (synchronous) call :meth:`do`; the bound runner's loop does the I/O."""

    runner: ClassVar[Runner[Any, Any]]

    def __init__(self) -> None:
        super().__init__()
        self.executor = self.runner.executor()
        self.steps: list[Step] = []

    def do(self, rule_name: str, **args: Any) -> None:
        self.runner.execute(self.executor, self.steps, Step(rule_name, args))

    def teardown(self) -> None:
        self.runner.finish(self.executor, self.steps)


def bind(machine: type[M], runner: Runner[Any, Any]) -> type[M]:
    """``machine`` bound to ``runner``: a subclass under the same name, qualified name and module, so that
    Hypothesis, which keys a machine's saved examples by its class's source, keeps each role's corpus apart."""
    bound = type(machine.__name__, (machine,), {"runner": runner, "__qualname__": machine.__qualname__,
                                                "__module__": machine.__module__})
    return cast(type[M], bound)


__all__ = [
    "TRANSCRIPT_TAIL",
    "Executor",
    "FuzzFailure",
    "FuzzMachine",
    "FuzzStats",
    "Runner",
    "bind",
]
