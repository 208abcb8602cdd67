"""Talking to the implementation under test as one of the harness's identities, with a transcript.

Every call has a timeout; a timeout, a refused handshake or a dropped
connection comes back as an :class:`Answer` with ``failure`` set, never as an
exception, so a case can judge it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from sdcp_conformance.errors import MalformedMessage
from sdcp_conformance.harness.transcript import CaseTranscript
from sdcp_conformance.protocol.codec import decode, encode
from sdcp_conformance.protocol.messages import Message
from sdcp_conformance.protocol.problems import SDCP_MEDIA_TYPE, ProblemType
from sdcp_conformance.transport.client import FailureKind, SdcpClient, Timeouts, TransportFailure
from sdcp_conformance.transport.problem import Problem, parse_problem

M = TypeVar("M", bound=Message)

DEFAULT_TIMEOUTS = Timeouts(connect=5.0, read=35.0, write=10.0, total=40.0)
"""Read covers the 30 s output long-poll the harness allows (P1-OUT-1)."""


@dataclass(frozen=True)
class Answer:
    """What the IUT answered (or how the exchange failed)."""

    status: int | None
    body: bytes
    content_type: str | None
    failure: FailureKind | None = None
    failure_detail: str = ""

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300

    @property
    def problem(self) -> Problem | None:
        if self.status is None or self.ok:
            return None
        try:
            return parse_problem(self.status, self.content_type, self.body)
        except MalformedMessage:
            return None

    @property
    def problem_type(self) -> ProblemType | None:
        problem = self.problem
        return problem.problem_type if problem is not None else None

    def decoded(self) -> Any:
        return decode(self.body)

    def message(self, kind: type[M]) -> M:
        """The body as a typed message; raises :class:`MalformedMessage` if it is not one."""
        return kind.from_cbor(self.body)

    def describe(self) -> str:
        if self.status is None:
            return f"no answer ({self.failure.value if self.failure else 'failure'}: {self.failure_detail})"
        problem = self.problem
        if problem is not None:
            kind = problem.problem_type.suffix if problem.problem_type else problem.type_uri
            return f"{self.status} {kind}"
        return str(self.status)


@dataclass(frozen=True)
class Identity:
    """A client certificate the harness can present (or none)."""

    name: str
    cert: Path | None
    key: Path | None


class IutLink:
    """One HTTP/2 client per identity towards the IUT's base URI; records into the current transcript."""

    def __init__(self, base_uri: str, ca: Path, identities: dict[str, Identity],
                 transcript: Callable[[], CaseTranscript | None]) -> None:
        self.base_uri = base_uri
        self._ca = ca
        self._identities = identities
        self._clients: dict[str, SdcpClient] = {}
        self._transcript = transcript

    def identity_names(self) -> list[str]:
        return sorted(self._identities)

    def _client(self, party: str) -> SdcpClient:
        if party not in self._clients:
            identity = self._identities[party]
            self._clients[party] = SdcpClient(self.base_uri, identity.cert, identity.key, self._ca,
                                              timeouts=DEFAULT_TIMEOUTS, max_attempts=1)
        return self._clients[party]

    async def reset(self, party: str) -> None:
        """Drop a party's connection, so the next call makes a fresh one."""
        client = self._clients.pop(party, None)
        if client is not None:
            await client.aclose()

    async def send(self, party: str, method: str, path: str, body: bytes | Message | dict[str, Any] | None = None,
                   *, content_type: str = SDCP_MEDIA_TYPE) -> Answer:
        raw = _raw(body)
        headers = {"content-type": content_type, "accept": SDCP_MEDIA_TYPE} if raw is not None else None
        try:
            response = await self._client(party).request(method, path, raw, headers=headers, retry=False)
        except TransportFailure as failure:
            answer = Answer(None, b"", None, failure.kind, str(failure))
            await self.reset(party)
        else:
            answer = Answer(response.status, response.body, response.content_type)
        transcript = self._transcript()
        if transcript is not None:
            note = answer.describe() if answer.status is None else ""
            transcript.record("to-iut", party, method, path, raw or b"", answer.status, answer.body,
                              content_type=answer.content_type, note=note)
        return answer

    async def aclose(self) -> None:
        for party in list(self._clients):
            await self.reset(party)


def _raw(body: bytes | Message | dict[str, Any] | None) -> bytes | None:
    if body is None or isinstance(body, bytes):
        return body
    if isinstance(body, Message):
        return body.to_cbor()
    return encode(body)


__all__ = ["DEFAULT_TIMEOUTS", "Answer", "Identity", "IutLink"]
