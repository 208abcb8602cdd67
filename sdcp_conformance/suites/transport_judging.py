"""How every role's suite judges an HTTP/1.1 probe: one reading of §5.1 and P1-TLS-1 for verifier, drafter and
router alike."""

from __future__ import annotations

from collections.abc import Awaitable

from sdcp_conformance.harness.iut import Answer
from sdcp_conformance.harness.judging import JudgedContext
from sdcp_conformance.harness.probes import ProbeResult

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


async def require_served(ctx: JudgedContext, control: Awaitable[Answer], what: str, who: str) -> None:
    """D-JUDGE-5, the control of a case that passes on a refusal (a handshake without a certificate, at TLS 1.2,
    over HTTP/1.1): ``control``, ``what`` a client with a valid certificate sends over the harness's HTTP/2 client,
    must get an HTTP answer (any status) first. A server that refuses or drops every client passed those probes
    without having shown anything; it fails §5.1's sentence itself, and the case says so with the control's stage
    (R-5.1-MTLS, as a hang in place of a refusal already is: P1-JUDGE-3)."""
    answer = await control
    if answer.status is None:
        ctx.fail(f"{what} with a valid client certificate got no HTTP/2 answer from {who} either, "
                 f"{answer.describe()}: HTTP/2 over TLS 1.3 with mutual certificate authentication is REQUIRED, and "
                 "the refusals this case probes show nothing while every client is refused",
                 row="R-5.1-MTLS", expected=["an HTTP/2 answer over TLS 1.3 (any status)"], actual=answer.describe())
    ctx.note(f"control: {what} with a valid client certificate got {answer.describe()} ({answer.tls_version}, "
             f"ALPN {answer.alpn})")


__all__ = ["HTTP1_ACCEPTABLE", "judge_http1", "require_served"]
