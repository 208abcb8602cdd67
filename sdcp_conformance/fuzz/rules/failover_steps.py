"""The router's steps: the failover campaign's, carried out against a router IUT through the played roles.

A step is a rule name and its generated arguments (a
:class:`~sdcp_conformance.fuzz.steps.Step`), resolved against the campaign's
own state only when it runs, so a saved list of steps replays exactly. Each
step waits, with deadlines, until the router has done what it must (a session
assigned, a failover completed, a dead drafter replaced), and after every
step the history checker (:mod:`sdcp_conformance.harness.roles.router_checks`)
runs over every session of the example: the first violation is the failure,
which Hypothesis then shrinks (Jepsen's checker over a generated schedule of
faults, with Hypothesis' shrinking).
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sdcp_conformance.fuzz.executor import Handler, RoleExecutor
from sdcp_conformance.fuzz.steps import Step, Violation
from sdcp_conformance.harness.contexts.router import TARGET_MODEL
from sdcp_conformance.harness.roles.played_drafters import DrafterMode, PlayedDrafter
from sdcp_conformance.harness.roles.played_verifier import FINISHED, Fault, PlayedVerifier
from sdcp_conformance.harness.roles.router_checks import check_session
from sdcp_conformance.harness.roles.router_history import AssignSeen, OpenSeen
from sdcp_conformance.harness.roles.router_truth import FrontSession, counted
from sdcp_conformance.harness.specs.router import RouterEnvironment
from sdcp_conformance.judge import TABLE
from sdcp_conformance.models.registry import mock_model

ACT_S = 6.0
"""How long a step waits for the router to act (a failover, a replacement) before it calls that a violation."""
TTL_MS = 60
"""The TTL of the last status of an instance the campaign kills: short, so a schedule of many kills runs fast."""
PROMPTS = ((5, 9, 14), (1,), (7, 7, 7, 7), (3, 1, 4, 1, 5))


@dataclass
class Down:
    """Instances the schedule has taken down (and not revived), by name."""

    verifiers: set[str] = field(default_factory=set)
    drafters: set[str] = field(default_factory=set)


class FailoverExecutor(RoleExecutor):
    """One example's steps against the environment; raises :class:`Violation` on the first rule broken."""

    def __init__(self, env: RouterEnvironment, nonce: str) -> None:
        super().__init__()
        self.env = env
        self.nonce = nonce
        self.sessions: list[FrontSession] = []
        self.down = Down()
        self.counter = 0
        self.failovers = 0
        """Verifier kills and partitions that led to a completed failover (for the benchmark's figures)."""
        self.failover_seconds: list[float] = []

    async def play(self, handler: Handler, args: dict[str, Any]) -> None:
        """A rule's arguments are its keywords."""
        await handler(self, **args)

    def judge_step(self, step: Step) -> None:
        self.check()

    # ------------------------------------------------------------------ judging

    def check(self) -> None:
        """The history checker over every session of the example; the first violation in the history raises."""
        facts = self.env.facts
        found = []
        for front in self.sessions:
            found += check_session(self.env.history, facts, front, self.log_of(front))
        if found:
            first = min(found, key=lambda violation: violation.seq)
            level = "MUST" if TABLE[first.row].level.strict else "PROFILE"
            raise Violation(f"{first.row}: {first.message} (expected {first.expected}; got {first.actual})",
                            level=level)

    def log_of(self, front: FrontSession) -> tuple[Any, ...]:
        """The session's commit log as the harness's MLC holds it now."""
        opens = [seen for seen in self.env.history.of(OpenSeen, front.id) if seen.opening is not None]
        return self.env.cache.log(opens[0].opening.commit_log) if opens and opens[0].opening else ()

    # ------------------------------------------------------------------ what the history says

    def _pick(self, index: int) -> FrontSession | None:
        live = [front for front in self.sessions if not self._ended(front)]
        return live[index % len(live)] if live else None

    def _epoch(self, front: FrontSession) -> int:
        return max((seen.opening.epoch for seen in self.env.history.of(OpenSeen, front.id)
                    if seen.accepted and seen.opening), default=0)

    def _serving(self, front: FrontSession) -> PlayedVerifier | None:
        epoch = self._epoch(front)
        held = [seen.verifier for seen in self.env.history.of(OpenSeen, front.id)
                if seen.accepted and seen.opening and seen.opening.epoch == epoch]
        return self.env.verifiers[held[-1]] if held else None

    def _ended(self, front: FrontSession) -> bool:
        serving = self._serving(front)
        served = serving.serving(front.id) if serving is not None else None
        return served is None or served.ended

    def _latest_drafter(self, front: FrontSession) -> str | None:
        found = [seen.drafter for seen in self.env.history.of(AssignSeen, front.id) if 200 <= seen.status < 300]
        return found[-1] if found else None

    async def _wait(self, predicate: Callable[[], bool]) -> bool:
        return await self.env.history.wait_for(predicate, ACT_S)

    # ------------------------------------------------------------------ the rules

    async def _setup(self, enforcing: bool) -> None:
        """A fresh example: every instance up and reporting, the MLC enforcing fences or not (P1-LOG-2)."""
        self.env.reset()
        await self.env.prepare()
        self.env.cache.enforce_fences = enforcing

    async def _open(self, prompt: int) -> None:
        self.counter += 1
        session = hashlib.sha256(f"{self.nonce}:{self.counter}".encode()).digest()[:16]
        target = mock_model(TARGET_MODEL)
        contract = {"target": target.model_sha256, "tokenizer": target.tokenizer_sha256, "rule": 1, "m_max": 4,
                    "max_new": 1000, "stop": [], "low_rounds": 1000, "fallback": [1],
                    "drafters": sorted({drafter.digest for drafter in self.env.drafters.values()})}
        tokens = PROMPTS[prompt % len(PROMPTS)]
        asked = self.env.history.mark()
        answer = await self.env.front.open(contract, tokens, session)
        if not answer.ok:
            return  # no live verifier, say: nothing was opened
        front = FrontSession(session, contract, tokens, tokens, asked)
        self.sessions.append(front)
        self.env.fronts[session] = front
        if len(self.down.drafters) < len(self.env.drafters):
            await self._wait(lambda: self._latest_drafter(front) is not None)

    async def _commit(self, s: int, n: int) -> None:
        front = self._pick(s)
        serving = self._serving(front) if front is not None else None
        if front is None or serving is None or serving.name in self.down.verifiers:
            return
        tokens = [int(byte) % 128 for byte in hashlib.sha256(f"{self.nonce}:{front.id.hex()}:{n}:"
                                                             f"{len(self.env.history.items)}".encode()).digest()[:n]]
        serving.commit(front.id, tokens)

    async def _kill(self, s: int) -> None:
        """The serving verifier dies: its status expires and it answers nothing any more."""
        await self._take_down(s, lambda v: setattr(v, "fault", Fault.TRANSPORT))

    async def _partition(self, s: int, late: int) -> None:
        """The serving verifier is partitioned: its status no longer arrives, but it keeps serving its old epoch,
        and after the failover it commits ``late`` more tokens past the fence (a non-enforcing MLC keeps them)."""
        front = self._pick(s)
        serving = self._serving(front) if front is not None else None
        await self._take_down(s, lambda v: setattr(v, "zombie", True))
        if front is not None and serving is not None and late and serving.serving(front.id) is not None:
            serving.commit(front.id, [(7 * index + late) % 128 for index in range(late)])

    async def _take_down(self, s: int, fail: Callable[[PlayedVerifier], None]) -> None:
        front = self._pick(s)
        verifier = self._serving(front) if front is not None else None
        alive = [v for v in self.env.verifiers.values() if v.name not in self.down.verifiers]
        if front is None or verifier is None or verifier.name in self.down.verifiers or len(alive) < 2:
            return
        moving = [(other, self._epoch(other)) for other in self.sessions
                  if not self._ended(other) and self._serving(other) is verifier]
        self.down.verifiers.add(verifier.name)
        fail(verifier)
        loop = asyncio.get_running_loop()
        started = loop.time()
        await verifier.status.silence(TTL_MS)
        for other, epoch in moving:
            if not await self._wait(functools.partial(self._resumed, other, epoch)):
                raise Violation(f"R-6.9-ROUTER-RESUME: no failover of a session of {verifier.name} within "
                                f"{ACT_S:.0f} s of its status expiring")
        if moving:
            self.failovers += 1
            self.failover_seconds.append(loop.time() - started)

    def _resumed(self, front: FrontSession, epoch: int) -> bool:
        newer = self._epoch(front) > epoch
        if not newer:
            return False
        if len(self.down.drafters) == len(self.env.drafters):
            return True
        return any(seen.assignment is not None and seen.assignment.epoch > epoch and 200 <= seen.status < 300
                   for seen in self.env.history.of(AssignSeen, front.id))

    async def _drafter_dies(self, d: int) -> None:
        drafters = list(self.env.drafters.values())
        drafter: PlayedDrafter = drafters[d % len(drafters)]
        if drafter.name in self.down.drafters or len(self.down.drafters) + 1 >= len(drafters):
            return
        owned = [(front, len(self.env.history.of(AssignSeen, front.id))) for front in self.sessions
                 if not self._ended(front) and self._latest_drafter(front) == drafter.name
                 and (serving := self._serving(front)) is not None and serving.name not in self.down.verifiers]
        self.down.drafters.add(drafter.name)
        await drafter.die(TTL_MS)
        for front, before in owned:
            if not await self._wait(functools.partial(self._replaced, front, before, drafter.name)):
                raise Violation(f"R-6.9-DRAFTER-FAILURE: {drafter.name}'s status expired and its session was not "
                                f"reassigned within {ACT_S:.0f} s")

    def _replaced(self, front: FrontSession, before: int, dead: str) -> bool:
        later = self.env.history.of(AssignSeen, front.id)[before:]
        return any(seen.drafter != dead and 200 <= seen.status < 300 for seen in later)

    async def _revive(self, i: int) -> None:
        names = [*self.env.verifiers, *self.env.drafters]
        name = names[i % len(names)]
        if name in self.env.verifiers:
            verifier = self.env.verifiers[name]
            verifier.fault, verifier.zombie = Fault.NONE, False
            self.down.verifiers.discard(name)
            await verifier.status.revive()
        else:
            drafter = self.env.drafters[name]
            drafter.mode = DrafterMode.ACCEPT
            self.down.drafters.discard(name)
            await drafter.status.revive()

    async def _read(self, s: int) -> None:
        """The front's client reads the session's output from the start, as far as it is committed."""
        front = self._pick(s) if s >= 0 else None
        if front is None:
            return
        count = len(counted(self.log_of(front)).tokens)
        if count:
            await self.env.front.read(front.id, until=lambda tokens, _last: len(tokens) >= count, timeout_s=3.0)

    async def _finish(self, s: int) -> None:
        front = self._pick(s)
        serving = self._serving(front) if front is not None else None
        if front is None or serving is None or serving.name in self.down.verifiers:
            return
        served = serving.serving(front.id)
        if served is None or served.fenced:
            return
        serving.end(front.id, FINISHED)
        await serving.send_event(front.id, FINISHED)
        await self.env.front.read(front.id, until=lambda _tokens, last: last is not None and last.final,
                                  timeout_s=3.0)

    async def close(self) -> None:
        """End the example's sessions at their verifiers, so later examples do not meet them."""
        for front in self.sessions:
            serving = self._serving(front)
            served = serving.serving(front.id) if serving is not None else None
            if serving is None or served is None or served.ended or served.fenced:
                continue
            serving.fault, serving.zombie = Fault.NONE, False
            serving.end(front.id, FINISHED)
            await serving.send_event(front.id, FINISHED)


FailoverExecutor.rules = {
    "setup": FailoverExecutor._setup, "open": FailoverExecutor._open, "commit": FailoverExecutor._commit,
    "kill": FailoverExecutor._kill, "partition": FailoverExecutor._partition,
    "drafter_dies": FailoverExecutor._drafter_dies, "revive": FailoverExecutor._revive,
    "read": FailoverExecutor._read, "finish": FailoverExecutor._finish,
}

__all__ = ["ACT_S", "TTL_MS", "Down", "FailoverExecutor"]
