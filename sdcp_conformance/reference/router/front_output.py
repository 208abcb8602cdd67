"""The router as the front end of §6.7: a session's output, read from its current verifier across failovers.

P1-FRONT-2: "``GET client/sessions/{id}/output?from=n`` is the router acting
as the front end of §6.7: tokens from output index n on, as the current
verifier committed them, across failovers, never an output of an epoch lower
than one it has seen". §6.7: "a front end that receives output with a lower
epoch than one it has seen discards it". A read goes to the session's current
verifier; when the router fails the session over meanwhile (the slot's
``moved`` signal), the read is abandoned and made again at the new verifier,
from the same index, so indices stay stable and nothing is lost or repeated.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

from sdcp_conformance.protocol.control import Action
from sdcp_conformance.protocol.messages import Output
from sdcp_conformance.reference.router.decisions import FRONT_RETRY_PAUSE_S, FRONT_WAIT_S, VERIFIER_POLL_S
from sdcp_conformance.reference.router.driver import Slot
from sdcp_conformance.reference.router.ports import LinkFailure, Refused
from sdcp_conformance.reference.router.session import Phase

if TYPE_CHECKING:
    from sdcp_conformance.reference.router.app import RouterApp


class FrontOutput:
    """Serves P1-FRONT-2's output reads for one router."""

    def __init__(self, app: RouterApp, *, wait_s: float = FRONT_WAIT_S) -> None:
        self.app = app
        self.wait_s = wait_s

    async def read(self, session: bytes, start: int) -> Output:
        """Tokens from ``start`` on, waiting up to ``wait_s`` (P1-OUT-1) for some to be committed."""
        slot = self.app.slot(session)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.wait_s
        while True:
            machine = slot.machine
            ended = self.ended_here(slot, start)
            if ended is not None:
                return ended
            remaining = deadline - loop.time()
            if remaining <= 0:
                return Output(session=session, epoch=machine.epoch, tokens=(), final=False, from_=start)
            verifier = machine.verifier
            if verifier is None:  # a failover is under way
                await self._wait_moved(slot, remaining)
                continue
            answer = await self._read_at(slot, verifier, session, start, remaining)
            if answer is None or (isinstance(answer, Refused) and answer.resource_failure):
                self.app.note_verifier_failure(verifier)  # P1-RTR-5 counts the front's reads too
            elif not (isinstance(answer, Refused) and answer.status == 0):  # 0: no answer came (moved, or late)
                self.app.note_verifier_success(verifier)  # ... and an answer ends the streak (D-RTR-6)
            if isinstance(answer, Output) and self.acceptable(slot, answer, session, start):
                return answer
            # D-RTR-24: a lower epoch, another index, a refusal or no answer: read again shortly.
            await self._wait_moved(slot, min(FRONT_RETRY_PAUSE_S, remaining))

    def ended_here(self, slot: Slot, start: int) -> Output | None:
        """D-RTR-23: a session this router failed ends at the committed length the router knows."""
        machine = slot.machine
        if machine.phase is Phase.FAILED and start >= machine.committed:
            return Output(session=machine.session, epoch=machine.epoch, tokens=(), final=True, from_=start,
                          finish=Action.FAIL)
        return None

    def acceptable(self, slot: Slot, output: Output, session: bytes, start: int) -> bool:
        """§6.7: discard output "with a lower epoch than one it has seen" (the router's epoch is the highest)."""
        return output.session == session and output.from_ == start and output.epoch >= slot.machine.epoch

    async def _read_at(self, slot: Slot, verifier: str, session: bytes, start: int,
                       remaining: float) -> Output | Refused | None:
        """One long poll at ``verifier``, abandoned when the session moves; ``None`` when no answer came."""
        moved = slot.moved
        poll = asyncio.ensure_future(self.app.verifiers.get_output(verifier, session, start,
                                                                   min(remaining, VERIFIER_POLL_S)))
        waiter = asyncio.ensure_future(moved.wait())
        try:
            done, _ = await asyncio.wait({poll, waiter}, timeout=remaining, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (poll, waiter):
                if not task.done():
                    task.cancel()
            for task in (poll, waiter):
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        if poll not in done or poll.cancelled():
            return Refused(0, detail="the session moved, or the read timed out")
        error = poll.exception()
        if error is not None:
            if isinstance(error, LinkFailure | TimeoutError):
                return None
            raise error
        return poll.result()

    async def _wait_moved(self, slot: Slot, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(slot.moved.wait(), seconds)


__all__ = ["FrontOutput"]
