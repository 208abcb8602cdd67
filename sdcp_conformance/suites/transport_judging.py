"""How every role's suite judges an HTTP/1.1 probe: one reading of §5.1 and P1-TLS-1 for verifier, drafter and
router alike."""

from __future__ import annotations

from collections.abc import Awaitable

from sdcp_conformance.harness.iut import Answer
from sdcp_conformance.harness.judging import JudgedContext
from sdcp_conformance.harness.probes import ProbeOutcome, ProbeResult
from sdcp_conformance.transport.client import FailureKind
from sdcp_conformance.transport.failures import Stage
from sdcp_conformance.transport.tls import names_party

MTLS = ("HTTP/2 [RFC9113] or HTTP/3 [RFC9114] over TLS 1.3 [RFC8446] with mutual certificate authentication "
        "is REQUIRED.")
"""§5.1, quoted by every role's transport cases."""
TLS_PROFILE = ("HTTP/2 over TLS 1.3 with a required client certificate. A handshake without a client certificate, "
               "with one from an unknown CA, or at TLS 1.2 must fail.")
"""P1-TLS-1, quoted by every role's transport cases."""
REFUSALS = frozenset({FailureKind.REFUSED, FailureKind.CONNECTION_LOST, FailureKind.NOT_HTTP2})
"""How a harness client sees a refused handshake (or a refusal on the first request over it)."""

HTTP1_ACCEPTABLE = ("handshake refused", "HTTP/1.1 505", "connection closed without an HTTP/1.x answer")


def judge_http1(ctx: JudgedContext, result: ProbeResult, who: str) -> None:
    """P1-TLS-1: a 505, a refused handshake or a closed connection passes; serving the request fails (§5.1: "HTTP/2
    or HTTP/3 is REQUIRED"), and so does a handshake that never completes (a hang is not a refusal, P1-JUDGE-3);
    any other answer is a profile deviation. ``who`` names the IUT in the messages ("the drafter")."""
    ctx.note(f"HTTP/1.1 probe: {result.describe()}")
    status = result.http1_status
    acceptable = list(HTTP1_ACCEPTABLE)
    if result.refused or status == 505 or (status is None and result.closed and result.handshake_ok):
        return
    if not result.handshake_ok:
        ctx.fail(result.refusal_problem("") or result.describe(), row="R-5.1-MTLS", expected=acceptable,
                 actual=result.describe())
    if status is not None and 200 <= status < 300:
        ctx.fail(f"{who} served an SDCP request over HTTP/1.1 ({status}); HTTP/2 or HTTP/3 is REQUIRED",
                 row="R-5.1-MTLS", expected=acceptable, actual=result.describe())
    ctx.deviate("P1-TLS-1/HTTP1", f"{who} neither answered 505 nor closed the connection: {result.describe()}",
                expected=acceptable, actual=result.describe())


HANDSHAKE_REFUSALS = frozenset({Stage.TLS_ALERT, Stage.TLS_ERROR, Stage.ALPN})
"""D-JUDGE-CONTROL-1: how a valid client's control fails when the IUT refused the handshake itself (an alert, a
handshake it broke off, no ALPN h2): then no client gets an answer, and that fails §5.1."""


async def require_served(ctx: JudgedContext, control: Awaitable[Answer], what: str, who: str) -> Answer:
    """D-JUDGE-5, the control of a case that passes on a refusal (a handshake without a certificate, at TLS 1.2,
    over HTTP/1.1): ``control``, ``what`` a client with a valid certificate sends over the harness's HTTP/2 client,
    must get an HTTP answer (any status) first.

    P1-JUDGE-4 (D-JUDGE-CONTROL-1): if the IUT refused that valid client's handshake (:data:`HANDSHAKE_REFUSALS`),
    it refuses everyone and fails §5.1's sentence itself (R-5.1-MTLS). If the harness could not verify the IUT's
    own certificate, that is what fails §5.1, said so. Any other failure of the control (no TCP, a stalled
    handshake, a hang, a reset, a GOAWAY, a body that never ends) is outside what the case is about: the case is
    INCOMPLETE, naming it, and says nothing about client certificates."""
    answer = await control
    if answer.status is None:
        if answer.stage is Stage.TLS_CERTIFICATE:
            ctx.fail(f"the harness could not verify {who}'s own certificate against the CA ({answer.describe()}), "
                     "so no party can authenticate it: mutual certificate authentication is REQUIRED",
                     row="R-5.1-MTLS", expected=["a server certificate that chains to the CA"],
                     actual=answer.describe())
        if answer.stage in HANDSHAKE_REFUSALS:
            ctx.fail(f"{what} with a valid client certificate was refused at the handshake by {who} too, "
                     f"{answer.describe()}: HTTP/2 over TLS 1.3 with mutual certificate authentication is REQUIRED, "
                     "and the refusals this case probes show nothing while every client is refused",
                     row="R-5.1-MTLS", expected=["an HTTP/2 answer over TLS 1.3 (any status)"],
                     actual=answer.describe())
        ctx.incomplete(f"the control, {what} with a valid client certificate, got no HTTP/2 answer from {who}: "
                       f"{answer.describe()}; the handshake was not refused, so this case cannot judge how {who} "
                       "treats other clients (P1-JUDGE-4)")
    ctx.note(f"control: {what} with a valid client certificate got {answer.describe()} ({answer.tls_version}, "
             f"ALPN {answer.alpn})")
    return answer


def judge_alpn_probe(ctx: JudgedContext, result: ProbeResult, who: str) -> None:
    """A valid client offering h2 and http/1.1 must get a TLS 1.3 handshake that selects h2 (§5.1, P1-TLS-1).

    P1-JUDGE-4: a probe that got no handshake at all (nothing accepted TCP, or the handshake stalled) is outside
    this case's subject: INCOMPLETE, naming it. A handshake the harness broke off because it could not verify
    ``who``'s certificate is said as such, not as a valid client refused."""
    ctx.note(f"ALPN probe: {result.describe()}")
    if result.stalled or result.outcome is ProbeOutcome.UNREACHABLE:
        ctx.incomplete(f"a valid client offering h2 and http/1.1 got no handshake to judge: {result.describe()}")
    if result.server_certificate_rejected:
        ctx.fail(f"the harness could not verify {who}'s own certificate against the CA ({result.describe()}), so no "
                 "party can authenticate it: mutual certificate authentication is REQUIRED", row="R-5.1-MTLS",
                 expected=["a server certificate that chains to the CA"], actual=result.describe())
    ctx.require(result.handshake_ok, f"{who} refused a valid client offering h2 and http/1.1: {result.describe()}",
                row="R-5.1-MTLS", expected="handshake with ALPN h2", actual=result.describe())
    ctx.require(result.tls_version == "TLSv1.3", f"the handshake negotiated {result.tls_version}, not TLS 1.3",
                row="R-5.1-MTLS", expected="TLSv1.3", actual=str(result.tls_version))
    if result.alpn == "h2":
        return
    if result.alpn is None:
        ctx.deviate("P1-TLS-1/H2", f"{who} selected no ALPN protocol; P1-TLS-1 speaks HTTP/2 over TLS, which ALPN h2 "
                    "names (RFC 9113 §3.2)", expected=["ALPN h2"], actual="no ALPN")
        return
    ctx.fail(f"{who} selected ALPN {result.alpn!r}; HTTP/2 or HTTP/3 is REQUIRED", row="R-5.1-MTLS",
             expected=["ALPN h2"], actual=str(result.alpn))


OWN_CERTIFICATE = ("Every party is identified by the URI SAN of its TLS certificate, which equals its base URI "
                   "(scheme, host, port, path, trailing `/`).")


async def judge_own_certificate(ctx: JudgedContext, control: Awaitable[Answer], what: str, who: str,
                                base_uri: str) -> None:
    """P1-ID-1 at the IUT's own server: the certificate it presents names its base URI, once (D-TLS-1: several URI
    SANs identify no party). The TLS handshake has already checked the CA and the hostname; a certificate of the
    CA that names another party's URI, or none, still passes those (every party on a host shares its name), so
    this is the only place it shows. ``control`` is a valid request (:func:`require_served`)."""
    answer = await require_served(ctx, control, what, who)
    uris = answer.peer_uris or ()
    ctx.note(f"{who}'s certificate names {', '.join(uris) or 'no URI'}; its base URI is {base_uri}")
    if names_party(uris, base_uri):
        return
    named = ("no URI SAN" if not uris else f"the URI SAN {uris[0]}" if len(uris) == 1
             else f"{len(uris)} URI SANs ({', '.join(uris)}), which identify no one party")
    ctx.deviate("P1-ID-1/OWN-CERTIFICATE", f"{who} presented a certificate with {named}, not its base URI "
                f"{base_uri}: the parties calling it cannot tell by P1-ID-1 that they reached it",
                expected=[base_uri], actual=", ".join(uris) or "no URI SAN")


__all__ = ["HANDSHAKE_REFUSALS", "HTTP1_ACCEPTABLE", "OWN_CERTIFICATE", "judge_alpn_probe", "judge_http1",
           "judge_own_certificate",
           "require_served"]
