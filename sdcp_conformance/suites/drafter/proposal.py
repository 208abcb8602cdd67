"""Proposal fields against first principles (§5.2, §6.2, P1-ID-1, P1-MSG-1).

The played verifier checks every proposal against what the harness told the
drafter (ambient rows: round, base and base_digest, M, the members and the
status member); these cases put the drafter where those fields are easy to
get wrong: the first proposal of an assignment, an assignment in the middle
of a session, limits that change with every kind of verdict.
"""

from __future__ import annotations

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.contexts.drafter import FIRST_PROPOSAL_S, DrafterContext
from sdcp_conformance.harness.roles.played_session import PlayedSession
from sdcp_conformance.protocol.control import Action
from sdcp_conformance.suites.drafter import CATALOGUE
from sdcp_conformance.suites.drafter.conversation import hold, rounds
from sdcp_conformance.suites.drafter.variants import with_ctx_variant

MEDIA = 'Message bodies use the media type "application/sdcp+cbor".'
NEW_DRAFTER = "The new drafter starts from the committed prefix in the assignment."
SLOW_VERDICT_S = 0.08
LIMIT = ("generates M tokens, with 1 <= M <= min(m_max, m_cap), where m_cap is the limit from the last verdict "
         "(m_init before the first).")


def _history(ctx: DrafterContext) -> PlayedSession:
    """A session at round 7 with 12 committed tokens: other drafters' rounds, before this drafter's assignment."""
    session = ctx.track(rule=1)
    context = list(session.prompt)
    for _ in range(7):
        emitted = ctx.target_greedy(context, 2 if len(session.output) < 10 else 1)
        session.advanced(session.round + 1, emitted[: 12 - len(session.output)])
        context = session.context()
    ctx.require(len(session.output) == 12 and session.round == 7, "harness error: the history is not 12 tokens",
                row="R-6.9-NEW-DRAFTER")
    return session


@CATALOGUE.case("DRF-6.2-PROPOSAL-001", area="proposal", section="P1-MSG-1, 5.1, 5.2, 6.2",
                quote=f"Senders use core deterministic encoding (RFC 8949 §4.2.1) for every message ... {MEDIA}",
                level=Level.PROFILE, profile=("P1-MSG-1", "P1-ID-1"), rows=("P1-MSG-1/DETERMINISTIC",))
async def first_proposal(ctx: DrafterContext) -> None:
    """The first proposal: epoch 1, round 1, base 0 and d[0], M <= m_init, its own URI, labelled and encoded."""
    session = await ctx.start(rule=1, m_init=3)
    await rounds(ctx, session, 3)


@with_ctx_variant("DRF-6.9-NEW-DRAFTER-001", "DRF-6.9-NEW-DRAFTER-003", area="proposal", section="6.9, 6.2",
                  quote=f"{NEW_DRAFTER} ... It then sends a proposal with base and base_digest equal to the committed "
                        "length and digest it last learned",
                  level=Level.MUST, profile=("P1-RTR-3", "P1-MLC-2"),
                  rows=("R-6.9-NEW-DRAFTER", "P1-MLC-2/TOKEN-LISTS"), ctx_rows=("P1-DRF-4",))
async def assigned_mid_session(ctx: DrafterContext) -> None:
    """Assigned at round 7 with 12 committed tokens (committed_tokens in the MLC): round 8, base 12, d[12].

    With the context-dependent draft model it is seen to draft from the prompt and all 12 tokens (P1-DRF-4)."""
    session = _history(ctx)
    await ctx.assign_ok(session)
    uri = ctx.assignment(session)["committed_tokens"]
    arrival, _ = await ctx.decide(session, "the first proposal after a mid-session assignment",
                                  row="R-6.9-NEW-DRAFTER")
    proposal = arrival.proposal
    assert proposal is not None
    ctx.check((proposal.round, proposal.base) == (8, 12), f"the first proposal is round {proposal.round} on base "
              f"{proposal.base}, not round 8 on the 12 committed tokens of the assignment",
              expected="round 8, base 12", actual=f"round {proposal.round}, base {proposal.base}")
    reads = ctx.cache.of(uri, "GET")
    ctx.note(f"GET {uri}: {len(reads)} time(s)")


@CATALOGUE.case("DRF-6.9-NEW-DRAFTER-002", area="proposal", section="6.9, 4.2, 6.2",
                quote=f"{NEW_DRAFTER} ... Because d[n] depends on every committed token, a proposal built on a "
                      "different or outdated prefix is detected without comparing token lists.",
                level=Level.MUST, profile=("P1-RTR-3", "P1-DRF-4", "P1-DRF-6"),
                rows=("R-6.9-NEW-DRAFTER", "P1-DRF-4"))
async def committed_tokens_off_the_digest(ctx: DrafterContext) -> None:
    """The assignment's committed_tokens object does not give its digest (its last token altered) while the
    verifier's output holds the right tokens: the drafter refuses the assignment or drafts from the prefix the
    digest names, never from the object's (D-JUDGE-D16)."""
    session = _history(ctx)
    context = session.context()
    expected_next = ctx.draft_greedy(context, 1)
    forged = list(session.output)
    # Altered so that the draft model's next token differs too: a drafter that drafts from the object and copies
    # the assignment's digest into base_digest is then seen by its tokens (P1-DRF-4).
    forged[-1] = next(token for token in range(3, 128) if token != forged[-1]
                      and ctx.draft_greedy([*session.prompt, *forged[:-1], token], 1) != expected_next)
    uri = ctx.put_tokens(f"committed-off-digest-{session.id.hex()}", forged)
    digest = session.digest
    answer = await ctx.assign(session, committed_tokens=uri)
    if not answer.ok:
        ctx.note(f"the drafter refused the assignment, {answer.describe()}: allowed (D-JUDGE-D16)")
        await ctx.quiet(session, "R-6.9-NEW-DRAFTER", "refusing the assignment")
        return
    arrival, _ = await ctx.decide(session, "the first proposal after an assignment whose committed_tokens do not "
                                  "give its digest", row="R-6.9-NEW-DRAFTER")
    proposal = arrival.proposal
    assert proposal is not None
    ctx.check((proposal.base, proposal.base_digest) == (12, digest),
              f"the first proposal is on base {proposal.base} / {proposal.base_digest.hex()[:16]}…, not on the "
              "assignment's 12 tokens and digest: the drafter started from the committed_tokens object, whose tokens "
              "do not give that digest",
              expected=f"12 {digest.hex()}", actual=f"{proposal.base} {proposal.base_digest.hex()}")
    ctx.note(f"GET {uri}: {len(ctx.cache.of(uri, 'GET'))} time(s); output reads from "
             f"{[start for start, _ in session.output_reads]}")
    await ctx.decide(session, "the round after")


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
    ctx.pace.paused = True  # the verdicts are slow on purpose: not the drafter's pace
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
        ctx.pace.paused = False
    await ctx.take(session, "the proposal after m_cap 3")


STOPPED_WAIT_S = FIRST_PROPOSAL_S
"""D-JUDGE-D18: how long DRF-6.2-LIMIT-002 waits before it takes a drafter's silence after a verdict with m_cap above
m_max for stopping (which breaks nothing) — as long as a session's first proposal may take, not the drafter's
quiet window: a busy machine made a drafter that obeys that m_cap (an independent one, its bug planted) take
longer than the window, and its proposal with M above m_max went unseen (P1-JUDGE-5: time is not conformance).
A drafter that goes on proposing pays nothing for it; one that stops pays it once."""


@CATALOGUE.case("DRF-6.2-LIMIT-002", area="proposal", section="6.2", level=Level.MUST,
                profile=("P1-CTL-1", "P1-DRF-2"), rows=("R-6.2-M-BOUNDS",))
async def m_init_above_m_max(ctx: DrafterContext) -> None:
    """m_init 20 with m_max 3: the first proposal has M <= min(m_max, m_init) = 3. Then the played verifier sends
    verdicts whose m_cap (20) is above m_max, breaking §6.5.1's 1 <= m_cap <= m_max on purpose, every token
    accepted: a drafter that goes on keeps M <= min(m_max, m_cap) = 3 (every proposal is judged so as it arrives;
    found by a planted bug in an independent drafter, which clamped m_init to m_max but took each verdict's m_cap
    as it came). D-JUDGE-D18: a drafter that stops proposing after such a verdict (a faulty verifier's) breaks
    nothing; only an M above m_max does."""
    session = await ctx.start(rule=1, contract=ctx.contract(m_max=3), m_init=20)
    await rounds(ctx, session, 2, m_cap=3)
    for number in range(3):
        waited = max(STOPPED_WAIT_S, 5 * ctx.pace.quiet_window())
        arrival = await ctx.next_arrival(session, waited)
        if arrival is None:
            ctx.note(f"the drafter sent no proposal within {waited:g} s of {number} verdict(s) with m_cap 20 above "
                     "m_max 3")
            return
        ctx.require(arrival.proposal is not None, "the drafter sent something that is not a proposal",
                    row="R-5.2-PROPOSAL", actual=arrival.error)
        ctx.answer(session, arrival, ctx.verdict(session, arrival, m_cap=20, accepted=arrival.m))
