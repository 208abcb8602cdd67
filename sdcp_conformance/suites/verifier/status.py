"""Status reports (§6.1, §5.2, P1-RTR-1): a verifier is an instance too, and reports with role 2.

§6.1: "Each instance reports status at intervals shorter than its ttl_ms"; §5.2's
status message names the role, "1 drafter, 2 verifier". The harness is the
verifier's router (it receives the verifier's events there) and so receives its
``PUT instances/{id}/status`` reports; they are judged as a drafter's are
(:mod:`sdcp_conformance.suites.status_judging`).
"""

from __future__ import annotations

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.contexts.verifier import VerifierContext
from sdcp_conformance.suites.status_judging import INTERVAL, INTERVAL_ROW, RTR_1, judge_status_reports
from sdcp_conformance.suites.verifier import CATALOGUE

ROLE = "status = { instance: tstr, role: 1 / 2, ; 1 drafter, 2 verifier"


@CATALOGUE.case("VER-6.1-STATUS-001", area="status", section="6.1, 5.2, P1-RTR-1",
                quote=f"{INTERVAL} ... {ROLE} ... {RTR_1}", level=Level.MUST, profile=("P1-RTR-1",),
                rows=(INTERVAL_ROW, "R-5.2-STATUS-REPORT", "P1-RTR-1/VERIFIER"), listens=("router",), timeout_s=90.0)
async def reports_in_time(ctx: VerifierContext) -> None:
    """Five consecutive status reports at the harness's router: each within ttl_ms of the last, the mean gap of the
    last four under ttl_ms, each a status message naming the verifier's base URI with role 2, at
    instances/<b64url(URI)>/status."""
    await judge_status_reports(ctx, ctx.router, base_uri=ctx.target.base_uri, role=2,
                               message_row="R-5.2-STATUS-REPORT", path_row="P1-RTR-1/VERIFIER",
                               stall=ctx.patience.stall)
