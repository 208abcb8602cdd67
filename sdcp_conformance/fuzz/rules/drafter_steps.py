"""The drafter's steps: the harness, as the drafter's verifier and router, answers with generated sequences.

One :class:`DrafterStepExecutor` (on the executor base,
:class:`~sdcp_conformance.fuzz.executor.RoleExecutor`) serves one example: a fresh session at the
drafter under test, assigned by the harness as router, whose proposals the
harness answers as verifier in the way each generated step says — a verdict
(any number accepted, continue or reduce, any m_cap), a held verdict, a
lost one (503, 429, 502, reset stream, dropped connection), a refusal (403,
410, 422, 418), 409 ``sdcp-stale-base`` with a state ahead (its output
served honestly or forged) or with state 3/4/5, ``sdcp-q-unavailable``, a
stopping action, a re-assignment (same or higher epoch, either verifier)
or a policy change (a new sampling member). After every step the played
verifier's observations on every proposal that arrived are judged exactly as
in the suite (:class:`~sdcp_conformance.harness.contexts.drafter.DrafterContext`):
a FAILED finding (or NON-STRICT under ``--strict``) is a :class:`~sdcp_conformance.fuzz.steps.Violation`,
which Hypothesis shrinks.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Awaitable, Callable
from typing import Any

from sdcp_conformance.fuzz.executor import Handler, RoleExecutor
from sdcp_conformance.fuzz.judging import FuzzJudge, judging_scope
from sdcp_conformance.fuzz.steps import Step
from sdcp_conformance.harness.case import CaseStopped
from sdcp_conformance.harness.contexts.drafter import DrafterContext
from sdcp_conformance.harness.roles.played_session import Arrival, PlayedSession
from sdcp_conformance.harness.specs.drafter import DrafterEnvironment
from sdcp_conformance.judge import Level
from sdcp_conformance.protocol.control import Action
from sdcp_conformance.protocol.problems import ProblemType

PROMPTS = ((5, 9, 14), (1, 2, 3, 4), (77,), (120, 3, 40))
LOSSES = ("503", "429", "502", "reset", "close")
REFUSALS = ("403", "410", "422", "418", "409-q")
STOPS = (int(Action.SWITCH), int(Action.SELF_DECODE), int(Action.FINISH), int(Action.FAIL), 9, 103, 104, 105)
"""Verdict actions (9: unknown), and 100 + a stale-base state of 3, 4 or 5."""
FUZZ_QUIET_S = 0.2
"""D-JUDGE-D9: the fuzzer's quiet window. Shorter than the suite's (D-JUDGE-D5): a fuzz campaign waits it after
every stop of thousands of examples, and a drafter that goes on proposing does so within milliseconds of the
verdict; a campaign against a slow drafter finds fewer stop bugs, never false ones."""
FINISH_S = 0.03
"""How long the end of an example waits for what the drafter sends after its last step."""
TEMPERATURES = (250, 700, 1000)
WAIT_MIN_S = 1.0
"""How long a step waits, at least, for the proposal it answers: 2.5 quiet windows of the drafter's pace
(D-JUDGE-D5), so a slow drafter gets proportionally longer."""


FUZZ_DRAFTER_CASE = judging_scope(
    "FUZZ-DRAFTER-STATEFUL", "6.2", "A drafter MUST NOT have more than one outstanding proposal per session.",
    Level.MUST_NOT, title="generated verifier answers judged against every drafter row", role="drafter")
"""The judging scope of a fuzz example: every row a drafter can be judged on."""


class DrafterStepExecutor(RoleExecutor):
    """One example: its session, the context that judges it, and the code that plays each step."""

    def __init__(self, env: DrafterEnvironment, example: str, judge: FuzzJudge | None = None) -> None:
        super().__init__()
        self.env = env
        env.board.close_all()  # the previous example's session is over (the drafter gets 410 for it)
        self.ctx = DrafterContext(env, FUZZ_DRAFTER_CASE, 0, f"fuzz-{example}")
        env.current, env.context = self.ctx.transcript, self.ctx
        self.judge = judge or FuzzJudge()
        self.session: PlayedSession | None = None
        self.pending: Arrival | None = None
        self.idle = False
        """The drafter stopped, as it may (after a stop, a refusal, or q-unavailable): steps have nothing to do."""
        self._seen = 0

    # ------------------------------------------------------------------ around every step

    def enter(self) -> None:
        self.env.current, self.env.context = self.ctx.transcript, self.ctx

    async def play(self, handler: Handler, args: dict[str, Any]) -> None:
        started = self.env.now()
        with contextlib.suppress(CaseStopped):  # its finding is judged below
            await handler(self, args)
        if os.environ.get("SDCP_FUZZ_DEBUG") and self.env.now() - started > 0.5:
            print(f"slow step {self.log[-1]}: {self.env.now() - started:.2f} s", flush=True)

    def judge_step(self, step: Step) -> None:
        self._judge()

    async def finish(self) -> None:
        """End of the example: what the drafter sends just after the last step is judged too."""
        if self.session is not None:
            await self.ctx.next_arrival(self.session, FINISH_S)
        self._judge()

    def _judge(self) -> None:
        """Every proposal that arrived, taken by a step or not, observed as the suite does; its new findings judged
        (a FAILED one, or NON-STRICT under ``--strict``, raises; the others are kept)."""
        if self.session is not None:
            for arrival in self.session.arrivals:
                self.ctx.observe(arrival)
        findings = self.ctx.findings[self._seen:]
        self._seen = len(self.ctx.findings)
        for finding in findings:
            self.judge.take(finding)

    # ------------------------------------------------------------------ helpers

    async def proposal(self, *, may_stop: bool = False) -> Arrival | None:
        """The held proposal, or the next one; None (and idle) when the drafter sent none (allowed or not)."""
        if self.pending is not None:
            held, self.pending = self.pending, None
            return held
        if self.idle or self.session is None:
            return None
        wait = self.wait_s()
        arrival = await self.ctx.next_arrival(self.session, wait)
        if arrival is None:
            self.idle = True
            if not may_stop:
                self.ctx.deviate("R-6.5.2-CONTINUE", f"no proposal within {wait:.1f} s although the drafter had "
                                 "no reason to stop", expected=["a proposal"], actual="none")
        return arrival

    def wait_s(self) -> float:
        return max(WAIT_MIN_S, 2.5 * self.env.pace.quiet_window())

    def stopped(self) -> bool:
        return self.session is None or self.session.stopped is not None or self.idle


# ---------------------------------------------------------------------- steps

Answer = Callable[[DrafterStepExecutor, dict[str, Any], Arrival, PlayedSession], Awaitable[None]]


def _answering(answer: Answer) -> Handler:
    """A step that answers the proposal in hand (the held one, or the next); none, when the drafter sent none (as
    it may: these steps follow a stop, a loss or a refusal as well)."""
    async def step(ex: DrafterStepExecutor, args: dict[str, Any]) -> None:
        arrival = await ex.proposal(may_stop=True)
        if arrival is not None and ex.session is not None:
            await answer(ex, args, arrival, ex.session)

    return step


async def _start(ex: DrafterStepExecutor, args: dict[str, Any]) -> None:
    rule = int(args["rule"])
    sampling = {"temperature_milli": TEMPERATURES[int(args["temperature"]) % len(TEMPERATURES)]} if rule == 2 else None
    contract = ex.ctx.contract(rule=rule, m_max=int(args["m_max"]), sampling=sampling)
    ex.session = await ex.ctx.start(contract=contract, prompt=PROMPTS[int(args["prompt"]) % len(PROMPTS)],
                                    m_init=int(args["m_init"]))


async def _verdict(ex: DrafterStepExecutor, args: dict[str, Any]) -> None:
    arrival = await ex.proposal(may_stop=ex.idle)
    if arrival is None or ex.session is None or arrival.proposal is None:
        return
    session = ex.session
    accepted = min(int(args["accepted"]), arrival.m)
    action = Action.REDUCE if args["reduce"] else Action.CONTINUE
    m_cap = max(1, min(session.m_max, int(args["m_cap"])))
    ex.ctx.answer(session, arrival, ex.ctx.verdict(session, arrival, accepted=accepted, action=action, m_cap=m_cap,
                                                   bonus=3 + int(args["bonus"]) % 120))


@_answering
async def _hold(ex: DrafterStepExecutor, args: dict[str, Any], arrival: Arrival, session: PlayedSession) -> None:
    seen = await _watch(ex, session, int(args["ms"]) / 1000)
    ex.pending = arrival if not seen else seen[-1]


async def _watch(ex: DrafterStepExecutor, session: PlayedSession, seconds: float) -> list[Arrival]:
    deadline = ex.env.now() + seconds
    seen = []
    while (remaining := deadline - ex.env.now()) > 0:
        arrival = await ex.ctx.next_arrival(session, remaining)
        if arrival is None:
            break
        seen.append(arrival)
    return seen


@_answering
async def _lose(ex: DrafterStepExecutor, args: dict[str, Any], arrival: Arrival, session: PlayedSession) -> None:
    ex.ctx.lose(arrival, LOSSES[int(args["kind"]) % len(LOSSES)])
    retry = await ex.ctx.next_arrival(session, ex.wait_s() + 2.0)  # after the drafter's backoff
    if retry is None:
        ex.ctx.deviate("R-6.9-RETRY", "a lost verdict was not retried", expected=["the same proposal"],
                       actual="none")
        ex.idle = True
        return
    ex.pending = retry


@_answering
async def _refuse(ex: DrafterStepExecutor, args: dict[str, Any], arrival: Arrival, session: PlayedSession) -> None:
    kind = REFUSALS[int(args["kind"]) % len(REFUSALS)]
    problems = {"403": ProblemType.NOT_ASSIGNED, "410": ProblemType.SESSION_CLOSED, "422": ProblemType.BAD_PROPOSAL,
                "409-q": ProblemType.Q_UNAVAILABLE}
    if kind == "409-q" and session.rule != 2:
        kind = "422"
    if kind in problems:
        ex.ctx.refuse(session, arrival, problems[kind])
    else:
        ex.ctx.refuse_plain(session, arrival, int(kind))
    await _after_final(ex)


async def _after_final(ex: DrafterStepExecutor) -> None:
    """After a final answer the drafter may go on with another proposal or stop; either is fine."""
    assert ex.session is not None
    arrival = await ex.ctx.next_arrival(ex.session, FUZZ_QUIET_S)
    if arrival is None:
        ex.idle = True
    else:
        ex.pending = arrival


@_answering
async def _stale(ex: DrafterStepExecutor, args: dict[str, Any], arrival: Arrival, session: PlayedSession) -> None:
    before = len(session.output)
    for _ in range(int(args["advance"])):
        session.advanced(session.round + 1, ex.ctx.target_greedy(session.context(), 2))
    if args["forge"]:
        forged = list(session.output)
        for index in range(before, len(forged)):
            forged[index] = (forged[index] + 1) % 128 or 3
        session.forged_output, session.forged_after = forged, before
    ex.ctx.refuse(session, arrival, ProblemType.STALE_BASE, with_state=True)
    await _after_final(ex)


@_answering
async def _stop(ex: DrafterStepExecutor, args: dict[str, Any], arrival: Arrival, session: PlayedSession) -> None:
    """A verdict with a stopping (or unknown) action, or sdcp-stale-base with state 3/4/5: no proposal may follow."""
    kind = STOPS[int(args["action"]) % len(STOPS)]
    if kind >= 100:  # a stale-base state of 3, 4 or 5
        state = kind - 100
        members = {"session": session.id, "epoch": session.epoch, "round": session.round,
                   "committed": len(session.output), "digest": session.digest, "state": state}
        ex.ctx.refuse(session, arrival, ProblemType.STALE_BASE, state=members)
        session.stop("P1-DRF-6/STOP", f"sdcp-stale-base with state {state}")
    else:
        ex.ctx.answer(session, arrival, ex.ctx.verdict(session, arrival, action=kind))
    assert session.stopped is not None
    await ex.ctx.quiet(session, session.stopped[0], session.stopped[1], window_s=FUZZ_QUIET_S)
    ex.idle = True


async def _reassign(ex: DrafterStepExecutor, args: dict[str, Any]) -> None:
    session = ex.session
    if session is None:
        return
    if ex.pending is not None:  # the held proposal is abandoned by the new assignment (P1-DRF-7)
        ex.ctx.lose(ex.pending, "503")
        ex.pending = None
    sampling = None
    if session.rule == 2 and args["policy"]:
        sampling = {"temperature_milli": TEMPERATURES[int(args["policy"]) % len(TEMPERATURES)]}
    await ex.ctx.assign_ok(session, verifier=int(args["verifier"]) % 2, m_init=int(args["m_init"]),
                           epoch=session.epoch + int(args["epoch_delta"]),
                           **({"sampling": sampling} if sampling else {}))
    ex.idle = False


DrafterStepExecutor.rules = {
    "start": _start, "verdict": _verdict, "hold": _hold, "lose": _lose, "refuse": _refuse, "stale": _stale,
    "stop": _stop, "reassign": _reassign,
}

__all__ = ["FUZZ_DRAFTER_CASE", "FUZZ_QUIET_S", "LOSSES", "REFUSALS", "STOPS", "DrafterStepExecutor"]
