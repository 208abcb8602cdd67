"""Conversation pieces the drafter cases share (no cases here)."""

from __future__ import annotations

from typing import Any

from sdcp_conformance.harness.drafter_context import DrafterContext
from sdcp_conformance.harness.roles.played_session import Arrival, PlayedSession
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
    loop_time = ctx.env.now
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


__all__ = ["hold", "rounds", "tokens_of"]
