"""Proposal fields against first principles (§5.2, §6.2, P1-ID-1, P1-MSG-1).

The played verifier checks every proposal against what the harness told the
drafter (ambient rows: round, base and base_digest, M, the members and the
status member); these cases put the drafter where those fields are easy to
get wrong: the first proposal of an assignment, an assignment in the middle
of a session, limits that change with every kind of verdict.
"""

from __future__ import annotations

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.drafter_context import DrafterContext
from sdcp_conformance.protocol.control import Action
from sdcp_conformance.suites.drafter import CATALOGUE
from sdcp_conformance.suites.drafter.conversation import hold, rounds

MEDIA = 'Message bodies use the media type "application/sdcp+cbor".'
NEW_DRAFTER = "The new drafter starts from the committed prefix in the assignment."
SLOW_VERDICT_S = 0.08
LIMIT = ("generates M tokens, with 1 <= M <= min(m_max, m_cap), where m_cap is the limit from the last verdict "
         "(m_init before the first).")


@CATALOGUE.case("DRF-6.2-PROPOSAL-001", area="proposal", section="P1-MSG-1, 5.1, 5.2, 6.2",
                quote=f"Senders use core deterministic encoding (RFC 8949 §4.2.1) for every message ... {MEDIA}",
                level=Level.PROFILE, profile=("P1-MSG-1", "P1-ID-1"), rows=("P1-MSG-1/DETERMINISTIC",))
async def first_proposal(ctx: DrafterContext) -> None:
    """The first proposal: epoch 1, round 1, base 0 and d[0], M <= m_init, its own URI, labelled and encoded."""
    session = await ctx.start(rule=1, m_init=3)
    await rounds(ctx, session, 3)


@CATALOGUE.case("DRF-6.9-NEW-DRAFTER-001", area="proposal", section="6.9, 6.2",
                quote=f"{NEW_DRAFTER} ... It then sends a proposal with base and base_digest equal to the committed "
                      "length and digest it last learned",
                level=Level.MUST, profile=("P1-RTR-3", "P1-MLC-2"), rows=("R-6.9-NEW-DRAFTER", "P1-MLC-2/TOKEN-LISTS"))
async def assigned_mid_session(ctx: DrafterContext) -> None:
    """Assigned at round 7 with 12 committed tokens (committed_tokens in the MLC): round 8, base 12, d[12]."""
    session = ctx.track(rule=1)
    context = list(session.prompt)
    for _ in range(7):  # the session's history before this drafter: other drafters' rounds
        emitted = ctx.target_greedy(context, 2 if len(session.output) < 10 else 1)
        session.advanced(session.round + 1, emitted[: 12 - len(session.output)])
        context = session.context()
    ctx.require(len(session.output) == 12 and session.round == 7, "harness error: the history is not 12 tokens",
                row="R-6.9-NEW-DRAFTER")
    await ctx.assign_ok(session)
    uri = ctx.assignment(session)["committed_tokens"]
    arrival, _ = await ctx.decide(session, "the first proposal after a mid-session assignment",
                                  row="R-6.9-NEW-DRAFTER")
    proposal = arrival.proposal
    assert proposal is not None
    ctx.check((proposal.round, proposal.base) == (8, 12), f"the first proposal is round {proposal.round} on base "
              f"{proposal.base}, not round 8 on the 12 committed tokens of the assignment",
              expected="round 8, base 12", actual=f"round {proposal.round}, base {proposal.base}")
    reads = ctx.env.cache_observer.of(uri, "GET")
    ctx.note(f"GET {uri}: {len(reads)} time(s)")


@CATALOGUE.case("DRF-6.2-LIMIT-001", area="proposal", section="6.2, 6.5.1, 6.5.2", quote=f"{LIMIT} ... reduce (1):: "
                "The verifier sets m_cap to max(1, floor(m_cap / 2)) and the drafter proceeds.",
                level=Level.MUST, profile=("P1-CTL-1",), rows=("R-6.5.2-REDUCE-PROCEEDS",))
async def limit_follows_every_verdict(ctx: DrafterContext) -> None:
    """M stays within m_init, then each verdict's m_cap (continue 6, 8, 2, 8; reduce 4, 2, 1; continue 1, 3).

    Every token is accepted and every verdict takes 80 ms, so a drafter following §6.2's rule wants as many
    tokens as the limit lets it propose, and a limit it got wrong shows. The continue with m_cap 2 is a verifier
    lowering the limit for its load (§6.5.1) without a reduce: a drafter that reads m_cap only from reduce
    verdicts proposes 8 after it (found by a planted bug in an independent drafter)."""
    session = await ctx.start(rule=1, contract=ctx.contract(m_max=8), m_init=3)
    ctx.env.pace.paused = True  # the verdicts are slow on purpose: not the drafter's pace
    try:
        for action, m_cap in ((Action.CONTINUE, 6), (Action.CONTINUE, 8), (Action.CONTINUE, 8),
                              (Action.CONTINUE, 8), (Action.CONTINUE, 2), (Action.CONTINUE, 8), (Action.CONTINUE, 8),
                              (Action.REDUCE, 4), (Action.REDUCE, 2), (Action.REDUCE, 1), (Action.CONTINUE, 1),
                              (Action.CONTINUE, 3)):
            arrival = await ctx.take(session, f"the proposal before a verdict ({action.name.lower()}, m_cap "
                                     f"{m_cap})")
            await hold(ctx, session, SLOW_VERDICT_S)
            ctx.answer(session, arrival, ctx.verdict(session, arrival, action=action, m_cap=m_cap,
                                                     accepted=arrival.m))
    finally:
        ctx.env.pace.paused = False
    await ctx.take(session, "the proposal after m_cap 3")


@CATALOGUE.case("DRF-6.2-LIMIT-002", area="proposal", section="6.2", quote=LIMIT, level=Level.MUST,
                profile=("P1-CTL-1", "P1-DRF-2"), rows=("R-6.2-M-BOUNDS",))
async def m_init_above_m_max(ctx: DrafterContext) -> None:
    """m_init 20 with m_max 3: the first proposal has M <= min(m_max, m_init) = 3."""
    session = await ctx.start(rule=1, contract=ctx.contract(m_max=3), m_init=20)
    await rounds(ctx, session, 2, m_cap=3)
