"""The interface between the HTTP/2 server and the applications it serves.

Every SDCP role (verifier, drafter, router, cache) is an async handler from
:class:`Request` to :class:`Response`. The server does TLS 1.3, mutual
certificates and HTTP/2; the handler sees the authenticated peer identity
(the URI SAN of the client certificate, P1-ID-1) and never a socket. A
handler may ask the server to misbehave on purpose (``Response.fault``): the
harness needs that to play a faulty cache.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field


class TransportFault(enum.Enum):
    """Misbehaviour a handler can ask the server to commit instead of answering."""

    RESET_STREAM = "reset-stream"
    """Send RST_STREAM (INTERNAL_ERROR) on the request's stream."""
    GOAWAY = "goaway"
    """Send GOAWAY and close the connection without answering."""
    CLOSE_CONNECTION = "close-connection"
    """Close the TCP connection abruptly without answering."""


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    """Decoded path without the query, e.g. ``/sessions/AAAA/output``."""
    query: str
    """Raw query string without ``?``, e.g. ``from=3``."""
    headers: tuple[tuple[str, str], ...]
    """Header names lower-cased, in the order received."""
    body: bytes
    peer_identity: str | None
    """URI SAN of the authenticated client certificate (P1-ID-1), if any."""

    def header(self, name: str) -> str | None:
        wanted = name.lower()
        for key, value in self.headers:
            if key == wanted:
                return value
        return None


@dataclass
class Response:
    status: int
    body: bytes = b""
    headers: list[tuple[str, str]] = field(default_factory=list)
    fault: TransportFault | None = None
    undelivered: Callable[[], None] | None = None
    """Called by the server when the response did not reach the client: sending it failed, or the client reset the
    stream after it was sent (its RST_STREAM crossed the response; a client that received the whole response has
    a closed stream and resets nothing). The harness needs it to know whether a drafter learned a final answer."""

    def header(self, name: str) -> str | None:
        wanted = name.lower()
        for key, value in self.headers:
            if key.lower() == wanted:
                return value
        return None


Handler = Callable[[Request], Awaitable[Response]]

Clock = Callable[[], float]
"""Seconds on a monotonic clock, as a handler is given it (injected, so tests can move time)."""
Sleep = Callable[[float], Awaitable[None]]
"""Waiting that many seconds, as a handler is given it (injected, like :data:`Clock`)."""

def media_type(content_type: str | None) -> str:
    """The media type of a Content-Type value, lower-cased, without parameters (RFC 9110 §8.3.1)."""
    return (content_type or "").split(";", 1)[0].strip().lower()


__all__ = ["Clock", "Handler", "Request", "Response", "Sleep", "TransportFault", "media_type"]
