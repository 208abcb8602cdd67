"""The one reading of §6.1's status reports shared by the drafter's and the verifier's suites: what it makes of a
report that is wrong whatever the timing, of none at all, and of a ttl_ms too long to time (D-JUDGE-STATUS-TTL).

The timed path (intervals against ttl_ms) is exercised against real instances: the reference verifier and
drafter pass it, the mutants ``status-too-rare`` (both roles) and the planted ``status-every-two-ttl`` fail it.
"""

from __future__ import annotations

import asyncio
import base64

import pytest

from sdcp_conformance.harness.case import CaseSkipped, CaseStopped, Catalogue, Level
from sdcp_conformance.harness.judging import JudgedContext
from sdcp_conformance.harness.patience import LoopStall
from sdcp_conformance.harness.roles.played_router import PlayedRouter, StatusReport
from sdcp_conformance.judge import Verdict
from sdcp_conformance.protocol.codec import encode
from sdcp_conformance.protocol.messages import Status
from sdcp_conformance.suites import status_judging
from sdcp_conformance.suites.status_judging import judge_status_reports
from sdcp_conformance.transport.types import Request

URI = "https://verifier.example/sdcp/"
CATALOGUE = Catalogue(role="verifier")


@CATALOGUE.case("T-STATUS-1", area="status", section="6.1", quote="reports status", level=Level.MUST,
                rows=("R-6.1-STATUS-INTERVAL", "R-5.2-STATUS-REPORT", "P1-RTR-1/VERIFIER"))
async def declared(ctx: JudgedContext) -> None:
    """A stand-in case: only its declaration is used."""


def _report(*, role: int = 2, ttl_ms: int = 60_000, instance: str = URI, path_id: str | None = None,
            content_type: str = "application/sdcp+cbor") -> Request:
    body = encode({"instance": instance, "role": role, "load": 10, "queue": 0, "ttl_ms": ttl_ms})
    path_id = path_id if path_id is not None else base64.urlsafe_b64encode(URI.encode()).rstrip(b"=").decode()
    return Request("PUT", f"/router/instances/{path_id}/status", "", (("content-type", content_type),), body, URI)


async def _judge(*requests: Request) -> JudgedContext:
    inbox = PlayedRouter()
    for request in requests:
        assert (await inbox(request)).status in (204, 400)
    ctx = JudgedContext(CATALOGUE.cases["T-STATUS-1"], 1, "main")
    await judge_status_reports(ctx, inbox, base_uri=URI, role=2, message_row="R-5.2-STATUS-REPORT",
                               path_row="P1-RTR-1/VERIFIER")
    return ctx


def test_a_well_formed_report_with_a_long_ttl_is_skipped_naming_the_ttl_that_would_be_timed() -> None:
    with pytest.raises(CaseSkipped, match=r"ttl_ms 60000.*20000 or less"):
        asyncio.run(_judge(_report()))


@pytest.mark.parametrize(("request_", "row", "severity"), [
    (_report(role=1), "R-5.2-STATUS-REPORT", Verdict.FAILED),
    (_report(instance="https://other.example/"), "P1-RTR-1/VERIFIER", Verdict.NON_STRICT),
    (_report(path_id=URI.encode().hex()), "P1-RTR-1/VERIFIER", Verdict.NON_STRICT),
    (_report(content_type="application/cbor"), "R-5.1-MEDIA-TYPE", Verdict.FAILED),
], ids=["drafter-role", "other-instance", "hex-path-id", "cbor-label"])
def test_a_wrong_report_is_judged_on_its_row_even_when_its_ttl_is_too_long_to_time(
        request_: Request, row: str, severity: Verdict) -> None:
    ctx = asyncio.run(_judge(request_))
    assert [(finding.row, finding.severity) for finding in ctx.findings] == [(row, severity)]


def test_a_body_that_is_no_status_message_is_judged_on_the_message_row() -> None:
    malformed = Request("PUT", f"/router/instances/{base64.urlsafe_b64encode(URI.encode()).rstrip(b'=').decode()}"
                        "/status", "", (("content-type", "application/sdcp+cbor"),),
                        encode({"instance": URI, "role": 2, "load": 101, "queue": 0, "ttl_ms": 60_000}), URI)
    ctx = asyncio.run(_judge(malformed))
    assert [(finding.row, finding.severity) for finding in ctx.findings] == [("R-5.2-STATUS-REPORT", Verdict.FAILED)]
    assert "load" in ctx.findings[0].message


def test_no_report_at_all_fails_the_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(status_judging, "FIRST_REPORT_S", 0.05)
    ctx = JudgedContext(CATALOGUE.cases["T-STATUS-1"], 1, "main")
    with pytest.raises(CaseStopped):
        asyncio.run(judge_status_reports(ctx, PlayedRouter(), base_uri=URI, role=2,
                                         message_row="R-5.2-STATUS-REPORT", path_row="P1-RTR-1/VERIFIER"))
    assert [(finding.row, finding.severity) for finding in ctx.findings] == [
        ("R-6.1-STATUS-INTERVAL", Verdict.FAILED)]


class _Stalled(LoopStall):
    """The harness's loop could not run for ``seconds`` between ``start`` and ``end`` (and at no other time)."""

    def __init__(self, start: float, end: float, seconds: float) -> None:
        super().__init__()
        self.window, self.seconds = (start, end), seconds

    def between(self, start: float, end: float) -> float:
        return self.seconds if start <= self.window[0] and self.window[1] <= end else 0.0


def _reports(arrivals: list[float], ttl_ms: int = 1000) -> list[StatusReport]:
    status = Status(instance=URI, role=2, load=0, queue=0, ttl_ms=ttl_ms)
    return [StatusReport(number, at, "/router/instances/x/status", URI, "application/sdcp+cbor", status)
            for number, at in enumerate(arrivals)]


def test_a_gap_is_shortened_by_the_harness_stall_within_it_and_only_by_that() -> None:
    """D-JUDGE-TIME-2: reports every 0.9 s of a ttl_ms of 1 s, one stamped 0.5 s late because the harness's loop
    could not run: within ttl_ms once the stall is credited; without the stall, or with a stall elsewhere, the
    same arrivals deviate from §6.1."""
    arrivals = [0.0, 0.9, 1.8, 3.2, 3.6, 4.5]  # the fourth report was stamped 0.5 s after it came (2.7 + 0.5)

    def judged(stall: LoopStall | None) -> list[str]:
        ctx = JudgedContext(CATALOGUE.cases["T-STATUS-1"], 1, "main")
        status_judging._judge_intervals(ctx, _reports(arrivals), stall)
        return [finding.row for finding in ctx.findings if finding.severity is not Verdict.PASSED]

    assert judged(_Stalled(1.8, 3.2, 0.5)) == []
    assert judged(None) == ["R-6.1-STATUS-INTERVAL"]
    assert judged(_Stalled(3.6, 4.5, 0.5)) == ["R-6.1-STATUS-INTERVAL"]
