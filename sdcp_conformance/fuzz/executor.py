"""The one executor base: what plays one example's steps against the IUT, whatever the role under test.

A step is a rule name and its generated arguments (a
:class:`~sdcp_conformance.fuzz.steps.Step`), resolved against the example's
own state only when it runs, so a saved list of steps replays exactly. A
role's executor (under :mod:`sdcp_conformance.fuzz.rules`) says what is its
own: the coroutine that plays each rule (:attr:`RoleExecutor.rules`) and what
it judges after every step (:meth:`RoleExecutor.judge_step`). Playing a step
is here, once: the rule looked up (an unknown one is a harness error), the
environment pointed at the example (:meth:`RoleExecutor.enter`), the step
logged, played, then judged; the first rule broken raises a
:class:`~sdcp_conformance.fuzz.steps.Violation`, which the scaffold
(:mod:`sdcp_conformance.fuzz.scaffold`) records and Hypothesis shrinks.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, ClassVar

from sdcp_conformance.fuzz.steps import Step

Handler = Callable[..., Awaitable[None]]
"""How a role plays one rule: called with the executor and the step's arguments (:meth:`RoleExecutor.play`)."""


class RoleExecutor:
    """One example's steps against the environment; raises :class:`~sdcp_conformance.fuzz.steps.Violation` on the
    first rule broken."""

    rules: ClassVar[Mapping[str, Handler]]
    """The role's rules: a step's rule name → what plays it."""

    def __init__(self) -> None:
        self.log: list[str] = []
        """The example's steps so far, as they read."""

    async def apply(self, step: Step) -> None:
        handler = self.rules.get(step.rule)
        if handler is None:
            raise ValueError(f"unknown fuzz rule {step.rule!r}")
        self.enter()
        self.log.append(step.describe())
        await self.play(handler, dict(step.args))
        self.judge_step(step)

    # ------------------------------------------------------------------ what a role says

    def enter(self) -> None:
        """Point the environment at this example (its transcript, its context) before a step."""

    async def play(self, handler: Handler, args: dict[str, Any]) -> None:
        """Play one rule: ``handler(executor, args)``."""
        await handler(self, args)

    def judge_step(self, step: Step) -> None:
        """Judge what ``step`` left (raising :class:`~sdcp_conformance.fuzz.steps.Violation` on a rule broken)."""


__all__ = ["Handler", "RoleExecutor"]
