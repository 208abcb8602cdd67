"""The verdicts the played verifier sends: computed by the harness from the target mock model and §6.3–§6.5.

A verdict must be one a correct verifier could send for the proposal: ``a``
accepted tokens are the proposal's first ``a`` tokens, one additional token
follows, the emission is truncated after the first stop token and at
max_new (§6.3 Acceptance), ``committed`` and ``digest`` extend the committed
chain by the emitted tokens (§4.2), and ``m_cap`` lies in 1..m_max (§6.5.1).
Within that, the case chooses: how many tokens to accept, which token to
add, the action, m_cap, low and load — that is how the harness steers the
drafter. By default ``a`` and the additional token are rule 1's (greedy
decoding of the target model, exact for the bigram models); under rule 2 the
default accepts every token and adds the target's most probable next token,
an outcome rule 2 can produce whenever that token has p > 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.harness.roles.played_session import PlayedSession
from sdcp_conformance.oracle.greedy import greedy_continuation
from sdcp_conformance.protocol.chain import extend_digest
from sdcp_conformance.protocol.control import Action
from sdcp_conformance.protocol.messages import Proposal, Verdict

KNOWN_ACTIONS = frozenset(int(action) for action in Action)


@dataclass(frozen=True)
class VerdictPlan:
    """What the case wants the verdict to say; ``None`` members take the defaults above."""

    accepted: int | None = None
    bonus: int | None = None
    action: Action | int = Action.CONTINUE
    m_cap: int | None = None
    low: int = 0
    load: int = 0


def rule1_acceptance(target: str, context: Sequence[int], tokens: Sequence[int]) -> tuple[int, int]:
    """§6.4 rule 1 on the target model: (a, additional token)."""
    greedy = greedy_continuation(target, context, len(tokens) + 1)
    accepted = 0
    while accepted < len(tokens) and tokens[accepted] == greedy[accepted]:
        accepted += 1
    if accepted == len(tokens):
        return accepted, greedy[accepted]
    return accepted, greedy_continuation(target, [*context, *tokens[:accepted]], 1)[0]


def build_verdict(session: PlayedSession, proposal: Proposal, target: str, plan: VerdictPlan) -> Verdict:
    """The verdict for ``proposal`` (for the session's next round) under ``plan``."""
    tokens = list(proposal.tokens)
    context = session.context()
    if plan.accepted is None and session.rule == 1:
        accepted, bonus = rule1_acceptance(target, context, tokens)
    else:
        accepted = len(tokens) if plan.accepted is None else plan.accepted
        bonus = greedy_continuation(target, [*context, *tokens[:accepted]], 1)[0]
    if plan.bonus is not None:
        bonus = plan.bonus
    if not 0 <= accepted <= len(tokens):
        raise InvalidArgument(f"a verdict accepts 0..{len(tokens)} tokens, not {accepted}")
    raw = int(plan.action)
    wanted: Action | int = Action(raw) if raw in KNOWN_ACTIONS else raw  # an unknown action is sent as is
    emitted, action = truncate(session, [*tokens[:accepted], bonus], wanted)
    m_cap = session.m_max if plan.m_cap is None else plan.m_cap
    return Verdict(session=session.id, epoch=session.epoch, round=session.round + 1, accepted=accepted,
                   emitted=tuple(emitted), committed=len(session.output) + len(emitted),
                   digest=extend_digest(session.digest, emitted), action=action,  # type: ignore[arg-type]
                   m_cap=m_cap, low=plan.low, load=plan.load)


def truncate(session: PlayedSession, emitted: list[int], action: Action | int) -> tuple[list[int], Action | int]:
    """§6.3: "It truncates the emitted tokens after the first stop token and at max_new" (then finish)."""
    stops = set(session.contract.get("stop", ()))
    cut = next((index + 1 for index, token in enumerate(emitted) if token in stops), len(emitted))
    room = int(session.contract["max_new"]) - len(session.output)
    kept = emitted[: min(cut, room)]
    ended = cut < len(emitted) or len(kept) < len(emitted) or any(token in stops for token in kept) \
        or len(session.output) + len(kept) >= int(session.contract["max_new"])
    return kept, (Action.FINISH if ended else action)


__all__ = ["KNOWN_ACTIONS", "VerdictPlan", "build_verdict", "rule1_acceptance", "truncate"]
