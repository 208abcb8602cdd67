"""Status reports (§6.1, §5.2, P1-RTR-1, P1-DRF-8): intervals shorter than ttl_ms, fields, accept_milli.

The harness is the drafter's router and receives its ``PUT instances/{id}/status``
reports; proposals carry a status member too (judged on every proposal,
ambient). ``accept_milli`` is "the EWMA of a/M" (P1-DRF-8): after every
verdict it moves towards 1000 * a/M of that verdict or stays, which the
harness checks over phases where every token is accepted and where none is.
"""

from __future__ import annotations

import base64
import functools
import itertools

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.drafter_context import DrafterContext
from sdcp_conformance.harness.roles.played_router import StatusInbox
from sdcp_conformance.protocol.problems import SDCP_MEDIA_TYPE
from sdcp_conformance.suites.drafter import CATALOGUE

INTERVAL = "Each instance reports status at intervals shorter than its ttl_ms."
RTR_1 = "In `PUT instances/{id}/status`, `{id}` is the base64url (no padding) of the instance's base URI."
ACCEPT = "`accept_milli` in status is the EWMA of a/M."
REPORTS = 4
FIRST_REPORT_S = 30.0
JITTER_S = 0.1
"""D-JUDGE-D8: an interval is measured between arrivals at the harness, so it may exceed the drafter's own by the
transport's jitter; up to 0.1 s over ttl_ms is forgiven."""
SPAN_FROM = 1
"""D-JUDGE-D15: the span of the reports from this one on is judged without slack: its mean gap < ttl_ms. Over n gaps
the arrival jitter cancels but for (delay of the last - delay of the first) / n, so an interval of ttl_ms itself, not
shorter, shows as a mean gap of at least ttl_ms, which no slack per gap tells from jitter. The first report may have
been stamped while the harness was busy with the case before (late, so the first gap reads short): it is left out."""


def _newer(inbox: StatusInbox, sequence: int) -> bool:
    return bool(inbox.since(sequence))


@CATALOGUE.case("DRF-6.1-STATUS-001", area="status", section="6.1, 5.2, P1-RTR-1", quote=f"{INTERVAL} ... {RTR_1}",
                level=Level.MUST, profile=("P1-RTR-1", "P1-ID-1"),
                rows=("R-6.1-STATUS-INTERVAL", "P1-RTR-1/DRAFTER"))
async def reports_in_time(ctx: DrafterContext) -> None:
    """Four consecutive status reports: each within ttl_ms of the last, the mean gap of the last three under ttl_ms,
    at instances/<b64url(URI)>/status."""
    inbox = ctx.env.inbox
    first = inbox.reports[-1] if inbox.reports else None
    if first is None:  # none yet: the drafter's first report starts the clock
        await inbox.wait_for(lambda: bool(inbox.reports), FIRST_REPORT_S)
        first = inbox.reports[-1] if inbox.reports else None
    ctx.require(first is not None, f"no status report in {FIRST_REPORT_S:g} s", row="R-6.1-STATUS-INTERVAL",
                expected="status reports", actual="none")
    assert first is not None
    reports = [first]
    while len(reports) <= REPORTS:
        last = reports[-1]
        ttl_s = (last.status.ttl_ms / 1000) if last.status is not None else 5.0
        # Waiting for the next report is bounded by the last one's ttl_ms: it is due before then (§6.1).
        due = max(0.0, last.at + ttl_s + JITTER_S - ctx.env.now())
        await inbox.wait_for(functools.partial(_newer, inbox, last.sequence), due)
        following = inbox.since(last.sequence)
        if not following:
            ctx.fail(f"no status report within ttl_ms ({ttl_s * 1000:.0f} ms) of the last one",
                     expected=[f"a report within {ttl_s * 1000:.0f} ms"], actual="none")
        reports.append(following[0])
    own_id = base64.urlsafe_b64encode(ctx.env.config.base_uri.encode()).rstrip(b"=").decode()
    for earlier, later in itertools.pairwise(reports):
        if earlier.status is None:
            continue
        gap = later.at - earlier.at
        ctx.check(gap < earlier.status.ttl_ms / 1000 + JITTER_S, f"{gap:.2f} s between status reports, ttl_ms "
                  f"{earlier.status.ttl_ms}", expected=f"< {earlier.status.ttl_ms} ms", actual=f"{gap * 1000:.0f} ms")
    timed = [(earlier.status.ttl_ms / 1000, later.at - earlier.at)
             for earlier, later in itertools.pairwise(reports[SPAN_FROM:]) if earlier.status is not None]
    if timed:
        allowed, span = (sum(column) for column in zip(*timed, strict=True))
        ctx.note("gaps between status reports (ms): " + ", ".join(f"{1000 * gap:.1f}" for _, gap in timed))
        ctx.check(span < allowed, f"{len(timed)} intervals between status reports took {span:.3f} s in all, their "
                  f"ttl_ms {allowed:.3f} s: the interval is not shorter than ttl_ms (judged over the span, where the "
                  "arrival jitter cancels: D-JUDGE-D15)",
                  expected="a mean gap < ttl_ms", actual=f"mean gap {1000 * span / len(timed):.1f} ms")
    for report in reports[1:]:
        ctx.check(report.status is not None, f"a status report is not a status message: {report.error}",
                  row="R-5.2-STATUS-MEMBER", actual=report.error)
        ctx.check(report.path.rstrip("/").endswith(f"/instances/{own_id}/status"), f"the report went to "
                  f"{report.path}", row="P1-RTR-1/DRAFTER", expected=f".../instances/{own_id}/status",
                  actual=report.path)
        ctx.check((report.content_type or "").split(";")[0].strip() == SDCP_MEDIA_TYPE,
                  f"the status report is labelled {report.content_type!r}", row="R-5.1-MEDIA-TYPE",
                  expected=SDCP_MEDIA_TYPE, actual=str(report.content_type))
        if report.status is not None:
            ctx.check(report.status.role == 1 and report.status.instance == ctx.env.config.base_uri,
                      f"the report names instance {report.status.instance!r}, role {report.status.role}",
                      row="R-5.2-STATUS-MEMBER", expected=f"{ctx.env.config.base_uri}, role 1",
                      actual=f"{report.status.instance}, role {report.status.role}")


@CATALOGUE.case("DRF-P1-DRF-8-ACCEPT-001", area="status", section="P1-DRF-8, 5.2", quote=ACCEPT, level=Level.PROFILE,
                rows=("P1-DRF-8/ACCEPT-MILLI",))
async def accept_milli_follows(ctx: DrafterContext) -> None:
    """Six verdicts accepting everything, six accepting nothing: accept_milli moves towards 1000 a/M each time."""
    session = await ctx.start(rule=1, m_init=4)
    seen: list[tuple[int | None, float]] = []  # (accept_milli of a proposal, a/M of the verdict that followed)
    for number in range(12):
        arrival = await ctx.take(session, f"round {number + 1}")
        accepted = arrival.m if number < 6 else 0
        ctx.answer(session, arrival, ctx.verdict(session, arrival, accepted=accepted))
        milli = arrival.proposal.status.accept_milli if arrival.proposal is not None else None
        seen.append((milli, accepted / arrival.m))
    last = await ctx.take(session, "round 13")
    values = [milli for milli, _ in seen] + [last.proposal.status.accept_milli if last.proposal else None]
    if all(value is None for value in values):
        ctx.note("no proposal carried accept_milli (it is optional)")
        return
    for index, (milli, ratio) in enumerate(seen):
        after = values[index + 1]
        if milli is None or after is None:
            continue
        target = 1000 * ratio
        ctx.check(abs(after - target) <= abs(milli - target) + 1, f"after a verdict with a/M = {ratio:.2f} "
                  f"accept_milli went from {milli} to {after}, away from {target:.0f}",
                  expected=f"towards {target:.0f}", actual=f"{milli} -> {after}")
    start, middle, end = values[0], values[6], values[-1]
    if None not in (start, middle, end):
        assert start is not None and middle is not None and end is not None
        ctx.check(middle > start or start >= 990, f"six verdicts accepting everything left accept_milli at {middle} "
                  f"(from {start})", expected="higher", actual=str(middle))
        ctx.check(end < middle or middle <= 10, f"six verdicts accepting nothing left accept_milli at {end} (from "
                  f"{middle})", expected="lower", actual=str(end))
