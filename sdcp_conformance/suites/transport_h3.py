"""How every role's suite judges the IUT's HTTP/3 listener (§5.1): the same questions as over HTTP/2, over QUIC.

§5.1: "HTTP/2 [RFC9113] or HTTP/3 [RFC9114] over TLS 1.3 [RFC8446] with mutual certificate authentication is
REQUIRED." An HTTP/3 listener is held to it like an HTTP/2 one, and on its own: an IUT serving both
(``http = "both"``) whose HTTP/3 listener lets in a client without a certificate is FAILED on §5.1 even though its
HTTP/2 listener refuses that client (the gap a widely used web server shipped, caddyserver/caddy#7953). These
cases need the ``http:3`` capability: they run when the target's ``http`` is "3" or "both".
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from sdcp_conformance.harness.environment import RoleContext
from sdcp_conformance.harness.iut import Answer
from sdcp_conformance.harness.judging import JudgedContext
from sdcp_conformance.harness.probes import ProbeOutcome
from sdcp_conformance.harness.quic_probes import NO_APPLICATION_PROTOCOL, quic_probe
from sdcp_conformance.suites.transport_judging import REFUSALS, require_served

H3_REQUIRES = ("http:3",)
"""What an HTTP/3 transport case needs of the target (:mod:`sdcp_conformance.harness.capabilities`)."""
NOT_H3 = ("h2",)
"""D-JUDGE-HTTP-2: what the ALPN probe offers: a protocol that exists but is never spoken over QUIC (RFC 9114 §3.1 has
``h3`` select HTTP/3; RFC 9113 §3.2 ``h2`` is TLS over TCP only), so no conformant HTTP/3 listener selects it."""

Send = Callable[[str], Awaitable[Answer]]
"""One request of the role's control message to the IUT's HTTP/3 listener, as the named identity."""


async def judge_h3_identity(ctx: JudgedContext, send: Send, control_party: str, what: str, identity: str,
                            label: str, who: str, *, answered_fails: bool) -> None:
    """Over HTTP/3, a client ``label`` (the PKI's ``identity``) must be refused; ``control_party`` with a valid
    certificate gets an answer first (D-JUDGE-5). ``answered_fails``: any HTTP answer at all is FAILED (a listener
    that answers a client presenting no certificate never required one); otherwise an HTTP refusal is the profile's
    deviation (P1-TLS-1 has the handshake itself fail)."""
    await require_served(ctx, send(control_party), f"{what} over HTTP/3", who)
    answer = await send(identity)
    if answer.status is None:
        if answer.failure in REFUSALS:
            ctx.note(f"refused over HTTP/3 below HTTP: {answer.describe()}")
            return
        ctx.fail(f"over HTTP/3, a client {label} got no answer at all ({answer.describe()}): {who} hung instead of "
                 "refusing the handshake (a hang is not a refusal, P1-JUDGE-3)", row="R-5.1-MTLS",
                 expected=["QUIC handshake refused"], actual=answer.describe())
    if answer.ok or answered_fails:
        ctx.fail(f"over HTTP/3, a client {label} completed the QUIC handshake and got {answer.describe()}: {who}'s "
                 "HTTP/3 listener does not require a valid client certificate; mutual certificate authentication "
                 "is REQUIRED", row="R-5.1-MTLS", expected=["QUIC handshake refused"], actual=answer.describe())
    ctx.deviate("P1-TLS-1/HANDSHAKE", f"over HTTP/3, a client {label} completed the QUIC handshake and got "
                f"{answer.describe()}; P1-TLS-1 has the handshake itself fail", expected=["QUIC handshake refused"],
                actual=answer.describe())


async def judge_h3_alpn(ctx: RoleContext[Any], send: Send, control_party: str, what: str, who: str) -> None:
    """A QUIC client offering only ALPN ``h2`` (:data:`NOT_H3`) with a valid certificate is refused: the listener
    must not select a protocol other than h3, and a handshake that hangs is no refusal (P1-JUDGE-3)."""
    await require_served(ctx, send(control_party), f"{what} over HTTP/3", who)
    result = await quic_probe(ctx.target.base_uri, ctx.target.ca, ctx.pki.cert(control_party),
                              ctx.pki.key(control_party), NOT_H3)
    ctx.note(f"ALPN probe offering only {NOT_H3[0]!r} over QUIC: {result.describe()}")
    if result.outcome is ProbeOutcome.REFUSED:
        if result.alert != NO_APPLICATION_PROTOCOL:
            ctx.note(f"refused with error code {result.error_code}, not the no_application_protocol alert "
                     "(CRYPTO_ERROR 0x178) RFC 9001 §8.1 names")
        return
    if result.outcome is ProbeOutcome.COMPLETED:
        ctx.fail(f"{who}'s HTTP/3 listener completed a QUIC handshake selecting ALPN {result.alpn!r} for a client "
                 f"that offered only {NOT_H3[0]!r}: HTTP/3 is ALPN h3 (RFC 9114 §3.1)", row="R-5.1-MTLS",
                 expected=["QUIC handshake refused (no_application_protocol)"], actual=result.describe())
    ctx.fail(f"{who}'s HTTP/3 listener neither completed nor refused a QUIC handshake offering only "
             f"{NOT_H3[0]!r}: {result.describe()} (a hang is not a refusal, P1-JUDGE-3)", row="R-5.1-MTLS",
             expected=["QUIC handshake refused (no_application_protocol)"], actual=result.describe())


__all__ = ["H3_REQUIRES", "NOT_H3", "Send", "judge_h3_alpn", "judge_h3_identity"]
