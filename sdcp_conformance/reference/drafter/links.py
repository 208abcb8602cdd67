"""Adapters from the drafter's ports to real peers: an MLC object client, verifier handlers, SdcpClient.

Each adapter maps one answer to the drafter's small result types once, here:
2xx is success, 5xx and 429 are lost (P1-DRF-5, retried by the app), any
other status is a final :class:`~.ports.Problem`.
"""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable
from typing import Protocol
from urllib.parse import urlsplit

from sdcp_conformance.cache.append import CacheReply, CacheTransportError
from sdcp_conformance.protocol.errors import MalformedMessage
from sdcp_conformance.protocol.messages import Message, Output, Status, Verdict
from sdcp_conformance.protocol.problems import SDCP_MEDIA_TYPE
from sdcp_conformance.reference.drafter.ports import (
    CacheUnavailable,
    OutputResult,
    Problem,
    ProposalResult,
    TransportFailure,
    problem_from_members,
)
from sdcp_conformance.transport.client import SdcpClient, is_retryable_status
from sdcp_conformance.transport.client import TransportFailure as ClientTransportFailure
from sdcp_conformance.transport.problem import parse_problem
from sdcp_conformance.transport.types import Handler, Request

SDCP_HEADERS = (("content-type", SDCP_MEDIA_TYPE), ("accept", SDCP_MEDIA_TYPE))


class ObjectStore(Protocol):
    """What :class:`~sdcp_conformance.cache.clients.HandlerObjectClient` and ``HttpxObjectClient`` offer."""

    async def get(self, uri: str) -> CacheReply: ...

    async def put(self, uri: str, body: bytes, *, lease_ms: int | None = None) -> CacheReply: ...

    async def delete(self, uri: str) -> CacheReply: ...


class ObjectClientCache:
    """The drafter's :class:`~.ports.Cache` over an MLC object client (P1-MLC-1, P1-MLC-3)."""

    def __init__(self, client: ObjectStore) -> None:
        self._client = client

    async def put(self, uri: str, body: bytes, lease_ms: int) -> None:
        _require_ok("PUT", uri, await self._call(self._client.put(uri, body, lease_ms=lease_ms)))

    async def get(self, uri: str) -> bytes:
        reply = await self._call(self._client.get(uri))
        _require_ok("GET", uri, reply)
        return reply.body

    async def delete(self, uri: str) -> None:
        reply = await self._call(self._client.delete(uri))
        if reply.status != 404:  # already gone is gone
            _require_ok("DELETE", uri, reply)

    async def _call(self, request: Awaitable[CacheReply]) -> CacheReply:
        try:
            return await request
        except CacheTransportError as exc:
            raise CacheUnavailable(str(exc)) from exc


def _require_ok(method: str, uri: str, reply: CacheReply) -> None:
    if not 200 <= reply.status < 300:
        raise CacheUnavailable(f"{method} {uri}: {reply.status}")


def answer_to_result(
    kind: type[Message], status: int, content_type: str | None, body: bytes
) -> Verdict | Output | Problem | TransportFailure:
    """Map one HTTP answer: 2xx → ``kind``; 5xx, 429 → lost; other statuses → final problem."""
    if is_retryable_status(status):
        return TransportFailure(f"status {status}", status)
    if 200 <= status < 300:
        try:
            message = kind.from_cbor(body)
        except MalformedMessage as exc:
            return TransportFailure(f"unreadable {kind.__name__}: {exc.detail}", status)
        assert isinstance(message, Verdict | Output)
        return message
    try:
        problem = parse_problem(status, content_type, body)
    except MalformedMessage:
        problem = None
    if problem is None:
        return Problem(None, status, None, f"status {status} without a problem document")
    return problem_from_members(status, problem.problem_type, problem.state, problem.detail or "")


class HandlerVerifierLink:
    """Calls verifier handlers in-process (the embedded stack and tests); ``handlers`` maps base URIs."""

    def __init__(self, handlers: Callable[[str], Handler], *, peer_identity: str) -> None:
        self._handlers = handlers
        self._peer = peer_identity

    async def post_proposal(self, verifier: str, body: bytes) -> ProposalResult:
        response = await self._call(verifier, "POST", "proposals", "", body)
        result = answer_to_result(Verdict, response[0], response[1], response[2])
        assert not isinstance(result, Output)
        return result

    async def get_output(self, verifier: str, session: bytes, start: int) -> OutputResult:
        path, query = _output_resource(session, start)
        response = await self._call(verifier, "GET", path, query, b"")
        result = answer_to_result(Output, response[0], response[1], response[2])
        assert not isinstance(result, Verdict)
        return result

    async def _call(
        self, verifier: str, method: str, path: str, query: str, body: bytes
    ) -> tuple[int, str | None, bytes]:
        base_path = urlsplit(verifier).path.rstrip("/")
        request = Request(method, f"{base_path}/{path}", query, SDCP_HEADERS, body, self._peer)
        response = await self._handlers(verifier)(request)
        if response.fault is not None:
            return 599, None, b""  # a transport fault is a lost answer (P1-DRF-5)
        return response.status, response.header("content-type"), response.body


class ClientVerifierLink:
    """Talks to verifiers over HTTP/2 with one :class:`SdcpClient` per verifier base URI.

    The client's own retries are turned off: the drafter's app retries with its
    backoff and bound (D-DRF-10).
    """

    def __init__(self, clients: Callable[[str], SdcpClient]) -> None:
        self._clients = clients

    async def post_proposal(self, verifier: str, body: bytes) -> ProposalResult:
        answer = await self._request(verifier, "POST", "proposals", body)
        if isinstance(answer, TransportFailure):
            return answer
        result = answer_to_result(Verdict, *answer)
        assert not isinstance(result, Output)
        return result

    async def get_output(self, verifier: str, session: bytes, start: int) -> OutputResult:
        path, query = _output_resource(session, start)
        answer = await self._request(verifier, "GET", f"{path}?{query}", None)
        if isinstance(answer, TransportFailure):
            return answer
        result = answer_to_result(Output, *answer)
        assert not isinstance(result, Verdict)
        return result

    async def _request(
        self, verifier: str, method: str, path: str, body: bytes | None
    ) -> tuple[int, str | None, bytes] | TransportFailure:
        try:
            response = await self._clients(verifier).request(
                method, path, body, headers=dict(SDCP_HEADERS), retry=False
            )
        except ClientTransportFailure as exc:
            return TransportFailure(str(exc))
        return response.status, response.content_type, response.body


class ClientRouterLink:
    """``PUT {router}instances/{id}/status`` over one :class:`SdcpClient` per router (P1-RTR-1)."""

    def __init__(self, clients: Callable[[str], SdcpClient]) -> None:
        self._clients = clients

    async def put_status(self, router: str, instance_id: str, status: Status) -> None:
        response = await self._clients(router).request(
            "PUT", f"instances/{instance_id}/status", status.to_cbor(), headers=dict(SDCP_HEADERS), retry=False
        )
        if not response.ok:
            raise ConnectionError(f"status report to {router} answered {response.status}")


def _output_resource(session: bytes, start: int) -> tuple[str, str]:
    """§5.1: "{id} in session paths is the base64url encoding without padding"."""
    session_id = base64.urlsafe_b64encode(session).rstrip(b"=").decode("ascii")
    return f"sessions/{session_id}/output", f"from={start}"


__all__ = [
    "ClientRouterLink",
    "ClientVerifierLink",
    "HandlerVerifierLink",
    "ObjectClientCache",
    "ObjectStore",
    "answer_to_result",
]
