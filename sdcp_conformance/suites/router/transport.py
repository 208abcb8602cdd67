"""Transport at the router (§5.1, P1-TLS-1): its resources and its test front need TLS 1.3 and a client
certificate of the CA."""

from __future__ import annotations

import ssl

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.contexts.router import RouterContext
from sdcp_conformance.harness.probes import TlsOffer, http1_request, tls_probe
from sdcp_conformance.harness.roles.status_reports import instance_path
from sdcp_conformance.harness.self_check import deliberate
from sdcp_conformance.protocol.codec import encode
from sdcp_conformance.protocol.problems import SDCP_MEDIA_TYPE
from sdcp_conformance.suites.router import router_case
from sdcp_conformance.suites.transport_h3 import H3_REQUIRES, Send, judge_h3_alpn, judge_h3_identity
from sdcp_conformance.suites.transport_judging import (
    MTLS,
    OWN_CERTIFICATE,
    REFUSALS,
    TLS_PROFILE,
    judge_http1,
    judge_own_certificate,
    require_served,
)


async def _served(ctx: RouterContext) -> None:
    """The control: a verifier's valid certificate gets an answer (400 for an empty event, no session)."""
    verifier = next(iter(ctx.verifiers.values()))
    await require_served(ctx, ctx.iut.send(verifier.name, "POST", "events", deliberate({})), "an empty event",
                         "the router")


async def _refused(ctx: RouterContext, identity: str, label: str, *, answered_fails: bool) -> None:
    """A status report and a front request as ``identity``: the handshake (or the request on it) must fail."""
    await _served(ctx)
    verifier = next(iter(ctx.verifiers.values()))
    for method, path, body in (("PUT", instance_path(verifier.uri), verifier.status.body(4000)),
                               ("POST", "client/sessions", {"contract": ctx.contract(), "prompt": [1, 2]})):
        answer = await ctx.iut.send(identity, method, path, body)
        if answer.status is None:
            if answer.failure not in REFUSALS:
                ctx.deviate("R-5.1-MTLS", f"a client {label} got no answer at all ({answer.describe()}): a hang is "
                            "not a refused handshake", expected=["handshake refused"], actual=answer.describe())
            continue
        if answer.ok or answered_fails:
            ctx.deviate("R-5.1-MTLS", f"a client {label} got an HTTP answer to {method} {path} ({answer.describe()})",
                        expected=["handshake refused"], actual=answer.describe())
        else:
            ctx.deviate("P1-TLS-1/HANDSHAKE", f"a client {label} completed the handshake ({answer.describe()})",
                        expected=["handshake refused"], actual=answer.describe())


@router_case("RTR-5.1-TRANSPORT-001", area="transport", section="5.1, P1-TLS-1", quote=f"{MTLS} ... {TLS_PROFILE}",
             level=Level.REQUIRED, profile=("P1-TLS-1",), rows=("R-5.1-MTLS", "P1-TLS-1/HANDSHAKE"), standalone=True)
async def no_client_certificate(ctx: RouterContext) -> None:
    """Without a client certificate neither a status report nor the front is reachable."""
    await _refused(ctx, "no-cert", "without a certificate", answered_fails=True)


@router_case("RTR-5.1-TRANSPORT-002", area="transport", section="5.1, P1-TLS-1", quote=f"{MTLS} ... {TLS_PROFILE}",
             level=Level.REQUIRED, profile=("P1-TLS-1",), rows=("R-5.1-MTLS", "P1-TLS-1/HANDSHAKE"), standalone=True)
async def certificate_of_another_ca(ctx: RouterContext) -> None:
    """A client certificate from an unknown CA is refused."""
    await _refused(ctx, "wrong-ca", "with a certificate from an unknown CA", answered_fails=False)


@router_case("RTR-5.1-TRANSPORT-003", area="transport", section="5.1", quote=f"{MTLS} ... {TLS_PROFILE}",
             level=Level.REQUIRED, profile=("P1-TLS-1",), rows=("R-5.1-MTLS",), standalone=True, requires=("http:2",))
async def tls12_refused(ctx: RouterContext) -> None:
    """A client offering at most TLS 1.2 (valid certificate, ALPN h2) cannot complete a handshake."""
    await _served(ctx)
    offer = TlsOffer(ctx.pki.cert("client"), ctx.pki.key("client"), max_version=ssl.TLSVersion.TLSv1_2,
                     alpn=("h2",))
    result = await tls_probe(ctx.target.base_uri, ctx.target.ca, offer, read=False)
    ctx.note(f"TLS 1.2 probe: {result.describe()}")
    problem = result.refusal_problem(f"the router completed a handshake at {result.tls_version}; TLS 1.3 is REQUIRED")
    ctx.check(problem is None, problem or "", expected="handshake refused", actual=result.describe())


HTTP1 = "HTTP/1.1 requests (if ALPN lets them through) are refused with 505 or the connection is closed."
H2 = "HTTP/2 over TLS 1.3 with a required client certificate."


@router_case("RTR-5.1-TRANSPORT-004", area="transport", section="5.1, P1-TLS-1", quote=f"{MTLS} ... {HTTP1}",
             level=Level.REQUIRED, profile=("P1-TLS-1",), rows=("R-5.1-MTLS", "P1-TLS-1/HTTP1"), standalone=True,
             requires=("http:2",))
async def http11_is_refused(ctx: RouterContext) -> None:
    """A client offering only ALPN http/1.1 and sending an HTTP/1.1 front request gets 505 or a closed
    connection, never a served request."""
    await _served(ctx)
    body = encode({"contract": ctx.contract(), "prompt": [1, 2]})
    request = http1_request(ctx.target.base_uri, "POST", "client/sessions", body, SDCP_MEDIA_TYPE)
    offer = TlsOffer(ctx.pki.cert("client"), ctx.pki.key("client"), alpn=("http/1.1",))
    result = await tls_probe(ctx.target.base_uri, ctx.target.ca, offer, request)
    judge_http1(ctx, result, "the router")


@router_case("RTR-5.1-TRANSPORT-005", area="transport", section="5.1, P1-TLS-1", quote=f"{MTLS} ... {H2}",
             level=Level.REQUIRED, profile=("P1-TLS-1",), rows=("R-5.1-MTLS", "P1-TLS-1/H2"), requires=("http:2",))
async def front_and_resources_speak_h2_over_tls13(ctx: RouterContext) -> None:
    """The front and the router's resources answer over HTTP/2 on TLS 1.3."""
    session = await ctx.open_ok()
    answer = await ctx.front.describe(session.id)
    ctx.check(answer.tls_version == "TLSv1.3" and answer.alpn == "h2", f"the front answered over "
              f"{answer.tls_version} / {answer.alpn}", row="P1-TLS-1/H2", expected="TLSv1.3 / h2",
              actual=f"{answer.tls_version} / {answer.alpn}")


@router_case("RTR-5.1-TRANSPORT-006", area="transport", section="5.1, P1-ID-1", quote=f"{MTLS} ... {OWN_CERTIFICATE}",
             level=Level.PROFILE, profile=("P1-ID-1",), rows=("P1-ID-1/OWN-CERTIFICATE",))
async def own_certificate_names_base_uri(ctx: RouterContext) -> None:
    """The certificate the router presents (to the verifiers and at its front) names its base URI."""
    verifier = next(iter(ctx.verifiers.values()))
    await judge_own_certificate(ctx, ctx.iut.send(verifier.name, "POST", "events", deliberate({})), "an empty event",
                                "the router", ctx.target.base_uri)


def _over_h3(ctx: RouterContext) -> Send:
    """An empty event (400, no session) to the router's HTTP/3 listener as the named identity."""
    return lambda identity: ctx.iut.send(identity, "POST", "events", deliberate({}), http="3")


@router_case("RTR-5.1-TRANSPORT-007", area="transport", section="5.1", level=Level.REQUIRED,
             profile=("P1-TLS-1",), rows=("R-5.1-MTLS", "P1-TLS-1/HANDSHAKE"), standalone=True, requires=H3_REQUIRES)
async def h3_no_client_certificate(ctx: RouterContext) -> None:
    """Over HTTP/3, a client without a certificate is refused (any HTTP answer fails §5.1)."""
    await judge_h3_identity(ctx, _over_h3(ctx), _verifier(ctx), "an empty event", "no-cert", "without a certificate",
                            "the router", answered_fails=True)


@router_case("RTR-5.1-TRANSPORT-008", area="transport", section="5.1", level=Level.REQUIRED,
             profile=("P1-TLS-1",), rows=("R-5.1-MTLS", "P1-TLS-1/HANDSHAKE"), standalone=True, requires=H3_REQUIRES)
async def h3_certificate_from_another_ca(ctx: RouterContext) -> None:
    """Over HTTP/3, a client certificate from an unknown CA is refused."""
    await judge_h3_identity(ctx, _over_h3(ctx), _verifier(ctx), "an empty event", "wrong-ca",
                            "with a certificate from an unknown CA", "the router", answered_fails=False)


@router_case("RTR-5.1-TRANSPORT-009", area="transport", section="5.1", level=Level.REQUIRED,
             profile=("P1-TLS-1",), rows=("R-5.1-MTLS", "P1-TLS-1/HANDSHAKE"), standalone=True, requires=H3_REQUIRES)
async def h3_expired_certificate(ctx: RouterContext) -> None:
    """Over HTTP/3, an expired (otherwise valid) client certificate is refused."""
    await judge_h3_identity(ctx, _over_h3(ctx), _verifier(ctx), "an empty event", "expired",
                            "with an expired certificate", "the router", answered_fails=False)


@router_case("RTR-5.1-TRANSPORT-010", area="transport", section="5.1", level=Level.REQUIRED,
             rows=("R-5.1-MTLS",), standalone=True, requires=H3_REQUIRES)
async def h3_alpn_other_than_h3_refused(ctx: RouterContext) -> None:
    """Over QUIC, a client offering only ALPN h2 is refused: HTTP/3 is ALPN h3 (RFC 9114 §3.1)."""
    await judge_h3_alpn(ctx, _over_h3(ctx), _verifier(ctx), "an empty event", "the router")


def _verifier(ctx: RouterContext) -> str:
    """The played verifier whose identity reaches the router's resources (its events)."""
    return next(iter(ctx.verifiers.values())).name
