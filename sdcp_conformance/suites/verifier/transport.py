"""Transport and message framing at the verifier (§5.1, P1-TLS-1, P1-MSG-1, P1-ERR-1).

Handshakes with bad client credentials and other TLS/HTTP versions are probed
two ways: through the harness's HTTP/2 client with the negative identities,
and with raw :mod:`ssl` probes (:mod:`sdcp_conformance.harness.probes`) where
the client must offer what a correct party never would.
"""

from __future__ import annotations

import json
import ssl

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.contexts.verifier import VerifierContext
from sdcp_conformance.harness.iut import Answer
from sdcp_conformance.harness.probes import TlsOffer, http1_request, tls_probe
from sdcp_conformance.harness.self_check import deliberate
from sdcp_conformance.protocol.codec import decode, encode
from sdcp_conformance.protocol.messages import SessionState
from sdcp_conformance.protocol.problems import (
    PROBLEM_CBOR_MEDIA_TYPE,
    PROBLEM_MEDIA_TYPE,
    PROBLEM_URN_PREFIX,
    SDCP_MEDIA_TYPE,
)
from sdcp_conformance.suites.transport_h3 import H3_REQUIRES, Send, judge_h3_alpn, judge_h3_identity
from sdcp_conformance.suites.transport_judging import (
    MTLS,
    OWN_CERTIFICATE,
    REFUSALS,
    TLS_PROFILE,
    judge_alpn_probe,
    judge_http1,
    judge_own_certificate,
    require_served,
)
from sdcp_conformance.suites.verifier import CATALOGUE
from sdcp_conformance.transport.types import media_type

HTTP1_PROFILE = "HTTP/1.1 requests (if ALPN lets them through) are refused with 505 or the connection is closed."


async def _served(ctx: VerifierContext) -> None:
    """The control: the router's valid certificate gets an answer (400 for an empty session-open, no session)."""
    await require_served(ctx, ctx.iut.send("router", "POST", "sessions", deliberate({})), "an empty session-open",
                         "the IUT")


async def _bad_identity(ctx: VerifierContext, identity: str, label: str, *, answered_fails: bool = False) -> None:
    """Open a session as ``identity``: the handshake (or the first request on it) must fail.

    ``answered_fails``: any HTTP answer at all is FAILED — a server that answers a client presenting no
    certificate never required one (§5.1: mutual certificate authentication is REQUIRED)."""
    await _served(ctx)
    session = ctx.track()
    answer = await ctx.open(session, party=identity)
    if answer.status is None:
        if answer.failure in REFUSALS:
            ctx.note(f"refused below HTTP: {answer.describe()}")
            return
        ctx.fail(f"a client {label} got no answer at all ({answer.describe()}): the IUT hung instead of "
                 "refusing the handshake", row="R-5.1-MTLS", expected=["handshake refused"],
                 actual=answer.describe())
    if answer.ok:
        ctx.fail(f"a client {label} opened a session ({answer.describe()}): mutual certificate authentication "
                 "is REQUIRED", row="R-5.1-MTLS", expected=["handshake refused"], actual=answer.describe())
    if answered_fails:
        ctx.fail(f"a client {label} completed the handshake and got an HTTP answer ({answer.describe()}, "
                 f"{answer.tls_version}, ALPN {answer.alpn}): the IUT did not require a client certificate; mutual "
                 "certificate authentication is REQUIRED", row="R-5.1-MTLS", expected=["handshake refused"],
                 actual=answer.describe())
    ctx.deviate("P1-TLS-1/HANDSHAKE", f"a client {label} completed the handshake and got an HTTP answer "
                f"({answer.describe()}); P1-TLS-1 has the handshake itself fail", expected=["handshake refused"],
                actual=answer.describe())


@CATALOGUE.case(
    "VER-5.1-TRANSPORT-001", area="transport", section="5.1", quote=f"{MTLS} ... {TLS_PROFILE}",
    level=Level.REQUIRED, profile=("P1-TLS-1",), rows=("R-5.1-MTLS", "P1-TLS-1/HANDSHAKE"), standalone=True,
)
async def no_client_certificate(ctx: VerifierContext) -> None:
    """A client presenting no certificate cannot reach the verifier's resources."""
    await _bad_identity(ctx, "no-cert", "without a certificate", answered_fails=True)


@CATALOGUE.case(
    "VER-5.1-TRANSPORT-002", area="transport", section="5.1", quote=f"{MTLS} ... {TLS_PROFILE}",
    level=Level.REQUIRED, profile=("P1-TLS-1",), rows=("R-5.1-MTLS", "P1-TLS-1/HANDSHAKE"), standalone=True,
)
async def certificate_from_another_ca(ctx: VerifierContext) -> None:
    """A client certificate issued by an unknown CA is refused."""
    await _bad_identity(ctx, "wrong-ca", "with a certificate from an unknown CA")


@CATALOGUE.case(
    "VER-5.1-TRANSPORT-003", area="transport", section="5.1", quote=f"{MTLS} ... {TLS_PROFILE}",
    level=Level.REQUIRED, profile=("P1-TLS-1",), rows=("R-5.1-MTLS", "P1-TLS-1/HANDSHAKE"), standalone=True,
)
async def expired_certificate(ctx: VerifierContext) -> None:
    """An expired (otherwise valid) client certificate is refused."""
    await _bad_identity(ctx, "expired", "with an expired certificate")


def _offer(ctx: VerifierContext, party: str, *, max_version: ssl.TLSVersion = ssl.TLSVersion.TLSv1_3,
           alpn: tuple[str, ...] = ()) -> TlsOffer:
    return TlsOffer(ctx.pki.cert(party), ctx.pki.key(party), max_version=max_version, alpn=alpn)


@CATALOGUE.case(
    "VER-5.1-TRANSPORT-004", area="transport", section="5.1", quote=f"{MTLS} ... {TLS_PROFILE}",
    level=Level.REQUIRED, profile=("P1-TLS-1",), rows=("R-5.1-MTLS",), standalone=True,
    requires=("http:2",),
)
async def tls12_refused(ctx: VerifierContext) -> None:
    """A client offering at most TLS 1.2 (valid certificate, ALPN h2) cannot complete a handshake."""
    await _served(ctx)
    offer = _offer(ctx, "drafter-1", max_version=ssl.TLSVersion.TLSv1_2, alpn=("h2",))
    result = await tls_probe(ctx.target.base_uri, ctx.target.ca, offer, read=False)
    ctx.note(f"TLS 1.2 probe: {result.describe()}")
    problem = result.refusal_problem(f"the IUT completed a handshake at {result.tls_version}; TLS 1.3 is REQUIRED")
    ctx.require(problem is None, problem or "", expected="handshake refused", actual=result.describe())


async def _http1_probe(ctx: VerifierContext, alpn: tuple[str, ...]) -> None:
    await _served(ctx)
    session = ctx.track()
    request = http1_request(ctx.target.base_uri, "POST", "sessions", encode(ctx.opening(session)),
                            SDCP_MEDIA_TYPE)
    result = await tls_probe(ctx.target.base_uri, ctx.target.ca, _offer(ctx, "router", alpn=alpn), request)
    judge_http1(ctx, result, "the IUT")


@CATALOGUE.case(
    "VER-5.1-TRANSPORT-005", area="transport", section="5.1", quote=f"{MTLS} ... {HTTP1_PROFILE}",
    level=Level.REQUIRED, profile=("P1-TLS-1",), rows=("R-5.1-MTLS", "P1-TLS-1/HTTP1"), standalone=True,
    requires=("http:2",),
)
async def http11_by_alpn(ctx: VerifierContext) -> None:
    """A router offering only ALPN http/1.1 and sending an HTTP/1.1 session-open gets 505 or a closed connection."""
    await _http1_probe(ctx, ("http/1.1",))


@CATALOGUE.case(
    "VER-5.1-TRANSPORT-006", area="transport", section="5.1", quote=f"{MTLS} ... {HTTP1_PROFILE}",
    level=Level.REQUIRED, profile=("P1-TLS-1",), rows=("R-5.1-MTLS", "P1-TLS-1/HTTP1"), standalone=True,
    requires=("http:2",),
)
async def http11_without_alpn(ctx: VerifierContext) -> None:
    """A router offering no ALPN at all and sending an HTTP/1.1 session-open gets 505 or a closed connection."""
    await _http1_probe(ctx, ())


@CATALOGUE.case(
    "VER-5.1-TRANSPORT-007", area="transport", section="5.1", level=Level.REQUIRED,
    profile=("P1-TLS-1",), rows=("R-5.1-MTLS", "P1-TLS-1/H2"), standalone=True,
    requires=("http:2",),
)
async def alpn_selects_h2(ctx: VerifierContext) -> None:
    """Offered both h2 and http/1.1, the IUT selects h2 (it never negotiates HTTP/1.1 over TLS)."""
    offer = _offer(ctx, "drafter-1", alpn=("h2", "http/1.1"))
    judge_alpn_probe(ctx, await tls_probe(ctx.target.base_uri, ctx.target.ca, offer, read=False), "the IUT")


def _media(answer: Answer) -> str:
    return media_type(answer.content_type)


@CATALOGUE.case(
    "VER-5.1-TRANSPORT-008", area="transport", section="5.1",
    level=Level.MUST, profile=("P1-MSG-1",), rows=("R-5.1-MEDIA-TYPE",),
)
async def success_media_type(ctx: VerifierContext) -> None:
    """session-state, verdict and output bodies are labelled application/sdcp+cbor."""
    session = ctx.track()
    answers = [("POST sessions", await ctx.open(session))]
    ctx.check_state(session, ctx.expect_ok(answers[0][1], SessionState, what="POST sessions"), "POST sessions")
    answers.append(("PUT sessions/{id}/drafter", await ctx.assign(session)))
    answers.append(("POST proposals", await ctx.propose(session, ctx.greedy(session, 1))))
    answers.append(("GET output", await ctx.output(session, 0)))
    for what, answer in answers:
        ctx.require(answer.ok, f"{what} failed: {answer.describe()}", row="R-5.1-RESOURCES", expected="2xx",
                    actual=answer.describe())
        ctx.check(_media(answer) == SDCP_MEDIA_TYPE, f"{what}: the body's media type is {answer.content_type!r}",
                  expected=SDCP_MEDIA_TYPE, actual=str(answer.content_type))


@CATALOGUE.case(
    "VER-5.1-TRANSPORT-009", area="transport", section="5.1",
    quote="Errors use Problem Details [RFC9457]; ... Errors are RFC 9457 `application/problem+json`. `type` is "
          "`urn:ietf:params:sdcp:problem:<suffix>` with the suffix from Table 2",
    level=Level.MUST, profile=("P1-ERR-1",), rows=("R-5.1-PROBLEM-DETAILS", "R-6.3-FENCING"),
)
async def errors_are_problem_details(ctx: VerifierContext) -> None:
    """A refused proposal (wrong epoch) is answered with a Problem Details document of the Table 2 type."""
    session = await ctx.open_ok()
    await ctx.assign_ok(session)
    answer = await ctx.propose(session, ctx.greedy(session, 1), epoch=session.epoch + 1)
    ctx.require(answer.status is not None and not answer.ok, f"a proposal with another epoch got "
                f"{answer.describe()}, not a refusal", row="R-6.3-FENCING", expected="409", actual=answer.describe())
    media = _media(answer)
    ctx.require(media in (PROBLEM_MEDIA_TYPE, PROBLEM_CBOR_MEDIA_TYPE),
                f"the error body is labelled {answer.content_type!r}, not a Problem Details media type",
                expected=PROBLEM_MEDIA_TYPE, actual=str(answer.content_type))
    members = _problem_members(ctx, answer, media)
    status = members.get("status")
    ctx.check(status is None or status == answer.status,
              f"the problem's status member {status!r} differs from the HTTP status {answer.status} (RFC 9457 "
              "§3.1.2: generators MUST use the same status code)", expected=str(answer.status), actual=str(status))
    type_uri = members.get("type")
    expected = PROBLEM_URN_PREFIX + "sdcp-stale-epoch"
    if type_uri == expected:
        ctx.expect_refusal(answer, "R-6.3-FENCING", what="a proposal with another epoch")
        return
    if isinstance(type_uri, str) and type_uri.rsplit("/", 1)[-1].rsplit(":", 1)[-1] == "sdcp-stale-epoch":
        ctx.deviate("P1-ERR-1", f"the problem type {type_uri!r} names sdcp-stale-epoch but not as the profile's "
                    "URN", expected=[expected], actual=type_uri)
    ctx.expect_refusal(answer, "R-6.3-FENCING", what="a proposal with another epoch")


def _problem_members(ctx: VerifierContext, answer: Answer, media: str) -> dict[str, object]:
    try:
        members = json.loads(answer.body) if media == PROBLEM_MEDIA_TYPE else decode(answer.body)
    except Exception as exc:  # any decoding failure is the IUT's malformed body
        ctx.fail(f"the problem body does not decode as {media}: {exc}", actual=answer.body[:200].hex())
    if not isinstance(members, dict):
        ctx.fail("the problem body is not an object", actual=answer.body[:200].hex())
    return members


@CATALOGUE.case(
    "VER-5.1-TRANSPORT-010", area="transport", section="5.1",
    level=Level.PROFILE, profile=("P1-MSG-1",), rows=("P1-MSG-1/DETERMINISTIC",),
)
async def deterministic_encoding(ctx: VerifierContext) -> None:
    """The session-state, verdict and output the IUT sends are in core deterministic CBOR."""
    session = ctx.track()
    answers = [("session-state", await ctx.open(session))]
    answers.append(("session-state of PUT drafter", await ctx.assign(session)))
    answers.append(("verdict", await ctx.propose(session, ctx.greedy(session, 2))))
    answers.append(("output", await ctx.output(session, 0)))
    for what, answer in answers:
        ctx.require(answer.ok, f"{what}: the request failed ({answer.describe()})", row="R-5.1-RESOURCES",
                    actual=answer.describe())
        canonical = encode(decode(answer.body))
        ctx.check(canonical == answer.body, f"the {what} is not in core deterministic encoding",
                  expected=canonical.hex(), actual=answer.body.hex())


@CATALOGUE.case(
    "VER-5.1-TRANSPORT-011", area="transport", section="5.1", quote=f"{MTLS} ... {OWN_CERTIFICATE}",
    level=Level.PROFILE, profile=("P1-ID-1",), rows=("P1-ID-1/OWN-CERTIFICATE",),
)
async def own_certificate_names_base_uri(ctx: VerifierContext) -> None:
    """The certificate the verifier presents names its base URI, as every party's does."""
    await judge_own_certificate(ctx, ctx.iut.send("router", "POST", "sessions", deliberate({})),
                                "an empty session-open", "the verifier", ctx.target.base_uri)


def _over_h3(ctx: VerifierContext) -> Send:
    """An empty session-open (400, no session) to the IUT's HTTP/3 listener as the named identity."""
    return lambda identity: ctx.iut.send(identity, "POST", "sessions", deliberate({}), http="3")


@CATALOGUE.case(
    "VER-5.1-TRANSPORT-012", area="transport", section="5.1", level=Level.REQUIRED,
    profile=("P1-TLS-1",), rows=("R-5.1-MTLS", "P1-TLS-1/HANDSHAKE"), standalone=True, requires=H3_REQUIRES,
)
async def h3_no_client_certificate(ctx: VerifierContext) -> None:
    """Over HTTP/3, a client without a certificate is refused (any HTTP answer fails §5.1)."""
    await judge_h3_identity(ctx, _over_h3(ctx), "router", "an empty session-open", "no-cert",
                            "without a certificate", "the verifier", answered_fails=True)


@CATALOGUE.case(
    "VER-5.1-TRANSPORT-013", area="transport", section="5.1", level=Level.REQUIRED,
    profile=("P1-TLS-1",), rows=("R-5.1-MTLS", "P1-TLS-1/HANDSHAKE"), standalone=True, requires=H3_REQUIRES,
)
async def h3_certificate_from_another_ca(ctx: VerifierContext) -> None:
    """Over HTTP/3, a client certificate from an unknown CA is refused."""
    await judge_h3_identity(ctx, _over_h3(ctx), "router", "an empty session-open", "wrong-ca",
                            "with a certificate from an unknown CA", "the verifier", answered_fails=False)


@CATALOGUE.case(
    "VER-5.1-TRANSPORT-014", area="transport", section="5.1", level=Level.REQUIRED,
    profile=("P1-TLS-1",), rows=("R-5.1-MTLS", "P1-TLS-1/HANDSHAKE"), standalone=True, requires=H3_REQUIRES,
)
async def h3_expired_certificate(ctx: VerifierContext) -> None:
    """Over HTTP/3, an expired (otherwise valid) client certificate is refused."""
    await judge_h3_identity(ctx, _over_h3(ctx), "router", "an empty session-open", "expired",
                            "with an expired certificate", "the verifier", answered_fails=False)


@CATALOGUE.case(
    "VER-5.1-TRANSPORT-015", area="transport", section="5.1", level=Level.REQUIRED,
    rows=("R-5.1-MTLS",), standalone=True, requires=H3_REQUIRES,
)
async def h3_alpn_other_than_h3_refused(ctx: VerifierContext) -> None:
    """Over QUIC, a client offering only ALPN h2 is refused: HTTP/3 is ALPN h3 (RFC 9114 §3.1)."""
    await judge_h3_alpn(ctx, _over_h3(ctx), "router", "an empty session-open", "the verifier")
