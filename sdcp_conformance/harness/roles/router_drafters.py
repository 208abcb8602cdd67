"""The drafters the harness plays for a router under test (§5.1 Table 1: ``POST assignments`` → 204).

A :class:`PlayedDrafter` has a model (a shipped draft mock model, whose
SHA-256 the router knows by configuration, P1-RTR-2), reports status through
its :class:`~.router_status.StatusReporter`, and records every assignment it
receives together with what the named verifier had been told by then (its
latest ``PUT …/drafter`` for the session), so the checker can say whether the
router informed the verifier first (§6.1) and passed on the session-state
the ``PUT`` returned (P1-RTR-3). It never proposes: in the router suite the
played verifiers commit on the case's word, which keeps every race in the
harness's hands. It can refuse assignments, fail at the transport, or die
(status expiry plus a transport failure, §6.9 Drafter failure).
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Callable

from sdcp_conformance.harness.roles.played_cache import PlayedCache
from sdcp_conformance.harness.roles.router_history import AssignSeen, History, PutSeen, deterministic
from sdcp_conformance.harness.roles.router_status import StatusReporter
from sdcp_conformance.protocol.errors import MalformedMessage
from sdcp_conformance.protocol.messages import Assignment
from sdcp_conformance.transport.problem import problem_response, status_problem_response
from sdcp_conformance.transport.types import Request, Response, TransportFault, media_type

PutLookup = Callable[[str, bytes], "PutSeen | None"]
"""``lookup(verifier base URI, session)``: the latest PUT …/drafter that played verifier received."""


class DrafterMode(enum.Enum):
    ACCEPT = "accept"
    REFUSE = "refuse"
    """Answer assignments 503 (a drafter that is up but cannot take work)."""
    DEAD = "dead"
    """Reset every stream (together with a silenced status: the drafter died)."""


class PlayedDrafter:
    """One drafter the harness plays."""

    def __init__(self, name: str, uri: str, model: str, digest: bytes, *, mlc: PlayedCache, history: History,
                 status: StatusReporter, put_lookup: PutLookup) -> None:
        self.name = name
        self.uri = uri
        self.model = model
        self.digest = digest
        self.mlc = mlc
        self.history = history
        self.status = status
        self._put_lookup = put_lookup
        self.mode = DrafterMode.ACCEPT
        self.success_status = 204
        """P1-MSG-4: "A client treats any 2xx as success"; a case may answer 200 instead."""

    def reset(self) -> None:
        self.mode = DrafterMode.ACCEPT
        self.success_status = 204

    async def __call__(self, request: Request) -> Response:
        if request.method != "POST" or not request.path.rstrip("/").endswith("/assignments"):
            return status_problem_response(404, f"no drafter resource at {request.method} {request.path}")
        assignment: Assignment | None = None
        try:
            assignment = Assignment.from_cbor(request.body)
        except MalformedMessage as error:
            response = problem_response(error)
        else:
            response = self._answer()
        put = self._put_lookup(assignment.verifier, assignment.session) if assignment is not None else None
        tokens = None
        if assignment is not None and assignment.committed_tokens is not None:
            tokens = self.mlc.tokens(assignment.committed_tokens)
        now = asyncio.get_running_loop().time()
        self.history.add(AssignSeen(
            at=now, drafter=self.name, peer=request.peer_identity,
            media_type=media_type(request.header("content-type")),
            assignment=assignment, status=response.status, verifier_put=put, tokens_object=tokens,
            expired_for=self.status.expired_for(now), deterministic=deterministic(request.body)))
        return response

    def _answer(self) -> Response:
        if self.mode is DrafterMode.DEAD:
            return Response(503, fault=TransportFault.RESET_STREAM)
        if self.mode is DrafterMode.REFUSE:
            return status_problem_response(503, f"{self.name} takes no work now")
        return Response(self.success_status)

    async def die(self, final_ttl_ms: int = 150) -> float:
        """§6.9 Drafter failure: its status expires (returns when, by the harness's clock) and it answers no more."""
        self.mode = DrafterMode.DEAD
        return await self.status.silence(final_ttl_ms)

    async def revive(self) -> None:
        self.mode = DrafterMode.ACCEPT
        await self.status.revive()


__all__ = ["DrafterMode", "PlayedDrafter", "PutLookup"]
