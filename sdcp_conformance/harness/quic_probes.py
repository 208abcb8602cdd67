"""A raw QUIC handshake probe of the IUT's HTTP/3 listener (§5.1, RFC 9001, RFC 9114 §3.1).

The harness's HTTP/3 client only offers what a correct party offers (ALPN ``h3``, its certificate), so it cannot
show what the IUT does with a client offering another application protocol. This probe shapes the QUIC handshake
itself (aioquic's own client, none of the harness's HTTP/3 layer) and reports how it ended: completed, with the
protocol the server selected; refused, with the CONNECTION_CLOSE error code (a TLS alert is ``0x100 + alert``,
RFC 9001 §4.8); or stalled until the deadline (P1-JUDGE-3: a handshake that hangs is not one that was refused).
"""

from __future__ import annotations

import asyncio
import ssl
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from sdcp_conformance.harness.probes import PROBE_TIMEOUT_S, ProbeOutcome

CRYPTO_ERROR_BASE = 0x100
"""RFC 9001 §4.8: a TLS alert ends the QUIC connection with error code 0x100 + the alert's number."""
NO_APPLICATION_PROTOCOL = 120


@dataclass(frozen=True)
class QuicProbeResult:
    outcome: ProbeOutcome
    alpn: str | None
    """The application protocol the server selected, when the handshake completed."""
    error_code: int | None
    """The CONNECTION_CLOSE error code, when the server refused."""
    detail: str
    elapsed_s: float

    @property
    def alert(self) -> int | None:
        """The TLS alert a CRYPTO_ERROR carries (``no_application_protocol`` is 120), if it is one."""
        if self.error_code is not None and CRYPTO_ERROR_BASE <= self.error_code < CRYPTO_ERROR_BASE + 0x100:
            return self.error_code - CRYPTO_ERROR_BASE
        return None

    def describe(self) -> str:
        if self.outcome is ProbeOutcome.COMPLETED:
            return f"QUIC handshake completed, ALPN {self.alpn!r}"
        if self.outcome is ProbeOutcome.REFUSED:
            alert = f", TLS alert {self.alert}" if self.alert is not None else ""
            return f"QUIC handshake refused (error code {self.error_code}{alert}; {self.detail})"
        if self.outcome is ProbeOutcome.STALLED:
            return f"QUIC handshake stalled ({self.detail})"
        return f"no QUIC answer ({self.detail})"


async def quic_probe(base_uri: str, ca: Path, cert: Path | None, key: Path | None, alpn: tuple[str, ...], *,
                     timeout_s: float = PROBE_TIMEOUT_S) -> QuicProbeResult:
    """One QUIC handshake with the given client certificate and ALPN list; never waits past ``timeout_s``."""
    from aioquic.asyncio.client import connect
    from aioquic.asyncio.protocol import QuicConnectionProtocol
    from aioquic.quic import events
    from aioquic.quic.configuration import QuicConfiguration

    class Watching(QuicConnectionProtocol):
        """Keeps how the handshake ended: the selected ALPN, or the peer's CONNECTION_CLOSE."""

        alpn: str | None = None
        closed: events.ConnectionTerminated | None = None
        """The server's CONNECTION_CLOSE: the end of a connection this probe closed itself is not kept."""
        closing = False

        def close(self, *args: Any, **kwargs: Any) -> None:
            self.closing = True
            super().close(*args, **kwargs)

        def quic_event_received(self, event: events.QuicEvent) -> None:
            if isinstance(event, events.HandshakeCompleted):
                self.alpn = event.alpn_protocol
            elif isinstance(event, events.ConnectionTerminated) and self.closed is None and not self.closing:
                self.closed = event
            super().quic_event_received(event)

    parts = urlsplit(base_uri)
    host, port = parts.hostname or "127.0.0.1", parts.port or 443
    configuration = QuicConfiguration(is_client=True, alpn_protocols=list(alpn), server_name=host,
                                      verify_mode=ssl.CERT_NONE)  # the server's certificate is not this probe's
    if cert is not None:
        configuration.load_cert_chain(cert, key)
    started = time.monotonic()
    watched: list[Watching] = []

    def watching(*args: object, **kwargs: object) -> Watching:
        protocol = Watching(*args, **kwargs)  # type: ignore[arg-type]
        watched.append(protocol)
        return protocol

    def result(outcome: ProbeOutcome, detail: str, *, alpn_: str | None = None,
               code: int | None = None) -> QuicProbeResult:
        return QuicProbeResult(outcome, alpn_, code, detail, time.monotonic() - started)

    try:
        async with asyncio.timeout(timeout_s):
            async with connect(host, port, configuration=configuration, create_protocol=watching) as protocol:
                return result(ProbeOutcome.COMPLETED, "", alpn_=getattr(protocol, "alpn", None))
    except TimeoutError:
        closed = watched[0].closed if watched else None
        if closed is not None:
            return result(ProbeOutcome.REFUSED, closed.reason_phrase, code=closed.error_code)
        return result(ProbeOutcome.STALLED, f"no QUIC handshake within {timeout_s:g} s")
    except ConnectionError:
        closed = watched[0].closed if watched else None
        if closed is not None:
            return result(ProbeOutcome.REFUSED, closed.reason_phrase or "closed", code=closed.error_code)
        return result(ProbeOutcome.REFUSED, "the connection ended during the handshake")
    except OSError as exc:
        return result(ProbeOutcome.UNREACHABLE, f"{type(exc).__name__}: {exc}")


__all__ = ["CRYPTO_ERROR_BASE", "NO_APPLICATION_PROTOCOL", "QuicProbeResult", "quic_probe"]
