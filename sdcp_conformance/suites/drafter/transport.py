"""Transport at the drafter's own server (§5.1, P1-TLS-1): mutual certificate authentication is REQUIRED.

The harness connects to the drafter's base URI as a client without a
certificate, and with one from an unknown CA: the handshake (or at the
latest the first request on it) must fail; an HTTP answer to a client with
no certificate means the drafter never required one. Raw probes
(:mod:`sdcp_conformance.harness.probes`) offer what a correct party never
would: TLS 1.2, HTTP/1.1.
"""

from __future__ import annotations

import ssl

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.contexts.drafter import DrafterContext
from sdcp_conformance.harness.probes import TlsOffer, http1_request, tls_probe
from sdcp_conformance.harness.self_check import deliberate
from sdcp_conformance.protocol.codec import encode
from sdcp_conformance.protocol.problems import SDCP_MEDIA_TYPE
from sdcp_conformance.suites.drafter import CATALOGUE
from sdcp_conformance.suites.transport_h3 import H3_REQUIRES, Send, judge_h3_alpn, judge_h3_identity
from sdcp_conformance.suites.transport_judging import (
    MTLS,
    OWN_CERTIFICATE,
    REFUSALS,
    judge_alpn_probe,
    judge_http1,
    judge_own_certificate,
    require_served,
)

TLS_PROFILE = "A handshake without a client certificate, with one from an unknown CA, or at TLS 1.2 must fail."


async def _served(ctx: DrafterContext) -> None:
    """The control: the router's valid certificate gets an answer (400 for an empty assignment, no session)."""
    await require_served(ctx, ctx.iut.send("router", "POST", "assignments", deliberate({})), "an empty assignment",
                         "the drafter")


async def _bad_identity(ctx: DrafterContext, identity: str, label: str, *, answered_fails: bool) -> None:
    await _served(ctx)
    session = ctx.track()
    answer = await ctx.iut.send(identity, "POST", "assignments", ctx.assignment(session))
    if answer.status is None:
        if answer.failure in REFUSALS:
            ctx.note(f"refused below HTTP: {answer.describe()}")
            return
        ctx.fail(f"a client {label} got no answer at all ({answer.describe()}): the drafter hung instead of refusing "
                 "the handshake", row="R-5.1-MTLS", expected=["handshake refused"], actual=answer.describe())
    if answer.ok or answered_fails:
        ctx.fail(f"a client {label} completed the handshake and got {answer.describe()}: mutual certificate "
                 "authentication is REQUIRED", row="R-5.1-MTLS", expected=["handshake refused"],
                 actual=answer.describe())
    ctx.deviate("P1-TLS-1/HANDSHAKE", f"a client {label} completed the handshake and got {answer.describe()}; "
                "P1-TLS-1 has the handshake itself fail", expected=["handshake refused"], actual=answer.describe())


@CATALOGUE.case("DRF-5.1-TRANSPORT-001", area="transport", section="5.1", quote=f"{MTLS} ... {TLS_PROFILE}",
                level=Level.REQUIRED, profile=("P1-TLS-1",), rows=("R-5.1-MTLS", "P1-TLS-1/HANDSHAKE"),
                standalone=True)
async def no_client_certificate(ctx: DrafterContext) -> None:
    """A client presenting no certificate cannot reach POST assignments."""
    await _bad_identity(ctx, "no-cert", "without a certificate", answered_fails=True)


@CATALOGUE.case("DRF-5.1-TRANSPORT-002", area="transport", section="5.1", quote=f"{MTLS} ... {TLS_PROFILE}",
                level=Level.REQUIRED, profile=("P1-TLS-1",), rows=("R-5.1-MTLS", "P1-TLS-1/HANDSHAKE"),
                standalone=True)
async def certificate_from_another_ca(ctx: DrafterContext) -> None:
    """A client certificate issued by an unknown CA is refused."""
    await _bad_identity(ctx, "wrong-ca", "with a certificate from an unknown CA", answered_fails=False)


HTTP1_PROFILE = "HTTP/1.1 requests (if ALPN lets them through) are refused with 505 or the connection is closed."


def _offer(ctx: DrafterContext, *, max_version: ssl.TLSVersion = ssl.TLSVersion.TLSv1_3,
           alpn: tuple[str, ...] = ()) -> TlsOffer:
    return TlsOffer(ctx.pki.cert("router"), ctx.pki.key("router"), max_version=max_version, alpn=alpn)


@CATALOGUE.case("DRF-5.1-TRANSPORT-003", area="transport", section="5.1", quote=f"{MTLS} ... {TLS_PROFILE}",
                level=Level.REQUIRED, profile=("P1-TLS-1",), rows=("R-5.1-MTLS",), standalone=True,
                requires=("http:2",))
async def tls12_refused(ctx: DrafterContext) -> None:
    """A client offering at most TLS 1.2 (the router's valid certificate, ALPN h2) cannot complete a handshake."""
    await _served(ctx)
    result = await tls_probe(ctx.target.base_uri, ctx.target.ca,
                             _offer(ctx, max_version=ssl.TLSVersion.TLSv1_2, alpn=("h2",)), read=False)
    ctx.note(f"TLS 1.2 probe: {result.describe()}")
    problem = result.refusal_problem(f"the drafter completed a handshake at {result.tls_version}; TLS 1.3 is "
                                     "REQUIRED")
    ctx.require(problem is None, problem or "", expected="handshake refused", actual=result.describe())


@CATALOGUE.case("DRF-5.1-TRANSPORT-004", area="transport", section="5.1", quote=f"{MTLS} ... {HTTP1_PROFILE}",
                level=Level.REQUIRED, profile=("P1-TLS-1",), rows=("R-5.1-MTLS", "P1-TLS-1/HTTP1"), standalone=True,
                requires=("http:2",))
async def http11_refused(ctx: DrafterContext) -> None:
    """The router sending an assignment over HTTP/1.1 (ALPN http/1.1) gets 505 or a closed connection."""
    await _served(ctx)
    request = http1_request(ctx.target.base_uri, "POST", "assignments", encode(ctx.assignment(ctx.track())),
                            SDCP_MEDIA_TYPE)
    result = await tls_probe(ctx.target.base_uri, ctx.target.ca, _offer(ctx, alpn=("http/1.1",)), request)
    judge_http1(ctx, result, "the drafter")


@CATALOGUE.case("DRF-5.1-TRANSPORT-005", area="transport", section="5.1", level=Level.REQUIRED,
                profile=("P1-TLS-1",), rows=("R-5.1-MTLS", "P1-TLS-1/H2"), standalone=True, requires=("http:2",))
async def alpn_selects_h2(ctx: DrafterContext) -> None:
    """Offered both h2 and http/1.1, the drafter selects h2 over TLS 1.3."""
    result = await tls_probe(ctx.target.base_uri, ctx.target.ca, _offer(ctx, alpn=("h2", "http/1.1")),
                             read=False)
    judge_alpn_probe(ctx, result, "the drafter")


@CATALOGUE.case("DRF-5.1-TRANSPORT-006", area="transport", section="5.1", quote=f"{MTLS} ... {OWN_CERTIFICATE}",
                level=Level.PROFILE, profile=("P1-ID-1",), rows=("P1-ID-1/OWN-CERTIFICATE",))
async def own_certificate_names_base_uri(ctx: DrafterContext) -> None:
    """The certificate the drafter presents names its base URI, as every party's does."""
    await judge_own_certificate(ctx, ctx.iut.send("router", "POST", "assignments", deliberate({})),
                                "an empty assignment", "the drafter", ctx.target.base_uri)


def _over_h3(ctx: DrafterContext) -> Send:
    """An empty assignment (400, no session) to the drafter's HTTP/3 listener as the named identity."""
    return lambda identity: ctx.iut.send(identity, "POST", "assignments", deliberate({}), http="3")


@CATALOGUE.case("DRF-5.1-TRANSPORT-007", area="transport", section="5.1", level=Level.REQUIRED,
                profile=("P1-TLS-1",), rows=("R-5.1-MTLS", "P1-TLS-1/HANDSHAKE"), standalone=True, requires=H3_REQUIRES)
async def h3_no_client_certificate(ctx: DrafterContext) -> None:
    """Over HTTP/3, a client without a certificate is refused (any HTTP answer fails §5.1)."""
    await judge_h3_identity(ctx, _over_h3(ctx), "router", "an empty assignment", "no-cert", "without a certificate",
                            "the drafter", answered_fails=True)


@CATALOGUE.case("DRF-5.1-TRANSPORT-008", area="transport", section="5.1", level=Level.REQUIRED,
                profile=("P1-TLS-1",), rows=("R-5.1-MTLS", "P1-TLS-1/HANDSHAKE"), standalone=True, requires=H3_REQUIRES)
async def h3_certificate_from_another_ca(ctx: DrafterContext) -> None:
    """Over HTTP/3, a client certificate from an unknown CA is refused."""
    await judge_h3_identity(ctx, _over_h3(ctx), "router", "an empty assignment", "wrong-ca",
                            "with a certificate from an unknown CA", "the drafter", answered_fails=False)


@CATALOGUE.case("DRF-5.1-TRANSPORT-009", area="transport", section="5.1", level=Level.REQUIRED,
                profile=("P1-TLS-1",), rows=("R-5.1-MTLS", "P1-TLS-1/HANDSHAKE"), standalone=True, requires=H3_REQUIRES)
async def h3_expired_certificate(ctx: DrafterContext) -> None:
    """Over HTTP/3, an expired (otherwise valid) client certificate is refused."""
    await judge_h3_identity(ctx, _over_h3(ctx), "router", "an empty assignment", "expired",
                            "with an expired certificate", "the drafter", answered_fails=False)


@CATALOGUE.case("DRF-5.1-TRANSPORT-010", area="transport", section="5.1", level=Level.REQUIRED,
                rows=("R-5.1-MTLS",), standalone=True, requires=H3_REQUIRES)
async def h3_alpn_other_than_h3_refused(ctx: DrafterContext) -> None:
    """Over QUIC, a client offering only ALPN h2 is refused: HTTP/3 is ALPN h3 (RFC 9114 §3.1)."""
    await judge_h3_alpn(ctx, _over_h3(ctx), "router", "an empty assignment", "the drafter")
