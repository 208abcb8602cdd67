"""After the verdict the drafter discards its draft beyond the accepted positions (§6.3), and continues (§6.5.2).

Under rule 1 the drafter's next tokens are determined: the draft model's
greedy continuation of the committed prefix (P1-DRF-4), which the harness
computes from the model itself (:mod:`sdcp_conformance.oracle.greedy`). The
harness, as verifier, chooses the additional token so that a drafter that
kept draft state would propose different tokens, whatever it drafted: §6.3's
"discard its draft state for proposed positions beyond the accepted ones" is
then visible in the very next proposal. With the bigram draft model that
shows a drafter continuing its own rejected tokens; one that keeps the
rejected positions in its context and appends the additional token after
them drafts what a correct one drafts there (the last token decides), so
each case runs again with the context-dependent ``ctx-draft-near``
(:mod:`sdcp_conformance.oracle.drafter_kept`, :mod:`.variants`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.contexts.drafter import DrafterContext
from sdcp_conformance.harness.roles.played_session import Arrival, PlayedSession
from sdcp_conformance.oracle import drafter_kept
from sdcp_conformance.suites.drafter.conversation import hold, tokens_of
from sdcp_conformance.suites.drafter.variants import with_ctx_variant

DISCARD = ("After the verdict, the drafter MUST discard its draft state for proposed positions beyond the accepted "
           "ones and MAY release its leases.")
MAX_UNTOLD_ROUNDS = 6
"""Rounds answered in full, when no additional token after a proposal could tell kept draft state from the committed
prefix (the context-dependent model after some prefixes), before a case gives up on telling."""


def telling_bonus(ctx: DrafterContext, session: PlayedSession, arrival: Arrival, accepted: int) -> int | None:
    """An additional token after ``accepted`` of ``arrival``'s tokens that tells kept draft state from the committed
    prefix, whatever the drafter drafted and however it breaks ties (:func:`~.drafter_kept.telling_bonus`)."""
    base = arrival.proposal.base if arrival.proposal is not None else len(session.output)
    return drafter_kept.telling_bonus(ctx.draft_model, session.context(base), tokens_of(arrival), accepted)


async def partly_rejected(ctx: DrafterContext, session: PlayedSession, arrival: Arrival,
                          accepting: Callable[[int], Sequence[int]], *,
                          hold_s: float = 0.0) -> tuple[Arrival, int, Arrival]:
    """Answer ``arrival`` accepting the first count of ``accepting(M)`` for which a telling additional token exists
    (held ``hold_s`` first); when none exists, accept every token and try the next proposal. Returns the proposal so
    answered, the tokens accepted, and the proposal that followed the verdict."""
    for _ in range(MAX_UNTOLD_ROUNDS + 1):
        if hold_s:
            await hold(ctx, session, hold_s)
        for accepted in accepting(arrival.m):
            bonus = telling_bonus(ctx, session, arrival, accepted)
            if bonus is not None:
                ctx.answer(session, arrival, ctx.verdict(session, arrival, accepted=accepted, bonus=bonus))
                return arrival, accepted, await ctx.take(session, "the proposal after the verdict")
        ctx.note(f"after {arrival.describe()} no additional token tells kept draft state from the committed prefix "
                 f"({ctx.draft_model}): every token accepted, the next proposal tried")
        ctx.answer(session, arrival, ctx.verdict(session, arrival, accepted=arrival.m))
        arrival = await ctx.take(session, "the proposal after a verdict accepting every token")
    ctx.skip(f"in {MAX_UNTOLD_ROUNDS + 1} rounds no additional token could tell kept draft state from the committed "
             f"prefix with {ctx.draft_model}")


def judge_drafted_from_committed(ctx: DrafterContext, session: PlayedSession, previous: Arrival, accepted: int,
                                 following: Arrival, what: str) -> None:
    """The proposal after a verdict on ``previous`` accepting ``accepted`` tokens continues the committed prefix
    greedily (rule 1).

    Tokens that are greedy only under another tie-break than P1-DRF-4's smallest id were still drafted from the
    committed prefix: that is P1-DRF-4's deviation (its cases judge it), not kept draft state; with a model
    without a closed form, tokens within the numeric tolerance of the greedy ones are the greedy ones
    (D-JUDGE-GREEDY-TOLERANCE). Kept draft state (§6.3's MUST) is blamed only on its own evidence,
    D-JUDGE-KEPT-STATE: the next proposal's first token is a greedy continuation of a kept context (the drafter's
    own tokens up to a rejected position, or, with a context-dependent model, those followed by the additional
    token: :func:`~.drafter_kept.kept_contexts`) and not of the committed prefix (:func:`telling_bonus` makes those
    apart). A proposal that continues neither was drafted from some other prefix (the prompt alone, say): under
    rule 1 only P1-DRF-4 asks for the greedy tokens of the committed prefix, so that is its deviation, not §6.3's.
    """
    committed = session.context()
    got, expected = tokens_of(following), ctx.draft_greedy(committed, following.m)
    if got == expected:
        return
    if ctx.draft_greedy_any_tie(committed, got):
        if ctx.context_dependent:
            ctx.note(f"{what}: the next proposal {got} is within the numeric tolerance of the greedy tokens "
                     f"{expected} (D-JUDGE-GREEDY-TOLERANCE)")
            return
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
    base = previous.proposal.base if previous.proposal is not None else 0
    rejected = tokens_of(previous)[accepted:]
    tops = ctx.draft_tops(committed)
    continued = [kept for kept in drafter_kept.kept_contexts(ctx.draft_model, session.context(base),
                                                             tokens_of(previous), accepted, committed[-1])
                 if got and got[0] not in tops and got[0] in ctx.draft_tops(kept.context)]
    if not continued:
        ctx.deviate("P1-DRF-4", f"{what}: the next proposal is no greedy continuation of the committed prefix, nor "
                    f"of any context keeping the rejected tokens {rejected}: it was drafted from another prefix (no "
                    "sign of kept draft state, D-JUDGE-KEPT-STATE)", expected=[str(expected)], actual=str(got))
        return
    ctx.deviate("R-6.3-DISCARD", f"{what}: the next proposal is not drafted from the committed prefix: its first "
                f"token {got[0]} continues a context with {continued[0].what}: draft state beyond the accepted "
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


def _counts(wanted: int) -> Callable[[int], list[int]]:
    """The accepted counts to try for a proposal of M tokens: none, if ``wanted`` is 0; else ``wanted`` (at most
    M - 1), then the other partial counts (a context-dependent model may tell kept state after another one)."""

    def counts(m: int) -> list[int]:
        if not wanted or m == 1:
            return [0]
        first = min(wanted, m - 1)
        return [first, *(count for count in range(1, m) if count != first)]

    return counts


async def _discard_after(ctx: DrafterContext, session: PlayedSession, accepted_each: tuple[int, ...]) -> None:
    """Each proposal in turn is answered accepting ``accepted`` of its tokens; the next must follow the emission."""
    arrival = await ctx.take(session, "the proposal to be partly rejected")
    for wanted in accepted_each:
        answered, accepted, following = await partly_rejected(ctx, session, arrival, _counts(wanted))
        judge_drafted_from_committed(ctx, session, answered, accepted, following,
                                     f"after a verdict accepting {accepted} of {answered.m} tokens")
        arrival = following


@with_ctx_variant("DRF-6.3-DISCARD-001", "DRF-6.3-DISCARD-003", area="discard", section="6.3",
                  level=Level.MUST, profile=("P1-DRF-4",), rows=("R-6.3-DISCARD", "P1-DRF-4"))
async def nothing_accepted(ctx: DrafterContext) -> None:
    """A verdict accepting 0 tokens with another additional token: the next proposal follows that token."""
    session = await ctx.start(rule=1, m_init=4)
    await _discard_after(ctx, session, (0, 0))


@with_ctx_variant("DRF-6.3-DISCARD-002", "DRF-6.3-DISCARD-004", area="discard", section="6.3",
                  level=Level.MUST, profile=("P1-DRF-4",), rows=("R-6.3-DISCARD", "P1-DRF-4"))
async def partly_accepted(ctx: DrafterContext) -> None:
    """Verdicts accepting some tokens: the next proposal follows the verifier's token, not the drafter's."""
    session = await ctx.start(rule=1, m_init=4)
    await _discard_after(ctx, session, (3, 1, 2))
