"""After the verdict the drafter discards its draft beyond the accepted positions (§6.3), and continues (§6.5.2).

Under rule 1 the drafter's next tokens are determined: the draft model's
greedy continuation of the committed prefix (P1-DRF-4), which the harness
computes from the closed form. The harness, as verifier, chooses the
additional token so that a drafter that kept its own rejected token would
propose different tokens, whatever it drafted: §6.3's "discard its draft
state for proposed positions beyond the accepted ones" is then visible in
the very next proposal.
"""

from __future__ import annotations

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.drafter_context import DrafterContext
from sdcp_conformance.harness.roles.played_session import Arrival, PlayedSession
from sdcp_conformance.suites.drafter import CATALOGUE
from sdcp_conformance.suites.drafter.conversation import tokens_of

DISCARD = ("After the verdict, the drafter MUST discard its draft state for proposed positions beyond the accepted "
           "ones and MAY release its leases.")


def telling_bonus(ctx: DrafterContext, arrival: Arrival, accepted: int) -> int:
    """A token other than the drafter's own beyond position a after which no greedy next token (under any
    tie-break) is one after any of theirs (the bigram draft model continues from the last token alone), so kept
    draft state shows whatever was kept, and however the drafter breaks ties."""
    kept = tokens_of(arrival)[accepted:] or tokens_of(arrival)[-1:]
    return next(token for token in range(3, 128) if token not in kept
                and all(not ctx.draft_tops([token]) & ctx.draft_tops([own]) for own in kept))


def judge_drafted_from_committed(ctx: DrafterContext, session: PlayedSession, previous: Arrival, accepted: int,
                                 following: Arrival, what: str) -> None:
    """The proposal after a verdict on ``previous`` accepting ``accepted`` tokens continues the committed prefix
    greedily (rule 1).

    Tokens that are greedy only under another tie-break than P1-DRF-4's smallest id were still drafted from the
    committed prefix: that is P1-DRF-4's deviation (its cases judge it), not kept draft state. Kept draft state
    (§6.3's MUST) is blamed only on its own evidence, D-JUDGE-KEPT-STATE: the next proposal's first token is a
    greedy continuation of one of the rejected tokens (:func:`telling_bonus` makes that impossible for a draft
    from the committed prefix). A proposal that continues neither was drafted from some other prefix (the prompt
    alone, say): under rule 1 only P1-DRF-4 asks for the greedy tokens of the committed prefix, so that is its
    deviation, not §6.3's.
    """
    got, expected = tokens_of(following), ctx.draft_greedy(session.context(), following.m)
    if got == expected:
        return
    if ctx.draft_greedy_any_tie(session.context(), got):
        ctx.deviate("P1-DRF-4", f"{what}: the next proposal breaks the draft model's ties otherwise than by the "
                    "smallest token id (it is drafted from the committed prefix)", expected=[str(expected)],
                    actual=str(got))
        return
    if not _drafts_greedily(ctx, session):
        ctx.deviate("P1-DRF-4", f"{what}: the next proposal is no greedy continuation of the committed prefix, but "
                    "neither was the session's first proposal, made before any verdict: the drafter does not propose "
                    "its greedy tokens under rule 1, so whether it kept draft state cannot be told",
                    expected=[str(expected)], actual=str(got))
        return
    rejected = tokens_of(previous)[accepted:]
    continued = [own for own in rejected if got and got[0] in ctx.draft_tops([own])]
    if not continued:
        ctx.deviate("P1-DRF-4", f"{what}: the next proposal is no greedy continuation of the committed prefix, nor "
                    f"of any rejected token {rejected}: it was drafted from another prefix (no sign of kept draft "
                    "state, D-JUDGE-KEPT-STATE)", expected=[str(expected)], actual=str(got))
        return
    ctx.deviate("R-6.3-DISCARD", f"{what}: the next proposal is not drafted from the committed prefix: its first "
                f"token {got[0]} continues the rejected token {continued[0]}: draft state beyond the accepted "
                "positions was kept", expected=[str(expected)], actual=str(got))


def _drafts_greedily(ctx: DrafterContext, session: PlayedSession) -> bool:
    """Whether the session's first proposal, drafted before any verdict could leave state behind, was the greedy
    continuation (under any tie-break) of the prefix it extended: only then does a later proposal that is no
    greedy continuation show kept draft state rather than a drafter that never drafts greedily."""
    first = next((arrival for arrival in session.arrivals if arrival.proposal is not None), None)
    if first is None or first.proposal is None:
        return True
    base = first.proposal.base
    return base <= len(session.output) and ctx.draft_greedy_any_tie(session.context(base), tokens_of(first))


async def _discard_after(ctx: DrafterContext, session: PlayedSession, accepted_each: tuple[int, ...]) -> None:
    """Each proposal in turn is answered accepting ``accepted`` of its tokens; the next must follow the emission."""
    arrival = await ctx.take(session, "the proposal to be partly rejected")
    for wanted in accepted_each:
        accepted = min(wanted, arrival.m - 1) if arrival.m > 1 else 0
        ctx.answer(session, arrival, ctx.verdict(session, arrival, accepted=accepted,
                                                 bonus=telling_bonus(ctx, arrival, accepted)))
        following = await ctx.take(session, "the proposal after the verdict")
        judge_drafted_from_committed(ctx, session, arrival, accepted, following,
                                     f"after a verdict accepting {accepted} of {arrival.m} tokens")
        arrival = following


@CATALOGUE.case("DRF-6.3-DISCARD-001", area="discard", section="6.3", quote=DISCARD, level=Level.MUST,
                profile=("P1-DRF-4",), rows=("R-6.3-DISCARD", "P1-DRF-4"))
async def nothing_accepted(ctx: DrafterContext) -> None:
    """A verdict accepting 0 tokens with another additional token: the next proposal follows that token."""
    session = await ctx.start(rule=1, m_init=4)
    await _discard_after(ctx, session, (0, 0))


@CATALOGUE.case("DRF-6.3-DISCARD-002", area="discard", section="6.3", quote=DISCARD, level=Level.MUST,
                profile=("P1-DRF-4",), rows=("R-6.3-DISCARD", "P1-DRF-4"))
async def partly_accepted(ctx: DrafterContext) -> None:
    """Verdicts accepting some tokens: the next proposal follows the verifier's token, not the drafter's."""
    session = await ctx.start(rule=1, m_init=4)
    await _discard_after(ctx, session, (3, 1, 2))
