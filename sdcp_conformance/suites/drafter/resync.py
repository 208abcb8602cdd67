"""Resynchronisation after 409 sdcp-stale-base (P1-DRF-6, §6.3, §4.2).

The harness moves the session on without the drafter (another drafter's or
a self-decoded round, as after a failover), refuses the drafter's stale
proposal with 409 ``sdcp-stale-base`` and the current state (P1-ERR-2: byte
members as unpadded base64url), and serves ``GET …/output``. The drafter must
read the tokens it lacks, check them against the state's digest, and propose
on the state's committed length and digest, for the state's round plus one.
When the output it reads does not reproduce the digest (the harness forges
it), it must not propose on that prefix; a state of 3, 4 or 5 stops it.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
from typing import Any

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.contexts.drafter import DrafterContext
from sdcp_conformance.harness.roles.played_session import PlayedSession
from sdcp_conformance.protocol.control import Action
from sdcp_conformance.protocol.problems import ProblemType
from sdcp_conformance.suites.drafter import CATALOGUE
from sdcp_conformance.suites.drafter.conversation import advance, tokens_of
from sdcp_conformance.suites.drafter.variants import with_ctx_variant

RESYNC = ("On `sdcp-stale-base` a drafter resynchronises from `state`, reading the committed tokens it lacks with "
          "`GET …/output` (any authenticated party may read output) and checking them against the digest")
STOP = "a `state` of 3, 4 or 5 makes it stop instead."
READ_WAIT_S = 5.0


async def _stale(ctx: DrafterContext, session: PlayedSession, *, state: int | None = None,
                 extra: dict[str, Any] | None = None, forge: bool = False) -> int:
    """Round 1 decided, then the session moves on by 3 rounds; the drafter's round-2 proposal is stale.

    ``forge``: GET output serves the new tokens altered, so they do not reproduce the state's digest."""
    await ctx.decide(session, "round 1")
    arrival = await ctx.take(session, "the proposal that will be stale")
    before = len(session.output)
    advance(ctx, session, (2, 2, 2), arrival)  # three rounds without this drafter, two tokens each
    if forge:
        forged = list(session.output)
        for index in range(before, len(forged)):
            forged[index] = (forged[index] + 1) % 128 or 3
        session.forged_output, session.forged_after = forged, before
    members: dict[str, Any] = {"session": session.id, "epoch": session.epoch, "round": session.round,
                               "committed": len(session.output), "digest": session.digest, **(extra or {})}
    if state is not None:
        members["state"] = state
    ctx.refuse(session, arrival, ProblemType.STALE_BASE, state=members)
    return before


@with_ctx_variant("DRF-P1-DRF-6-RESYNC-001", "DRF-P1-DRF-6-RESYNC-003", area="resync",
                  section="P1-DRF-6, 6.3, 6.7, P1-ERR-2, P1-MSG-3",
                  quote=f"{RESYNC} ... with `session` and `digest` as base64url strings without padding and the "
                        "other members as numbers. ... `{id}` in paths is base64url without padding of the 16-octet "
                        "session id",
                  level=Level.PROFILE, profile=("P1-ERR-2", "P1-OUT-1", "P1-MSG-3"),
                  rows=("P1-DRF-6/RESYNC", "P1-ERR-2/ENCODING", "P1-MSG-3/PATH-ID"))
async def resynchronises(ctx: DrafterContext) -> None:
    """After sdcp-stale-base with a state 6 tokens ahead, the drafter reads output and proposes on the new prefix.

    With the context-dependent draft model a context that still holds the stale proposal shows too."""
    session = await ctx.start(rule=1)
    before = await _stale(ctx, session)
    arrival = await ctx.take(session, "the proposal after the resynchronisation", row="P1-DRF-6/RESYNC")
    reads = [start for start, _ in session.output_reads]
    ctx.check(bool(reads) and min(reads) <= before, f"the drafter did not read the output from index {before} or "
              f"earlier (reads from {reads})", expected=f"GET output?from=n, n <= {before}", actual=str(reads))
    expected = ctx.draft_greedy(session.context(), arrival.m)
    ctx.check(ctx.drafted_from(session.context(), tokens_of(arrival)), "the proposal after resynchronising is not "
              "drafted from the new prefix", expected=str(expected), actual=str(tokens_of(arrival)))
    unpadded = base64.urlsafe_b64encode(session.id).rstrip(b"=").decode()
    ctx.check(all(path_id == unpadded for path_id in session.output_paths), f"GET output named the session "
              f"{session.output_paths}, not its unpadded base64url id", row="P1-MSG-3/PATH-ID", expected=unpadded,
              actual=str(session.output_paths))
    ctx.answer(session, arrival, ctx.verdict(session, arrival))
    await ctx.decide(session, "the round after")


@CATALOGUE.case("DRF-P1-DRF-6-RESYNC-002", area="resync", section="P1-DRF-6, 4.2",
                quote=f"{RESYNC} ... Because d[n] depends on every committed token, a proposal built on a different or "
                      "outdated prefix is detected without comparing token lists.",
                level=Level.PROFILE, profile=("P1-ERR-2",), rows=("P1-DRF-6/RESYNC",))
async def forged_output(ctx: DrafterContext) -> None:
    """The output read back does not reproduce the state's digest: no proposal is built on it."""
    session = await ctx.start(rule=1)
    before = await _stale(ctx, session, forge=True)
    with contextlib.suppress(TimeoutError):  # the drafter reads the output first (P1-DRF-6) ...
        await asyncio.wait_for(session.read.wait(), READ_WAIT_S)
    arrival = await ctx.next_arrival(session, ctx.pace.quiet_window())  # ... and then must not build on it
    if arrival is not None and arrival.proposal is not None and arrival.proposal.base <= before:
        ctx.note(f"the drafter proposed again on the prefix it had checked: {arrival.describe()}")
    reads = [start for start, _ in session.output_reads]
    ctx.note(f"output reads from {reads}")


def _stop_case(case_id: str, state: int) -> None:
    async def run(ctx: DrafterContext) -> None:
        session = await ctx.start(rule=1)
        await _stale(ctx, session, state=state)
        session.stop("P1-DRF-6/STOP", f"sdcp-stale-base with state {state}")
        await ctx.quiet(session, "P1-DRF-6/STOP", f"409 sdcp-stale-base with state {state}")

    run.__doc__ = f"sdcp-stale-base whose state is {state} ({Action(state).name.lower()}): the drafter stops."
    CATALOGUE.case(case_id, area="resync", section="P1-DRF-6, P1-STATE-1", level=Level.PROFILE,
                   profile=("P1-STATE-1",), rows=("P1-DRF-6/STOP",))(run)


_stop_case("DRF-P1-DRF-6-STOP-001", int(Action.SELF_DECODE))
_stop_case("DRF-P1-DRF-6-STOP-002", int(Action.FINISH))
_stop_case("DRF-P1-DRF-6-STOP-003", int(Action.FAIL))


@CATALOGUE.case("DRF-5.2-UNKNOWN-KEYS-003", area="resync", section="5.2, P1-DRF-6",
                quote=f"Unknown map keys MUST be ignored, except in the contract (Section 4.1). ... {RESYNC}",
                level=Level.MUST, profile=("P1-ERR-2",), rows=("R-5.2-UNKNOWN-KEYS", "P1-DRF-6/RESYNC"))
async def state_with_unknown_keys(ctx: DrafterContext) -> None:
    """A stale-base state carrying an unknown member (and state 0) is used like any other; a drafter that does not
    resynchronise after a plain stale-base either is judged on P1-DRF-6, not on the unknown member."""
    session = await ctx.start(rule=1)
    await _stale(ctx, session, state=0, extra={"x-vendor": "ignored"})
    wait_s = max(2.0, 5 * ctx.pace.quiet_window())
    arrival = await ctx.next_arrival(session, wait_s)
    if arrival is None:
        # The control: the same stale-base without the unknown member (D-JUDGE-D20).
        control = await ctx.start(rule=1)
        await _stale(ctx, control, state=0)
        if await ctx.next_arrival(control, wait_s) is None:
            ctx.deviate("P1-DRF-6/RESYNC", f"no proposal within {wait_s:g} s of a stale-base, with the unknown "
                        "member in its state or without it: the drafter does not resynchronise (so whether it "
                        "ignores unknown members there cannot be told)", expected=["a proposal"], actual="none")
            return
        ctx.fail(f"the proposal after the resynchronisation: none within {wait_s:g} s of a stale-base whose state "
                 "carries an unknown member, while the same stale-base without it was followed by one",
                 row="R-5.2-UNKNOWN-KEYS", expected=["a proposal"], actual="none")
    if arrival.proposal is None:
        ctx.fail("the drafter sent something that is not a proposal", row="R-5.2-PROPOSAL", actual=arrival.error)
    ctx.answer(session, arrival, ctx.verdict(session, arrival))
