"""How every role's suite judges an instance's status reports: one reading of §6.1, §5.2 and P1-RTR-1 for a
drafter (role 1) and a verifier (role 2) alike.

§6.1: "Each instance reports status at intervals shorter than its ttl_ms." The harness plays the instance's
router and keeps every ``PUT instances/{id}/status`` it receives (:class:`~.played_router.PlayedRouter`), with its
arrival time, path, label and decoded body.
"""

from __future__ import annotations

import asyncio
import functools
import itertools

from sdcp_conformance.harness.judging import JudgedContext
from sdcp_conformance.harness.patience import LoopStall
from sdcp_conformance.harness.roles.played_router import PlayedRouter, StatusReport
from sdcp_conformance.harness.roles.status_reports import instance_id
from sdcp_conformance.judge.status_budget import STATUS_TIMED_TTL_MS, WAIT_BUDGET_S
from sdcp_conformance.protocol.problems import SDCP_MEDIA_TYPE
from sdcp_conformance.transport.types import media_type

INTERVAL = "Each instance reports status at intervals shorter than its ttl_ms."
RTR_1 = "In `PUT instances/{id}/status`, `{id}` is the base64url (no padding) of the instance's base URI."
INTERVAL_ROW = "R-6.1-STATUS-INTERVAL"
REPORTS = 4
"""Intervals judged: the first report and the four after it (fewer when ttl_ms is long, see ``WAIT_BUDGET_S``)."""
FIRST_REPORT_S = 30.0
"""How long the first report may take when none has arrived yet (the instance may have started just now)."""
JITTER_S = 0.1
"""D-JUDGE-D8: an interval is measured between arrivals at the harness, so it may exceed the instance's own by the
transport's jitter; up to 0.1 s over ttl_ms is forgiven."""
SPAN_FROM = 1
"""D-JUDGE-D15: the span of the reports from this one on is judged without slack: its mean gap < ttl_ms. Over n gaps
the arrival jitter cancels but for (delay of the last - delay of the first) / n, so an interval of ttl_ms itself, not
shorter, shows as a mean gap of at least ttl_ms, which no slack per gap tells from jitter. The first report may have
been stamped while the harness was busy with the case before (late, so the first gap reads short): it is left out."""
ROLES = {1: "drafter", 2: "verifier"}


def _newer(inbox: PlayedRouter, sequence: int) -> bool:
    return bool(inbox.since(sequence))


async def judge_status_reports(ctx: JudgedContext, inbox: PlayedRouter, *, base_uri: str, role: int,
                               message_row: str, path_row: str, stall: LoopStall | None = None) -> None:
    """Five consecutive status reports (fewer for a long ttl_ms): each within ttl_ms of the last, the mean gap of the
    last four under ttl_ms (``INTERVAL_ROW``); each a status message naming ``base_uri`` with ``role``
    (``message_row``), labelled application/sdcp+cbor (R-5.1-MEDIA-TYPE), at instances/<b64url(base_uri)>/status
    (``path_row``).

    ``stall``: the harness's own event-loop stalls (D-JUDGE-TIME-2). A report is stamped when the harness's loop
    gets to it; a gap during which that loop could not run is shortened by the stall, and the wait for a report
    due is moved on by it: a busy machine is not a late instance (P1-JUDGE-5)."""
    loop = asyncio.get_running_loop()
    first = inbox.reports[-1] if inbox.reports else None
    if first is None:  # none yet: the instance's first report starts the clock
        await inbox.wait_for(lambda: bool(inbox.reports), FIRST_REPORT_S)
        first = inbox.reports[-1] if inbox.reports else None
    ctx.require(first is not None, f"no status report in {FIRST_REPORT_S:g} s", row=INTERVAL_ROW,
                expected="status reports", actual="none")
    assert first is not None
    reports = [first]
    _judge_fields(ctx, reports, base_uri, role, message_row, path_row)
    if first.status is None:
        return  # judged on message_row; no ttl_ms to time the next report against
    first_ttl_s = first.status.ttl_ms / 1000
    intervals = min(REPORTS, int(WAIT_BUDGET_S // first_ttl_s)) if first_ttl_s > 0 else REPORTS
    if intervals < 2:
        if not ctx.findings:
            ctx.skip(f"ttl_ms {first_ttl_s * 1000:.0f}: two intervals would take longer than the case waits "
                     f"({WAIT_BUDGET_S:g} s); configure ttl_ms {STATUS_TIMED_TTL_MS} or less to have them timed "
                     "(D-JUDGE-STATUS-TTL)")
        return
    while len(reports) <= intervals:
        last = reports[-1]
        ttl_s = (last.status.ttl_ms / 1000) if last.status is not None else first_ttl_s
        # Waiting for the next report is bounded by the last one's ttl_ms: it is due before then (§6.1).
        due = max(0.0, last.at + ttl_s + JITTER_S - loop.time())
        await inbox.wait_for(functools.partial(_newer, inbox, last.sequence), due)
        while not inbox.since(last.sequence) and stall is not None and \
                (moved := last.at + ttl_s + JITTER_S + stall.since(last.at) - loop.time()) > 0:
            await inbox.wait_for(functools.partial(_newer, inbox, last.sequence), moved)
        following = inbox.since(last.sequence)
        if not following:
            ctx.fail(f"no status report within ttl_ms ({ttl_s * 1000:.0f} ms) of the last one", row=INTERVAL_ROW,
                     expected=[f"a report within {ttl_s * 1000:.0f} ms"], actual="none")
        reports.append(following[0])
    _judge_intervals(ctx, reports, stall)
    _judge_fields(ctx, reports[1:], base_uri, role, message_row, path_row)


def _judge_fields(ctx: JudgedContext, reports: list[StatusReport], base_uri: str, role: int, message_row: str,
                  path_row: str) -> None:
    own_id = instance_id(base_uri)
    for report in reports:
        ctx.check(report.status is not None, f"a status report is not a status message: {report.error}",
                  row=message_row, actual=report.error)
        ctx.check(report.path.rstrip("/").endswith(f"/instances/{own_id}/status"), f"the report went to "
                  f"{report.path}", row=path_row, expected=f".../instances/{own_id}/status", actual=report.path)
        ctx.check(media_type(report.content_type) == SDCP_MEDIA_TYPE,
                  f"the status report is labelled {report.content_type!r}", row="R-5.1-MEDIA-TYPE",
                  expected=SDCP_MEDIA_TYPE, actual=str(report.content_type))
        if report.status is not None:
            ctx.check(report.status.role == role, f"the report names role {report.status.role}", row=message_row,
                      expected=f"role {role} ({ROLES[role]})", actual=f"role {report.status.role}")
            # D-JUDGE-STATUS-INSTANCE: §5.2 types `instance` as a tstr and gives it no value; only the profile
            # makes it the base URI (P1-RTR-1's "{id} ... of the instance's base URI"), so a report naming
            # another instance is judged on the path row (PROFILE), as the {id} itself is.
            ctx.check(report.status.instance == base_uri, f"the report names instance {report.status.instance!r}",
                      row=path_row, expected=base_uri, actual=report.status.instance)


def _gap(earlier: StatusReport, later: StatusReport, stall: LoopStall | None) -> float:
    """The time between two reports' arrivals, less the harness's own stall in between (D-JUDGE-TIME-2)."""
    gap = later.at - earlier.at
    return gap - (stall.between(earlier.at, later.at) if stall is not None else 0.0)


def _judge_intervals(ctx: JudgedContext, reports: list[StatusReport], stall: LoopStall | None = None) -> None:
    for earlier, later in itertools.pairwise(reports):
        if earlier.status is None:
            continue
        gap = _gap(earlier, later, stall)
        ctx.check(gap < earlier.status.ttl_ms / 1000 + JITTER_S, f"{gap:.2f} s between status reports, ttl_ms "
                  f"{earlier.status.ttl_ms}", row=INTERVAL_ROW, expected=f"< {earlier.status.ttl_ms} ms",
                  actual=f"{gap * 1000:.0f} ms")
    timed = [(earlier.status.ttl_ms / 1000, _gap(earlier, later, stall))
             for earlier, later in itertools.pairwise(reports[SPAN_FROM:]) if earlier.status is not None]
    if timed:
        allowed, span = (sum(column) for column in zip(*timed, strict=True))
        ctx.note("gaps between status reports (ms): " + ", ".join(f"{1000 * gap:.1f}" for _, gap in timed))
        ctx.check(span < allowed, f"{len(timed)} intervals between status reports took {span:.3f} s in all, their "
                  f"ttl_ms {allowed:.3f} s: the interval is not shorter than ttl_ms (judged over the span, where the "
                  "arrival jitter cancels: D-JUDGE-D15)", row=INTERVAL_ROW,
                  expected="a mean gap < ttl_ms", actual=f"mean gap {1000 * span / len(timed):.1f} ms")


__all__ = ["FIRST_REPORT_S", "INTERVAL", "INTERVAL_ROW", "RTR_1", "STATUS_TIMED_TTL_MS", "judge_status_reports"]
