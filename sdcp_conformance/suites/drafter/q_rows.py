"""The draft rows of rule 2 in the MLC: written before the proposal, leased until the verdict, deleted after it.

§6.2: the drafter "writes the draft artifacts the verifier may need to the
MLC and holds leases on them until it receives the verdict of the round";
§5.2 fixes the object (M rows of V binary32 little-endian, each the
distribution its token was drawn from); P1-MLC-3 and P1-DRF-8 fix the lease
and the deletion. The harness plays the MLC, so it sees the PUT (and its
``SDCP-Lease``) before the proposal, holds the verdict back while it checks
that the object is still there, and watches for the DELETE after it.
"""

from __future__ import annotations

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.contexts.drafter import DrafterContext
from sdcp_conformance.harness.roles.played_session import Arrival, PlayedSession
from sdcp_conformance.suites.drafter import CATALOGUE
from sdcp_conformance.suites.drafter.conversation import hold

ARTIFACTS = ("It writes the draft artifacts the verifier may need to the MLC and holds leases on them until it "
             "receives the verdict of the round.")
Q_ROWS = ('The "q_rows" object holds, for each proposed position, the draft distribution from which the proposed '
          "token was sampled, as a row of V IEEE 754 binary32 values in little-endian order, where V is the "
          "vocabulary size; rows are concatenated in position order.")
HELD_S = 1.0
"""The verdict is held this long before the harness checks that the rows are still fetchable."""


def _still_there(ctx: DrafterContext, arrival: Arrival, when: str) -> None:
    uri = arrival.proposal.q_rows if arrival.proposal is not None else None
    if uri is None:
        return
    ctx.check(ctx.cache.stored(uri) is not None,
              f"{uri} is gone from the MLC {when}, before the verdict of its round arrived",
              row="R-6.2-ARTIFACTS", expected="q_rows fetchable until the verdict", actual="missing")


async def _deleted_after(ctx: DrafterContext, arrival: Arrival) -> None:
    uri = arrival.proposal.q_rows if arrival.proposal is not None else None
    if uri is None:
        return
    observer = ctx.cache
    deleted = await observer.wait_for(lambda: bool(observer.of(uri, "DELETE")), ctx.pace.quiet_window())
    ctx.check(deleted, f"{uri} was not deleted after the verdict of its round", row="P1-DRF-8/LEASE",
              expected="DELETE after the verdict", actual="no DELETE")


async def _leased_round(ctx: DrafterContext, session: PlayedSession, number: int, held_s: float) -> None:
    arrival = await ctx.take(session, f"rule-2 round {number}")
    await hold(ctx, session, held_s)
    _still_there(ctx, arrival, f"after the verdict was held {held_s:g} s")
    ctx.answer(session, arrival, ctx.verdict(session, arrival))
    await _deleted_after(ctx, arrival)


@CATALOGUE.case("DRF-6.2-ARTIFACTS-001", area="q-rows", section="6.2, 6.4, P1-MLC-3, P1-DRF-8",
                quote=f"{ARTIFACTS} ... The proposal MUST carry q_rows ... A drafter must keep its `q_rows` fetchable "
                      "until the verdict of the round arrives.",
                level=Level.MUST, profile=("P1-MLC-3", "P1-DRF-8"),
                rows=("R-6.2-ARTIFACTS", "R-6.4-CARRY-Q-ROWS", "R-5.2-Q-ROWS", "P1-MLC-3/LEASE", "P1-DRF-8/LEASE"))
async def leased_until_the_verdict(ctx: DrafterContext) -> None:
    """Each rule-2 proposal's rows are PUT (with SDCP-Lease) first, still there when the verdict comes (after a
    1 s wait in round 1), and deleted after it."""
    session = await ctx.start(rule=2)
    for number, held_s in ((1, HELD_S), (2, 0.0), (3, 0.0)):
        await _leased_round(ctx, session, number, held_s)


@CATALOGUE.case("DRF-5.2-Q-ROWS-001", area="q-rows", section="5.2, 6.4", quote=f"{Q_ROWS} ... The drafter MUST "
                "sample each proposed token from exactly the row it publishes.",
                level=Level.MUST, profile=("P1-MLC-2", "P1-HASH-2", "P1-DRF-3"),
                rows=("R-5.2-Q-ROWS", "R-6.4-CARRY-Q-ROWS", "R-5.2-EXACT-ROW"))
async def rows_are_distributions(ctx: DrafterContext) -> None:
    """Under top_k 5 (rows with zeros) every row is M x V binary32, sums to 1, and gives its token q > 0."""
    contract = ctx.contract(rule=2, sampling={"temperature_milli": 700, "top_k": 5}, m_max=8)
    session = await ctx.start(contract=contract, m_init=6)
    for number in range(6):
        await ctx.decide(session, f"rule-2 round {number + 1}")
