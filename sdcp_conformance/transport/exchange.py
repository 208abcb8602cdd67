"""What one HTTP/2 exchange returns, its deadlines, and the retry policy (D-CLI-1/2, P1-DRF-5).

Shared by :class:`~.h2client.H2Client` and :class:`~.client.SdcpClient` (which
runs on it), so both clients answer, time out and retry alike.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.protocol import codec
from sdcp_conformance.protocol.errors import MalformedMessage
from sdcp_conformance.protocol.problems import PROBLEM_CBOR_MEDIA_TYPE, PROBLEM_MEDIA_TYPE, SDCP_MEDIA_TYPE
from sdcp_conformance.transport.failures import ConnectionInfo, FailureKind, TransportFailure
from sdcp_conformance.transport.problem import Problem, parse_problem
from sdcp_conformance.transport.types import media_type

if TYPE_CHECKING:
    import httpx

MAX_RESPONSE_BYTES = codec.MAX_MESSAGE_SIZE
"""Largest response body a client reads by default: the codec's 16 MiB (P1-MSG-2's limit)."""


@dataclass(frozen=True)
class Timeouts:
    """Seconds; ``read`` covers the 30 s long-poll of ``GET output`` (P1-OUT-1) with margin.

    One attempt's deadline is ``min(total, connect + read)``; a request may
    override it (deadlines by resource, :mod:`sdcp_conformance.harness.iut`).
    """

    connect: float = 5.0
    read: float = 35.0
    write: float = 10.0
    total: float = 60.0
    """Deadline of one attempt, whatever the phase."""

    @property
    def attempt(self) -> float:
        return min(self.total, self.connect + self.read)

    def httpx(self) -> httpx.Timeout:
        import httpx  # only for callers that still build httpx clients; the clients here do not

        return httpx.Timeout(connect=self.connect, read=self.read, write=self.write, pool=self.connect)


@dataclass(frozen=True)
class ClientResponse:
    """A response with its body read whole (within the reader's limit)."""

    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes
    attempts: int = 1
    connection: ConnectionInfo | None = None
    """The connection that answered: its number, TLS version and ALPN."""

    @property
    def ok(self) -> bool:
        """RFC 9110 classes: any 2xx is success (P1-MSG-4)."""
        return 200 <= self.status < 300

    @property
    def content_type(self) -> str | None:
        return self.header("content-type")

    @property
    def media_type(self) -> str:
        return media_type(self.content_type)

    @property
    def content_length(self) -> int | None:
        """The declared content-length, if the response carried a valid one."""
        value = self.header("content-length")
        return int(value) if value is not None and value.isdigit() else None

    def header(self, name: str) -> str | None:
        wanted = name.lower()
        return next((value for key, value in self.headers if key == wanted), None)

    @property
    def problem(self) -> Problem | None:
        """The problem document, if the body is one (raises MalformedMessage if it is a bad one)."""
        return parse_problem(self.status, self.content_type, self.body)

    @property
    def problem_media_type(self) -> bool:
        """Whether the body is labelled as a Problem Details document (P1-ERR-1: JSON or CBOR)."""
        return self.media_type in (PROBLEM_MEDIA_TYPE, PROBLEM_CBOR_MEDIA_TYPE)

    def message(self) -> Any:
        """The decoded ``application/sdcp+cbor`` body; MalformedMessage if it is not one."""
        if self.media_type != SDCP_MEDIA_TYPE:
            raise MalformedMessage(f"expected {SDCP_MEDIA_TYPE}, got {self.content_type!r}")
        return codec.decode(self.body)


def is_retry_safe(method: str, path: str) -> bool:
    """Whether the draft makes a request safe to repeat.

    §6.9: "proposals and their verdicts are idempotent per round, so a drafter
    retries a proposal whose verdict it did not receive". D-CLI-1: GET is
    safe by RFC 9110 §9.2.1, so output reads are retried too; nothing else is
    (PUT …/drafter and POST sessions change state the harness wants to observe once).

    Requests the peer never processed (above a GOAWAY's ``last_stream_id``, or
    refused with REFUSED_STREAM) are another matter: RFC 9113 §8.7 lets any of
    them be resent, and :class:`~.h2client.H2Client` does so whatever this says.
    """
    return method == "GET" or (method == "POST" and path.split("?", 1)[0].rstrip("/").endswith("proposals"))


MAX_ATTEMPTS = 3
"""D-CLI-2: a retry-safe request is sent at most three times, immediately, on a fresh stream."""

MAX_CONNECTION_RECORDS = 1000
"""How many :class:`ConnectionInfo` records a client keeps (the newest)."""

Extension = Callable[[float], float]
"""``extension(started)``: how much longer an attempt that began at loop time ``started`` may wait now that its
deadline has come (seconds; 0 to let it expire). The harness passes the time its own event loop could not run
since then (:class:`~sdcp_conformance.harness.patience.LoopStall`): an answer the harness was too busy to read is
not a late answer (P1-JUDGE-5)."""
MIN_EXTENSION_S = 0.05
"""An extension shorter than this is not worth another look: the deadline expires."""

class AttemptDeadline:
    """One attempt's deadline, shared by the HTTP/2 and the HTTP/3 client: when it comes, the attempt expires
    unless its answer is in (D-H2C-8: ``answered`` says so, completing a body whose declared length arrived) or
    ``extension`` grants more time (the harness could not run, P1-JUDGE-5), in which case it looks again then.

    ``async with asyncio.timeout(None) as timer:``, :meth:`arm` it with the loop time the deadline falls at, and
    :meth:`disarm` it when the attempt ends; :attr:`expired` says whether a ``TimeoutError`` was this deadline's and
    :attr:`granted` how much the extensions added."""

    def __init__(self, extension: Extension | None, answered: Callable[[], bool]) -> None:
        self._loop = asyncio.get_running_loop()
        self.started = self._loop.time()
        self._extension = extension
        self._answered = answered
        self.granted = 0.0
        self.expired = False
        self._check: asyncio.TimerHandle | None = None

    def arm(self, timer: asyncio.Timeout, at: float) -> None:
        self._check = self._loop.call_at(at, self._expire_or_wait, timer)

    def disarm(self) -> None:
        if self._check is not None:
            self._check.cancel()

    def _expire_or_wait(self, timer: asyncio.Timeout) -> None:
        if self._answered():
            return
        more = self._extension(self.started) - self.granted if self._extension is not None else 0.0
        if more > MIN_EXTENSION_S:
            self.granted += more
            self._check = self._loop.call_later(more, self._expire_or_wait, timer)
            return
        self.expired = True
        timer.reschedule(self._loop.time())


class RetryingRequests:
    """What the HTTP/2 and the HTTP/3 client share above one attempt: :meth:`request`'s parameters, the draft's
    retry policy, and ``async with``. A client gives ``timeouts``, ``max_attempts``, :meth:`_attempt` and
    :meth:`aclose`."""

    timeouts: Timeouts
    max_attempts: int

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        raise NotImplementedError

    async def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        *,
        headers: dict[str, str] | None = None,
        retry: bool | None = None,
        timeout: float | None = None,
        extension: Extension | None = None,
    ) -> ClientResponse:
        """Send one request (path relative to the base URI) and read the whole response.

        Retried where the draft makes it safe (``retry`` defaults to
        :func:`is_retry_safe`); ``timeout`` is each attempt's deadline (default
        :attr:`Timeouts.attempt`), moved later by what ``extension`` grants when
        it comes (:data:`Extension`). Raises
        :class:`~.failures.TransportFailure` with the stage it broke at.
        """
        retry = is_retry_safe(method, "/" + path.lstrip("/")) if retry is None else retry
        attempts = self.max_attempts if retry else 1
        deadline_s = self.timeouts.attempt if timeout is None else timeout
        return await send_with_retries(
            lambda: self._attempt(method, path, body or b"", headers, deadline_s, extension), attempts=attempts)

    async def _attempt(self, method: str, path: str, body: bytes, headers: dict[str, str] | None,
                       deadline_s: float, extension: Extension | None) -> ClientResponse:
        """One attempt within ``deadline_s`` (moved later by ``extension``)."""
        raise NotImplementedError


FINAL_KINDS = frozenset({FailureKind.REFUSED, FailureKind.TOO_LARGE})
"""Failures a retry cannot mend: a refused handshake, a body over the reader's limit."""


def is_retryable_status(status: int) -> bool:
    """P1-DRF-5: a lost verdict (transport error, timeout, 5xx, 429) is retried; a 4xx is final."""
    return status >= 500 or status == 429


async def send_with_retries(attempt: Callable[[], Awaitable[ClientResponse]], *, attempts: int) -> ClientResponse:
    """Call ``attempt`` up to ``attempts`` times while it fails retryably (P1-DRF-5).

    A refused handshake and an oversized body are final: retrying cannot succeed.
    """
    for number in range(1, attempts + 1):
        try:
            response = await attempt()
        except TransportFailure as failure:
            if number == attempts or failure.kind in FINAL_KINDS:
                failure.attempts = number
                raise
            continue
        if number == attempts or not is_retryable_status(response.status):
            return dataclasses.replace(response, attempts=number)
    raise InvalidArgument(f"attempts must be at least 1, not {attempts}")


__all__ = [
    "FINAL_KINDS",
    "MAX_ATTEMPTS",
    "MAX_CONNECTION_RECORDS",
    "MAX_RESPONSE_BYTES",
    "MIN_EXTENSION_S",
    "AttemptDeadline",
    "ClientResponse",
    "Extension",
    "RetryingRequests",
    "Timeouts",
    "is_retry_safe",
    "is_retryable_status",
    "media_type",
    "send_with_retries",
]
