"""Every limit the project's HTTP/2 server enforces, in one place, with the defaults and where they come from.

The reference roles and the harness's own listeners face vendors'
implementations as clients, so one client must not hold a server open, fill
its memory or slow the others (issue 12). The limits follow what mature
HTTP/2 servers settled on after the 2023 rapid-reset (CVE-2023-44487) and
2024 CONTINUATION-flood advisories: nginx (``http2_max_concurrent_streams``
128, ``client_header_timeout``/``client_body_timeout``/``send_timeout`` 60 s,
``keepalive_timeout`` 75 s, ``keepalive_requests`` 1000), Go's net/http2
(``MaxConcurrentStreams`` 250, ``ReadTimeout`` over the whole request,
a bound on resets and on queued control frames) and h2o (request-body
buffering budgets). Rates are token buckets: ``burst`` frames at once,
refilled at ``per_second``; a connection that empties one is told
GOAWAY(ENHANCE_YOUR_CALM) and closed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.protocol.codec import MAX_MESSAGE_SIZE


@dataclass(frozen=True)
class RateLimit:
    """A token bucket's shape: ``burst`` events at once, ``per_second`` sustained."""

    burst: int
    per_second: float

    def __post_init__(self) -> None:
        if self.burst < 1 or self.per_second <= 0:
            raise InvalidArgument(f"a rate limit needs burst >= 1 and per_second > 0, not {self}")


class TokenBucket:
    """One connection's allowance of one kind of frame."""

    __slots__ = ("_rate", "_stamp", "_tokens", "burst")

    def __init__(self, limit: RateLimit, now: float) -> None:
        self.burst = float(limit.burst)
        self._rate = limit.per_second
        self._tokens = self.burst
        self._stamp = now

    def take(self, now: float) -> bool:
        """Spend one token; ``False`` when the bucket is empty (the peer is over its rate)."""
        tokens = min(self.burst, self._tokens + (now - self._stamp) * self._rate)
        self._stamp = now
        if tokens < 1.0:
            self._tokens = tokens
            return False
        self._tokens = tokens - 1.0
        return True


@dataclass(frozen=True)
class ServerLimits:
    """What one client may cost the server; every member documented with its default's reason."""

    max_body: int = MAX_MESSAGE_SIZE
    """P1-MSG-2: "Bodies over 16 MiB may be refused with 413". Over it: 413 and RST_STREAM at once."""
    max_concurrent_streams: int = 128
    """SETTINGS_MAX_CONCURRENT_STREAMS (nginx's 128): streams a connection may have open at once."""
    initial_window: int = 1 << 20
    """Per-stream receive window: the most of a body a client may send before the server reads it."""
    connection_window: int = 4 << 20
    """Connection receive window: the most a connection may have in flight, unacknowledged, across its streams;
    so one connection buffers at most ``connection_buffer_budget`` plus this."""
    max_frame_size: int = 16_384
    """SETTINGS_MAX_FRAME_SIZE, RFC 9113's default; a larger frame is refused at its header (FRAME_SIZE_ERROR)."""
    max_header_list_size: int = 65_536
    """SETTINGS_MAX_HEADER_LIST_SIZE (hpack's default): a bigger decoded header list ends the connection."""
    connection_buffer_budget: int = MAX_MESSAGE_SIZE
    """Request-body bytes one connection may have buffered (arrived, handler not done). Above it the server
    stops acknowledging that connection's DATA, so flow control holds it back; one ``max_body`` body fits."""
    server_buffer_budget: int = 128 << 20
    """The same across all connections: above it every connection's further DATA waits, and a new request
    whose declared body does not fit is answered 503 at once."""
    max_connections_per_identity: int = 256
    """D-SRV-7: connections one client identity (its certificate's URI SAN, P1-ID-1) may hold at once; more are
    told GOAWAY(ENHANCE_YOUR_CALM) right after the handshake. A held TLS connection costs about 100 KB
    (benchmarks/bench_server_attacks.py), so this bounds one client's idle connections near 25 MiB without
    locking out the others (identities come from the CA); lower, a refused client's reconnects cost more in
    handshakes than its connections did. Not applied when client certificates are optional."""
    handshake_timeout_s: float = 10.0
    """TCP accepted → TLS handshake done."""
    preface_timeout_s: float = 10.0
    """TLS done → the client's preface and SETTINGS."""
    idle_timeout_s: float = 120.0
    """A connection with no open stream this long gets GOAWAY(NO_ERROR) and is closed (nginx: 75 s)."""
    header_timeout_s: float = 10.0
    """A header block (HEADERS + CONTINUATION, or one HEADERS frame still arriving) must complete in this time;
    while it is open no other frame may come (RFC 9113 §6.10), so it holds the whole connection."""
    body_timeout_s: float = 30.0
    """A request body must be complete this long after its headers (Go's ReadTimeout: the whole body, so a
    byte a second does not keep it alive); then 408 and RST_STREAM."""
    send_timeout_s: float = 30.0
    """A response whose flow-control window stays closed this long is reset (nginx ``send_timeout``)."""
    drain_timeout_s: float = 45.0
    """After the server's graceful GOAWAY, how long the streams it still owes may take; then it closes.
    Above the 30 s output long poll (P1-OUT-1)."""
    max_requests: int | None = None
    """Send GOAWAY(NO_ERROR) after this many requests on a connection, answer the streams up to the one that
    reached it and refuse later ones (REFUSED_STREAM) — hypercorn's ``max_requests``, nginx's
    ``keepalive_requests``. ``None``: no cap (the default; tests and the graceful-GOAWAY certification set it)."""
    resets: RateLimit = field(default_factory=lambda: RateLimit(200, 100.0))
    """RST_STREAM frames from the client (rapid reset, CVE-2023-44487)."""
    settings: RateLimit = field(default_factory=lambda: RateLimit(50, 5.0))
    """SETTINGS frames (not ACKs): each costs the server an ACK and a settings change."""
    pings: RateLimit = field(default_factory=lambda: RateLimit(50, 5.0))
    """PING frames (not ACKs): each costs the server a PING ACK."""
    empty_data: RateLimit = field(default_factory=lambda: RateLimit(100, 20.0))
    """DATA frames with no payload and no END_STREAM: work with no progress (CVE-2019-9518)."""
    stream_errors: RateLimit = field(default_factory=lambda: RateLimit(100, 20.0))
    """Streams the server had to reset because of the client: stream-level protocol errors h2 detects (made-you-
    reset), bodies over the limit, bodies too slow."""

    def __post_init__(self) -> None:
        for name in ("max_body", "max_concurrent_streams", "initial_window", "connection_window",
                     "connection_buffer_budget", "server_buffer_budget", "max_connections_per_identity"):
            if getattr(self, name) < 1:
                raise InvalidArgument(f"ServerLimits.{name} must be positive")
        if not 16_384 <= self.max_frame_size <= (1 << 24) - 1:
            raise InvalidArgument("max_frame_size must be within RFC 9113 §6.5.2's 16384..16777215")
        if self.max_requests is not None and self.max_requests < 1:
            raise InvalidArgument("max_requests must be at least 1 (or None)")

    @property
    def tick_s(self) -> float:
        """How often a connection's deadlines are checked: a quarter of the shortest, within 50 ms..1 s."""
        shortest = min(self.preface_timeout_s, self.idle_timeout_s, self.header_timeout_s, self.body_timeout_s)
        return min(1.0, max(0.05, shortest / 4))


__all__ = ["RateLimit", "ServerLimits", "TokenBucket"]
