"""How an exchange with a peer failed below SDCP, and at which stage of the conversation it broke.

A harness that says only "refused" or "no answer" leaves a vendor guessing:
was the port closed, did the TLS handshake stall, did the server pick
HTTP/1.1, reset the stream, or stop sending half-way through a body? Every
failure the clients report carries a :class:`Stage` (the step of TCP → TLS →
ALPN → HTTP/2 preface → headers → body at which it broke) and the
:class:`Evidence` observed there: the alert name, the certificate error, the
negotiated TLS version and ALPN, the HTTP/2 error code *by name*, the GOAWAY's
``last_stream_id``, the status, content-length and bytes received of a
half-received response, and the deadline that expired.

:class:`FailureKind` is the coarse class the retry policy (D-CLI-1/2) and older
callers use; every stage maps to one.
"""

from __future__ import annotations

import enum
import ssl
from dataclasses import dataclass, fields
from typing import Any

from h2.errors import ErrorCodes

from sdcp_conformance.errors import SdcpConformanceError


class FailureKind(enum.Enum):
    """How a request failed below HTTP (coarse: what the retry policy needs)."""

    REFUSED = "refused"
    """Handshake refused, or the connection died before the first response on it."""
    TIMEOUT = "timeout"
    CONNECTION_LOST = "connection-lost"
    """A stream reset, a GOAWAY, or a connection that had answered before was closed."""
    NOT_HTTP2 = "not-http2"
    """The peer answered, but not over HTTP/2 (§5.1)."""
    TOO_LARGE = "too-large"
    """The response body exceeded the reader's limit; the read stopped there."""


class Stage(enum.Enum):
    """The step of the conversation at which an exchange broke (issue 12's classification)."""

    TCP_REFUSED = "tcp-refused"
    TCP_TIMEOUT = "tcp-timeout"
    TCP_ERROR = "tcp-error"
    """Another failure to open the TCP connection (no route, name not resolved)."""
    TLS_STALLED = "tls-stalled"
    """TCP connected, but the TLS handshake did not complete before the deadline."""
    TLS_ALERT = "tls-alert"
    """The peer ended the handshake (or the connection right after it) with a TLS alert."""
    TLS_CERTIFICATE = "tls-certificate"
    """The peer's certificate did not verify against the configured CA."""
    TLS_ERROR = "tls-error"
    """The handshake failed otherwise: closed mid-handshake, not TLS at all."""
    ALPN = "alpn"
    """TLS completed, but the peer did not select ALPN ``h2``."""
    H2_PREFACE = "h2-preface"
    """TLS and ALPN completed, but no HTTP/2 SETTINGS came (closed, stalled or malformed)."""
    H3_SETTINGS = "h3-settings"
    """HTTP/3: the QUIC handshake (TLS 1.3, ALPN ``h3``) completed, but the server's SETTINGS never came on its
    control stream (RFC 9114 §6.2.1): the connection closed or stalled before it."""
    GOAWAY = "goaway"
    """The peer sent GOAWAY and the stream was not answered."""
    STREAM_RESET = "stream-reset"
    H2_PROTOCOL = "h2-protocol"
    """The peer broke HTTP/2 (a connection error detected by h2)."""
    H3_PROTOCOL = "h3-protocol"
    """HTTP/3: the peer broke HTTP/3 or QUIC, and the client's own stack (aioquic) closed the connection for it
    (a malformed response, RFC 9114 §4.1.2; a frame where none may be)."""
    CONNECTION_LOST = "connection-lost"
    """The connection closed after the preface, before the response headers."""
    UPLOAD_STALLED = "upload-stalled"
    """The peer did not open its flow-control window for the request body before the deadline."""
    HEADERS_TIMEOUT = "headers-timeout"
    BODY_STALLED = "body-stalled"
    """Headers arrived, the body did not finish before the deadline."""
    BODY_TRUNCATED = "body-truncated"
    """The body ended (stream or connection) before its content-length was reached."""
    BODY_OVER_LIMIT = "body-over-limit"

    @property
    def kind(self) -> FailureKind:
        return _KIND_OF_STAGE[self]

    @property
    def label(self) -> str:
        return _LABELS[self]


_KIND_OF_STAGE = {
    Stage.TCP_REFUSED: FailureKind.REFUSED,
    Stage.TCP_TIMEOUT: FailureKind.TIMEOUT,
    Stage.TCP_ERROR: FailureKind.REFUSED,
    Stage.TLS_STALLED: FailureKind.TIMEOUT,
    Stage.TLS_ALERT: FailureKind.REFUSED,
    Stage.TLS_CERTIFICATE: FailureKind.REFUSED,
    Stage.TLS_ERROR: FailureKind.REFUSED,
    Stage.ALPN: FailureKind.NOT_HTTP2,
    Stage.H2_PREFACE: FailureKind.REFUSED,
    Stage.H3_SETTINGS: FailureKind.REFUSED,
    Stage.GOAWAY: FailureKind.CONNECTION_LOST,
    Stage.STREAM_RESET: FailureKind.CONNECTION_LOST,
    Stage.H2_PROTOCOL: FailureKind.CONNECTION_LOST,
    Stage.H3_PROTOCOL: FailureKind.CONNECTION_LOST,
    Stage.CONNECTION_LOST: FailureKind.CONNECTION_LOST,
    Stage.UPLOAD_STALLED: FailureKind.TIMEOUT,
    Stage.HEADERS_TIMEOUT: FailureKind.TIMEOUT,
    Stage.BODY_STALLED: FailureKind.TIMEOUT,
    Stage.BODY_TRUNCATED: FailureKind.CONNECTION_LOST,
    Stage.BODY_OVER_LIMIT: FailureKind.TOO_LARGE,
}

_LABELS = {
    Stage.TCP_REFUSED: "TCP connect refused",
    Stage.TCP_TIMEOUT: "TCP connect timed out",
    Stage.TCP_ERROR: "TCP connect failed",
    Stage.TLS_STALLED: "TLS handshake stalled after TCP connect",
    Stage.TLS_ALERT: "TLS alert",
    Stage.TLS_CERTIFICATE: "certificate verification failed",
    Stage.TLS_ERROR: "TLS handshake failed",
    Stage.ALPN: "ALPN/HTTP version",
    Stage.H2_PREFACE: "HTTP/2 preface/SETTINGS",
    Stage.H3_SETTINGS: "HTTP/3 SETTINGS after the QUIC handshake",
    Stage.GOAWAY: "GOAWAY",
    Stage.STREAM_RESET: "stream reset",
    Stage.H2_PROTOCOL: "HTTP/2 protocol error",
    Stage.H3_PROTOCOL: "HTTP/3 protocol error",
    Stage.CONNECTION_LOST: "connection lost before the response headers",
    Stage.UPLOAD_STALLED: "request body stalled",
    Stage.HEADERS_TIMEOUT: "headers timeout",
    Stage.BODY_STALLED: "body stalled",
    Stage.BODY_TRUNCATED: "body truncated",
    Stage.BODY_OVER_LIMIT: "body over limit",
}


@dataclass(frozen=True)
class ConnectionInfo:
    """What one connection negotiated; recorded for every connection a client opens."""

    number: int
    """1 for the first connection a client opened, 2 for the next, …"""
    tls_version: str | None
    alpn: str | None
    peer_uris: tuple[str, ...] = ()
    """The URI SANs of the certificate the server presented (P1-ID-1: one, its base URI)."""

    def describe(self) -> str:
        named = f", server certificate {' '.join(self.peer_uris)}" if self.peer_uris else ""
        return f"connection {self.number}: {self.tls_version or 'no TLS'}, ALPN {self.alpn or 'none'}{named}"


@dataclass(frozen=True)
class Evidence:
    """What was observed at the failing stage; members that do not apply stay ``None``."""

    alert: str | None = None
    """TLS alert name as RFC 8446 §6 spells it (``certificate_required``)."""
    certificate_error: str | None = None
    tls_version: str | None = None
    alpn: str | None = None
    error_code: str | None = None
    """HTTP/2 error code by name (RFC 9113 §7), of a RST_STREAM or GOAWAY."""
    last_stream_id: int | None = None
    stream_id: int | None = None
    status: int | None = None
    content_length: int | None = None
    received: int | None = None
    """Body bytes received before the failure."""
    limit: int | None = None
    """The body limit that was exceeded."""
    deadline_s: float | None = None
    """The deadline that expired (timeouts), or that the request had."""

    def items(self) -> dict[str, object]:
        """The members that were observed, for a transcript or a report."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}


class TransportFailure(SdcpConformanceError):
    """A request got no complete HTTP/2 response; ``stage`` says where it broke, ``evidence`` what was seen.

    ``kind`` is the coarse class (the retry policy's); ``attempts`` how often
    the request was tried; ``connection`` the connection it was on, if one was
    established. ``str()`` is ``"<stage or kind>: <detail>"`` once, never with a
    doubled prefix.
    """

    def __init__(
        self,
        kind: FailureKind,
        detail: str,
        *,
        attempts: int = 1,
        stage: Stage | None = None,
        evidence: Evidence | None = None,
        connection: ConnectionInfo | None = None,
    ) -> None:
        super().__init__(f"{stage.value if stage else kind.value}: {detail}")
        self.kind = kind
        self.detail = detail
        self.attempts = attempts
        self.stage = stage
        self.evidence = evidence or Evidence()
        self.connection = connection

    @classmethod
    def at(cls, stage: Stage, detail: str, *, kind: FailureKind | None = None,
           connection: ConnectionInfo | None = None, **evidence: object) -> TransportFailure:
        """A failure at ``stage`` (its kind unless ``kind`` overrides), with the evidence given as keywords."""
        return cls(kind or stage.kind, detail, stage=stage, evidence=Evidence(**evidence),  # type: ignore[arg-type]
                   connection=connection)

    def describe(self) -> str:
        """``"<stage label>: <detail>"`` (the detail carries the evidence in words)."""
        label = self.stage.label if self.stage is not None else self.kind.value
        return f"{label}: {self.detail}"


def h2_error_name(code: int | None) -> str:
    """An HTTP/2 error code by its RFC 9113 §7 name; unknown codes in hex (§7: "MUST NOT trigger any special
    behavior", but they are still evidence)."""
    if code is None:
        return "no error code"
    try:
        return ErrorCodes(code).name
    except ValueError:
        return f"0x{code:x}"


def tls_alert_name(error: BaseException) -> str | None:
    """The alert an OpenSSL error reports, as RFC 8446 names it (``TLSV13_ALERT_CERTIFICATE_REQUIRED`` →
    ``certificate_required``); ``None`` if the error is not an alert from the peer."""
    reason = getattr(error, "reason", None) or ""
    if "ALERT_" not in reason:
        return None
    return reason.split("ALERT_", 1)[1].lower()


def classify_tls_error(error: BaseException) -> tuple[Stage, dict[str, Any], str]:
    """(stage, evidence members, words) for an exception raised during or right after a TLS handshake."""
    if isinstance(error, ssl.SSLCertVerificationError):
        message = error.verify_message or str(error)
        return Stage.TLS_CERTIFICATE, {"certificate_error": message}, f"the peer's certificate: {message}"
    alert = tls_alert_name(error)
    if alert is not None:
        return Stage.TLS_ALERT, {"alert": alert}, f"the peer sent alert {alert}"
    reason = getattr(error, "reason", None)
    return Stage.TLS_ERROR, {}, f"{type(error).__name__}: {reason or error}"


__all__ = [
    "ConnectionInfo",
    "Evidence",
    "FailureKind",
    "Stage",
    "TransportFailure",
    "classify_tls_error",
    "h2_error_name",
    "tls_alert_name",
]
