"""Conversation pieces the drafter cases share (no cases here)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sdcp_conformance.harness.contexts.drafter import DrafterContext
from sdcp_conformance.harness.roles.played_session import Arrival, PlayedSession
from sdcp_conformance.oracle.drafter_kept import FIRST_WORD, telling_pair, telling_token
from sdcp_conformance.protocol.messages import Verdict


async def rounds(ctx: DrafterContext, session: PlayedSession, count: int, what: str = "round",
                 **plan: Any) -> list[tuple[Arrival, Verdict]]:
    """``count`` rounds, each answered with the verdict ``plan`` describes."""
    done = []
    for number in range(count):
        done.append(await ctx.decide(session, f"{what} {number + 1}", **plan))
    return done


async def hold(ctx: DrafterContext, session: PlayedSession, seconds: float) -> list[Arrival]:
    """Keep the outstanding proposal unanswered for ``seconds``; whatever else arrives meanwhile is returned
    (each judged on arrival: a different proposal is a second outstanding one, §6.2)."""
    loop_time = ctx.now
    deadline = loop_time() + seconds
    seen = []
    while (remaining := deadline - loop_time()) > 0:
        arrival = await ctx.next_arrival(session, remaining)
        if arrival is None:
            break
        seen.append(arrival)
    return seen


def tokens_of(arrival: Arrival) -> list[int]:
    return list(arrival.proposal.tokens) if arrival.proposal is not None else []


def advance(ctx: DrafterContext, session: PlayedSession, counts: Sequence[int], abandoned: Arrival) -> None:
    """Rounds committed without this drafter, ``counts`` tokens each: the target's greedy tokens, except that with a
    context-dependent draft model the very last is one after which a drafter whose context still holds the
    ``abandoned`` proposal (before the tokens committed since) drafts otherwise than from the committed prefix
    (:func:`~sdcp_conformance.oracle.drafter_kept.telling_token`), or where no last token tells, the last two
    (:func:`~sdcp_conformance.oracle.drafter_kept.telling_pair`; the drafter cannot tell the verifier's greedy
    tokens from others')."""
    base = abandoned.proposal.base if abandoned.proposal is not None else len(session.output)
    before, proposed = session.context(base), tokens_of(abandoned)
    for number, count in enumerate(counts):
        tokens = ctx.target_greedy(session.context(), count)
        if number == 0 and ctx.context_dependent and proposed and tokens[0] == proposed[0]:
            # The committed prefix must not begin with the stale proposal, or a context that keeps it differs from
            # the committed one only by a repeated token, which may tell nothing: whether it does would depend on
            # how many tokens the drafter chose to propose (a timing of its own), not on what it keeps.
            tokens[0] = next(token for token in (FIRST_WORD, FIRST_WORD + 1) if token != proposed[0])
        if number == len(counts) - 1 and ctx.context_dependent and proposed:
            kept = [*before, *proposed, *session.output[base:]]
            told = telling_token(ctx.draft_model, [*session.context(), *tokens[:-1]], [[*kept, *tokens[:-1]]])
            pair = None
            if told is None and count >= 2:  # no last token tells: the last two, the first of them chosen too
                pair = telling_pair(ctx.draft_model, [*session.context(), *tokens[:-2]], [[*kept, *tokens[:-2]]],
                                    exclude_first=proposed[:1] if number == 0 and count == 2 else ())
            if told is not None:
                tokens[-1] = told
            elif pair is not None:
                tokens[-2:] = pair
            else:
                ctx.note(f"no token committed after {session.context()} tells a context still holding "
                         f"{proposed} apart ({ctx.draft_model}): the target's greedy token is committed")
        session.advanced(session.round + 1, tokens)


__all__ = ["advance", "hold", "rounds", "tokens_of"]
