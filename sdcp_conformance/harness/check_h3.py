"""The preflight's lines for an HTTP/3 listener (a target whose ``http`` is "3" or "both"), §5.1.

The same questions as :mod:`.check` asks of the HTTP/2 listener, over QUIC: does anything on the base URI's UDP
port complete a QUIC handshake with the harness's certificate, ALPN ``h3``, a server certificate that chains to
the CA and names the base URI (P1-ID-1), and the server's HTTP/3 SETTINGS; and does it refuse a client without a
certificate. Each check is one connection of the harness's own HTTP/3 client with a deadline
(:data:`~.check.TIMEOUT_S`).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from sdcp_conformance.harness.check_lines import FAIL, OK, SKIP, Check
from sdcp_conformance.harness.target import TargetConfig
from sdcp_conformance.transport import event_loops
from sdcp_conformance.transport.exchange import Timeouts
from sdcp_conformance.transport.failures import FailureKind, Stage, TransportFailure

LISTENER = "HTTP/3 listener"
CLIENT_CERTIFICATE = "HTTP/3 client certificate"


async def _connect(config: TargetConfig, cert: Path | None, key: Path | None,
                   timeout_s: float) -> TransportFailure | None:
    """None when a QUIC handshake and the server's SETTINGS completed, else the failure (a timeout's kind TIMEOUT)."""
    from sdcp_conformance.transport.h3_client import H3Client

    timeouts = Timeouts(connect=timeout_s, read=timeout_s, write=timeout_s, total=timeout_s)
    try:
        async with H3Client(config.base_uri, cert, key, config.ca, timeouts=timeouts,
                            expected_uri=config.base_uri) as client:
            await asyncio.wait_for(client.connect(), timeout_s + 1.0)
    except TransportFailure as failure:
        return failure
    except TimeoutError:
        return TransportFailure.at(Stage.TLS_STALLED, f"no QUIC handshake within {timeout_s:g} s",
                                   kind=FailureKind.TIMEOUT, deadline_s=timeout_s)
    return None


def quic_checks(config: TargetConfig, cert: Path, key: Path, party: str, timeout_s: float) -> list[Check]:
    """The HTTP/3 listener's lines: reachable with the harness's certificate, and refusing a client without one."""
    ours = event_loops.run(_connect(config, cert, key, timeout_s))
    if ours is not None:
        return [Check(LISTENER, FAIL, f"no HTTP/3 connection as {party}: {ours.describe()}"),
                Check(CLIENT_CERTIFICATE, SKIP, "no HTTP/3 connection to judge")]
    checks = [Check(LISTENER, OK, f"QUIC handshake as {party}, ALPN h3, a certificate that chains to {config.ca} "
                    f"and names {config.base_uri}, the server's SETTINGS")]
    anonymous = event_loops.run(_connect(config, None, None, timeout_s))
    if anonymous is None:
        checks.append(Check(CLIENT_CERTIFICATE, FAIL, "a client without a certificate completed the QUIC handshake "
                            "and got the server's SETTINGS: the HTTP/3 listener does not require one (§5.1 mutual "
                            "certificate authentication)"))
    elif anonymous.kind is FailureKind.TIMEOUT:
        checks.append(Check(CLIENT_CERTIFICATE, FAIL, "a client without a certificate got no answer and no refusal "
                            f"before the deadline ({anonymous.describe()}; a hang is not a refusal, P1-JUDGE-3)"))
    else:
        checks.append(Check(CLIENT_CERTIFICATE, OK, f"refuses a client without one ({anonymous.describe()})"))
    return checks


__all__ = ["CLIENT_CERTIFICATE", "LISTENER", "quic_checks"]
