"""The drafters the harness plays: toward a verifier under test they propose and read output
(:class:`ProposingDrafters`); for a router under test they take assignments (:class:`PlayedDrafter`).

Toward a verifier (§5.1 Table 1: ``POST proposals``, ``GET sessions/{id}/output``) each played drafter speaks as
its own identity of the PKI, with the status it piggybacks (§6.8) naming its base URI; what a case builds into
the proposal (the tracked session's round, base and digest) is the case's, the judgement of the answer too.

For a router (§5.1 Table 1: ``POST assignments`` → 204), a :class:`PlayedDrafter` has a model (a shipped
draft mock model, whose SHA-256 the router knows by configuration, P1-RTR-2), reports status through
its :class:`~.status_reports.StatusReporter`, and records every assignment it
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
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from sdcp_conformance.harness.roles.played_cache import PlayedCache
from sdcp_conformance.harness.roles.router_history import AssignSeen, History, PutSeen, deterministic
from sdcp_conformance.harness.roles.status_reports import StatusReporter
from sdcp_conformance.harness.self_check import Deliberate, register
from sdcp_conformance.protocol.errors import MalformedMessage
from sdcp_conformance.protocol.messages import Assignment
from sdcp_conformance.transport.problem import problem_response, status_problem_response
from sdcp_conformance.transport.types import Request, Response, TransportFault, media_type

Send = Callable[..., Awaitable[Any]]
"""``send(identity, method, path, body=None, *, held_s=0.0)``: a request to the IUT as that identity (the
harness's :meth:`~..iut.IutLink.send`)."""

PROPOSAL_STATUS_TTL_MS = 5000
"""The TTL of the status a played drafter piggybacks on its proposals (§6.8)."""


class ProposingDrafters:
    """The drafters the harness plays toward a verifier under test, by party name (``drafter-1``, ``drafter-2``)."""

    def __init__(self, send: Send, uri_of: Callable[[str], str]) -> None:
        self._send = send
        self.uri_of = uri_of
        """A played drafter's base URI (its certificate's URI SAN), by party name."""

    def proposal(self, drafter: str, tracked: Mapping[str, Any], tokens: Sequence[int],
                 overrides: Mapping[str, Any]) -> dict[str, Any]:
        """A proposal body (§6.2) from ``drafter``: the ``tracked`` session's members (session, epoch, round, base,
        base_digest), its tokens and status; ``overrides`` replace members (a member set to None is left out)."""
        uri = self.uri_of(drafter)
        body = {**tracked, "drafter": uri, "tokens": list(tokens),
                "status": {"instance": uri, "role": 1, "load": 0, "queue": 0, "ttl_ms": PROPOSAL_STATUS_TTL_MS}}
        body.update(overrides)
        return {key: value for key, value in body.items() if value is not None}

    async def propose(self, body: Mapping[str, Any] | bytes, *, party: str, held_s: float = 0.0) -> Any:
        """``POST proposals`` as ``party`` (raw bytes are sent as they are)."""
        sent = body if isinstance(body, (bytes, Deliberate)) else dict(body)  # a deliberate() map stays marked
        return await self._send(party, "POST", "proposals", sent, held_s=held_s)

    async def output(self, path_id: str, start: int, *, party: str) -> Any:
        """``GET sessions/{id}/output?from=start`` as ``party``."""
        return await self._send(party, "GET", f"sessions/{path_id}/output?from={start}")


PutLookup = Callable[[str, bytes], "PutSeen | None"]
"""``lookup(verifier base URI, session)``: the latest PUT …/drafter that played verifier received."""


class DrafterMode(enum.Enum):
    ACCEPT = "accept"
    REFUSE = "refuse"
    """Answer assignments 503 (a drafter that is up but cannot take work)."""
    DEAD = "dead"
    """Reset every stream (together with a silenced status: the drafter died)."""


class PlayedDrafter:
    """One drafter the harness plays for a router under test."""

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

    async def die(self, final_ttl_ms: int = 150, *, must_fire: bool = True) -> float:
        """§6.9 Drafter failure: its status expires (returns when, by the harness's clock) and it answers no more.

        An injected fault, registered with the case running now (:mod:`~..self_check`): it took effect if no report
        was sent from the silencing until the expiry passed (a router need never send the dead drafter a request)."""
        self.mode = DrafterMode.DEAD
        expires = await self.status.silence(final_ttl_ms)
        register(self.status.expiry_fault(f"{self.name} dead (status let expire, {final_ttl_ms} ms TTL)",
                                          must_fire=must_fire))
        return expires

    async def revive(self) -> None:
        self.mode = DrafterMode.ACCEPT
        await self.status.revive()


__all__ = ["DrafterMode", "PlayedDrafter", "ProposingDrafters", "PutLookup"]
