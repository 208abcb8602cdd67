"""A transcript of every request the cache answered, bodies in CBOR diagnostic notation."""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import asdict, dataclass
from typing import Any

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.protocol.codec import sequence_diagnostic
from sdcp_conformance.transport.types import Request, Response, media_type

DIAGNOSTIC_LIMIT = 64 * 1024
"""Bodies up to this size are rendered in full; larger ones (``q_rows``, KV) as length + hex."""

ANY_SEQUENCE_LIMIT = 1024
"""Bodies up to this size are rendered as any well-formed CBOR sequence (a hostile answer's trailing items
shown); larger ones only when one item or a sequence of maps (a commit log, P1-LOG-1), so that a raw ``q_rows``
blob, whose zero bytes each scan as a CBOR item, is not scanned to its end before being summarised."""

_HEX_HEAD = 16


def render_body(body: bytes, content_type: str | None = None) -> str:
    """A short, readable rendering of a body.

    CBOR (a single item or a sequence, such as a commit log) becomes
    diagnostic notation; JSON and text are shown as text; anything else,
    like raw float32 ``q_rows``, as its length and first bytes in hex, so a
    transcript never holds megabytes.
    """
    if not body:
        return ""
    if len(body) <= DIAGNOSTIC_LIMIT:
        if content_type is not None and _is_textual(content_type):
            return body.decode("utf-8", errors="replace")
        text = sequence_diagnostic(body, maps_only=len(body) > ANY_SEQUENCE_LIMIT)
        if text is not None:
            return text
    return _summary(body)


def _is_textual(content_type: str) -> bool:
    media = media_type(content_type)
    return media.startswith("text/") or media.endswith("json")


def _summary(body: bytes) -> str:
    ellipsis = "…" if len(body) > _HEX_HEAD else ""
    return f"<{len(body)} bytes: h'{body[:_HEX_HEAD].hex()}'{ellipsis}>"


@dataclass(frozen=True)
class Exchange:
    """One request and what the cache did with it."""

    sequence: int
    method: str
    path: str
    query: str
    peer: str | None
    request_headers: tuple[tuple[str, str], ...]
    request_body: str
    status: int
    response_headers: tuple[tuple[str, str], ...]
    response_body: str
    transport_fault: str | None
    """The :class:`TransportFault` committed instead of sending ``status``, if any."""
    faults: tuple[str, ...]
    """Injected faults that fired for this request, as ``kind: detail``."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class Transcript:
    """Thread-safe record of exchanges; ``limit`` keeps only the latest ones (``None``: all)."""

    def __init__(self, limit: int | None = None) -> None:
        if limit is not None and limit < 1:
            raise InvalidArgument("a transcript limit must be positive")
        self._lock = threading.Lock()
        self._entries: deque[Exchange] = deque(maxlen=limit)
        self._count = 0

    def record(self, request: Request, response: Response, faults: tuple[str, ...] = ()) -> Exchange:
        with self._lock:
            self._count += 1
            exchange = Exchange(
                sequence=self._count,
                method=request.method,
                path=request.path,
                query=request.query,
                peer=request.peer_identity,
                request_headers=request.headers,
                request_body=render_body(request.body, request.header("content-type")),
                status=response.status,
                response_headers=tuple(response.headers),
                response_body=render_body(response.body, response.header("content-type")),
                transport_fault=response.fault.value if response.fault else None,
                faults=faults,
            )
            self._entries.append(exchange)
            return exchange

    @property
    def entries(self) -> list[Exchange]:
        with self._lock:
            return list(self._entries)

    def to_json(self) -> list[dict[str, Any]]:
        return [exchange.to_json() for exchange in self.entries]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


__all__ = ["DIAGNOSTIC_LIMIT", "Exchange", "Transcript", "render_body"]
