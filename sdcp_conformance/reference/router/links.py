"""Implementations of the router's ports over the network: SDCP peers over HTTP/2, the MLC over its client.

:class:`HttpLinks` is both a :class:`~.ports.VerifierLink` and a
:class:`~.ports.DrafterLink`, one :class:`~sdcp_conformance.transport.client.SdcpClient`
per peer; :class:`MlcRouterCache` is a :class:`~.ports.RouterCache` over an
:class:`~sdcp_conformance.cache.append.ObjectClient`, using the shared
conditional append for the fence (P1-LOG-1).
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from sdcp_conformance.cache.append import (
    AppendStatus,
    CacheReply,
    CacheTransportError,
    ConditionalAppendError,
    ObjectClient,
    append_record,
)
from sdcp_conformance.cache.commit_log import FenceRecord
from sdcp_conformance.protocol.codec import decode, encode
from sdcp_conformance.protocol.errors import MalformedMessage
from sdcp_conformance.protocol.messages import Assignment, Output, Policy, SessionOpen, SessionState
from sdcp_conformance.reference.router.ports import Answer, CacheUnavailable, LinkFailure, Refused
from sdcp_conformance.transport.client import ClientResponse, Timeouts, TransportFailure, sdcp_client
from sdcp_conformance.transport.listeners import DEFAULT_HTTP, HttpVersions


class MessageClient(Protocol):
    """The part of :class:`SdcpClient` the links use."""

    async def send_message(
        self, method: str, path: str, message: Any, *, retry: bool | None = None
    ) -> ClientResponse: ...

    async def request(
        self, method: str, path: str, body: bytes | None = None, *, headers: dict[str, str] | None = None,
        retry: bool | None = None, timeout: float | None = None,
    ) -> ClientResponse: ...

    async def aclose(self) -> None: ...


class HttpLinks:
    """The router's calls to verifiers and drafters over HTTP/2 with its client certificate."""

    def __init__(
        self,
        cert: Path,
        key: Path,
        ca: Path,
        *,
        timeouts: Timeouts | None = None,
        client_factory: Callable[[str], MessageClient] | None = None,
        http: HttpVersions = DEFAULT_HTTP,
    ) -> None:
        self._factory = client_factory or (lambda base: sdcp_client(http, base, cert, key, ca, timeouts=timeouts))
        self._clients: dict[str, MessageClient] = {}

    def _client(self, base_uri: str) -> MessageClient:
        client = self._clients.get(base_uri)
        if client is None:
            client = self._clients[base_uri] = self._factory(base_uri)
        return client

    async def _send(self, peer: str, method: str, path: str, body: dict[str, Any]) -> ClientResponse:
        try:
            return await self._client(peer).send_message(method, path, body, retry=False)
        except TransportFailure as exc:
            raise LinkFailure(f"{method} {peer}{path}: {exc}") from exc

    async def _answer(self, peer: str, method: str, path: str, body: dict[str, Any]) -> Answer:
        response = await self._send(peer, method, path, body)
        if not response.ok:
            return refused_from(response)
        try:
            return SessionState.from_obj(response.message())
        except MalformedMessage as exc:  # a broken success body counts like a 5xx
            return Refused(502, detail=f"malformed session-state: {exc.detail}")

    async def open_session(self, verifier: str, opening: SessionOpen) -> Answer:
        return await self._answer(verifier, "POST", "sessions", opening.to_obj())

    async def put_drafter(self, verifier: str, assignment: Assignment) -> Answer:
        path = f"sessions/{_b64(assignment.session)}/drafter"
        return await self._answer(verifier, "PUT", path, assignment.to_obj())

    async def post_policy(self, verifier: str, policy: Policy) -> Answer:
        return await self._answer(verifier, "POST", f"sessions/{_b64(policy.session)}/policy", policy.to_obj())

    async def get_output(self, verifier: str, session: bytes, start: int, timeout_s: float) -> Output | Refused:
        """GET output?from=n for the test front (P1-FRONT-2); a malformed body counts like a 5xx."""
        path = f"sessions/{_b64(session)}/output?from={start}"
        try:
            response = await self._client(verifier).request("GET", path, retry=False, timeout=timeout_s)
        except TransportFailure as exc:
            raise LinkFailure(f"GET {verifier}{path}: {exc}") from exc
        if not response.ok:
            return refused_from(response)
        try:
            return Output.from_cbor(response.body)
        except MalformedMessage as exc:
            return Refused(502, detail=f"malformed output: {exc.detail}")

    async def post_assignment(self, drafter: str, assignment: Assignment) -> Refused | None:
        response = await self._send(drafter, "POST", "assignments", assignment.to_obj())
        return None if response.ok else refused_from(response)

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.aclose()


def refused_from(response: ClientResponse) -> Refused:
    """A non-2xx response as a :class:`Refused`, with the problem's ``state`` if it has a valid one."""
    try:
        problem = response.problem
    except MalformedMessage:
        problem = None
    if problem is None:
        return Refused(response.status, detail="no problem document")
    state = None
    if problem.state is not None:
        try:
            state = SessionState.from_obj(problem.state)
        except MalformedMessage:
            state = None
    return Refused(response.status, problem.problem_type, problem.detail or "", state)


class MlcRouterCache:
    """The router's MLC calls (P1-MLC-1/2, P1-LOG-1/3) over an :class:`ObjectClient`."""

    def __init__(self, client: ObjectClient) -> None:
        self._client = client

    @property
    def objects(self) -> ObjectClient:
        """The object client underneath (the mutant catalogue plants an unconditional fence on it)."""
        return self._client

    async def _get(self, uri: str) -> CacheReply:
        try:
            return await self._client.get(uri)
        except CacheTransportError as exc:
            raise CacheUnavailable(str(exc)) from exc

    async def get_tokens(self, uri: str) -> list[int]:
        reply = await self._get(uri)
        if reply.status != 200:
            raise CacheUnavailable(f"GET {uri} answered {reply.status}")
        try:
            tokens = decode(reply.body)
        except MalformedMessage as exc:
            raise CacheUnavailable(f"{uri} is not a token list: {exc.detail}") from exc
        if not isinstance(tokens, list) or not all(type(token) is int and token >= 0 for token in tokens):
            raise CacheUnavailable(f"{uri} is not a CBOR array of uint (P1-MLC-2)")
        return tokens

    async def put_tokens(self, uri: str, tokens: Sequence[int]) -> None:
        try:
            reply = await self._client.put(uri, encode(list(tokens)))
        except CacheTransportError as exc:
            raise CacheUnavailable(str(exc)) from exc
        if not 200 <= reply.status < 300:
            raise CacheUnavailable(f"PUT {uri} answered {reply.status}")

    async def read_log(self, uri: str) -> bytes:
        reply = await self._get(uri)
        if reply.status == 404:  # P1-LOG-3: "the object need not exist yet"
            return b""
        if reply.status != 200:
            raise CacheUnavailable(f"GET {uri} answered {reply.status}")
        return reply.body

    async def append_fence(self, uri: str, epoch: int) -> bool:
        try:
            outcome = await append_record(self._client, uri, FenceRecord(epoch))
        except ConditionalAppendError as exc:
            raise CacheUnavailable(str(exc)) from exc
        return outcome.status is AppendStatus.APPENDED


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


__all__ = ["HttpLinks", "MessageClient", "MlcRouterCache", "refused_from"]
