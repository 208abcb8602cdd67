"""The sanity conversation (runs first and last): a session opened at the front, served and read to its end."""

from __future__ import annotations

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.contexts.router import RouterContext
from sdcp_conformance.harness.roles.played_verifier import FINISHED
from sdcp_conformance.harness.roles.router_history import StatusSent
from sdcp_conformance.suites.router import router_case

OPEN = ("The router selects a verifier and sends session-open with epoch 1 and a commit_log reference in the MLC. "
        "... It first informs the verifier with PUT sessions/{id}/drafter, and then sends the assignment")


@router_case(
    "RTR-SANITY-001", area="sanity", section="6.1, 6.7, P1-FRONT-1, P1-FRONT-2", quote=OPEN, level=Level.MUST,
    sanity=True, profile=("P1-FRONT-1", "P1-FRONT-2", "P1-RTR-1"),
    rows=("R-6.1-SESSION-OPEN", "R-6.1-ASSIGN-ORDER", "R-4.1-CONTRACT-UNCHANGED", "P1-FRONT-1/OPEN",
          "P1-FRONT-2/OUTPUT", "R-6.7-FRONT-END", "P1-RTR-1/ROUTER"),
)
async def sanity(ctx: RouterContext) -> None:
    """A session opens at a verifier, gets a drafter, and its committed output reaches the front's client."""
    mark = ctx.history.mark()
    session = await ctx.open_ok()
    first = ctx.commit(session, 2)
    second = ctx.commit(session, 3)
    tokens, _ = await ctx.read_front(session, count=5)
    ctx.check(tokens == first + second, "the front did not deliver the committed tokens", row="R-6.7-FRONT-END",
              expected=str(first + second), actual=str(tokens))
    ctx.serving(session).end(session.id, FINISHED)
    await ctx.serving(session).send_event(session.id, FINISHED)
    _, last = await ctx.read_front(session, final=True, start=len(tokens))
    ctx.check(last is not None and last.final, "the front's output did not end with final: true after the "
              "verifier finished the session", row="P1-FRONT-2/OUTPUT", expected="final: true, finish: 4",
              actual=str(last.to_obj() if last else None))
    refused = [seen for seen in ctx.history.of(StatusSent, since=mark)
               if seen.status is None or not 200 <= seen.status < 300]
    ctx.check(not refused, f"{len(refused)} status report(s) at instances/{{id}}/status were not accepted",
              row="P1-RTR-1/ROUTER", expected="204", actual=str([(s.instance, s.status) for s in refused[:3]]))
