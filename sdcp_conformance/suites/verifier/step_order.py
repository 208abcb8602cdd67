"""The order of §4.1's sampling steps, seeded: rounds whose outcome every wrong order changes, whatever the seed.

§4.1: "p is the target model's next-token distribution after applying
temperature, top-k, and top-p in that order". Samplers often apply the
temperature last; under temperature 1/2 with top-k and top-p
(:data:`~sdcp_conformance.oracle.rule2_designs.STEP_ORDER`) each wrong order
keeps tokens that §4.1's p excludes after the contexts of
:data:`ORDER_CONTEXTS`. The harness, as drafter, publishes q on exactly the
tokens every wrong order keeps and §4.1's p excludes (the *gap*), and, as
router, picks the profile's seed for the session so that the round's HMAC
value r is below every ratio p'(x) / q(x) of a wrong order's p' on the gap:
whichever gap token is sampled, §4.1's p rejects it (p(x) = 0) and every wrong
order accepts it. The outcome tells the orders apart by the acceptance
decision itself, for every case seed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.contexts.verifier import TrackedSession, VerifierContext
from sdcp_conformance.oracle import rule2 as oracle
from sdcp_conformance.oracle.greedy import next_logits
from sdcp_conformance.oracle.rule2_designs import STEP_ORDER
from sdcp_conformance.oracle.sampling_orders import ORDER_WORDS, order_variants, support
from sdcp_conformance.protocol.messages import SessionState
from sdcp_conformance.suites.verifier import CATALOGUE
from sdcp_conformance.suites.verifier.seeded_rule2 import (
    ORDER_ROW,
    ORDERS_NOTE,
    RULE2_ROWS,
    Row,
    Rule2Judge,
    as_published,
    draft_q,
    draw_support,
    expected_rule2,
    order_expectations,
    publish,
    rule2_round,
    sample_proposal,
)

ORDER_CONTEXTS = (14, 22, 45, 53, 62, 77, 93, 117, 118, 126)
"""Last tokens after which, under :data:`STEP_ORDER`, every wrong order keeps a set of tokens other than §4.1's p
and than each other, with no top-p cut within the tolerance of its threshold and no top-k tie at the cut (found
offline; ``tests/suites/test_step_order.py`` re-verifies it from the model's logits)."""

TELLING_SESSIONS = 3
"""Sessions, each opened after its own context of :data:`ORDER_CONTEXTS`, with one telling round each."""

SEED_TRIES = 100_000
"""Seeds tried for a session before the case gives up (each succeeds with the gap's margin, about 0.05..0.13)."""

ORDER_QUOTE = ("p is the target model's next-token distribution after applying temperature, top-k, and top-p in "
               "that order")


@dataclass(frozen=True)
class TellingRow:
    """The draft row of a telling round after one context, and what makes it tell."""

    q: Row
    """Published values: on the gap only, in proportion to the least any wrong order gives each gap token."""
    gap: tuple[int, ...]
    """Tokens every wrong order keeps and §4.1's p excludes."""
    margin: float
    """The least ratio p'(x) / q(x) over the wrong orders' p' and the gap: an r below it accepts in every one."""
    orders: tuple[str, ...]


def telling_row(model: str, context: Sequence[int], sampling: Mapping[str, int]) -> TellingRow:
    """The gap row after ``context`` (the context must be one where every wrong order keeps more than p)."""
    logits = next_logits(model, context).tolist()
    variants = order_variants(logits, sampling)
    kept = support(oracle.distribution(logits, sampling, 2))
    gap = sorted(frozenset.intersection(*(support(row) for row in variants.values())) - kept) if variants else []
    if len(variants) != len(ORDER_WORDS) or not gap:
        raise AssertionError(f"harness error: after {list(context)[-1]} not every wrong order keeps a token that "
                             f"§4.1's p excludes (orders that differ: {sorted(variants)})")
    least = {token: min(row[token] for row in variants.values()) for token in gap}
    total = sum(least.values())
    q = as_published([least.get(token, 0.0) / total for token in range(len(logits))])
    margin = min(row[token] / q[token] for row in variants.values() for token in gap)
    return TellingRow(q, tuple(gap), margin, tuple(sorted(variants)))


def telling_seed(ctx: VerifierContext, session: bytes, round_number: int, margin: float) -> int:
    """A profile seed whose acceptance value for position 1 of ``round_number`` lies below ``margin`` (§6.4)."""
    for _ in range(SEED_TRIES):
        seed = ctx.rng.randrange(1, 2**63)
        if oracle.uniform(seed, session, round_number, 1, oracle.PURPOSE_ACCEPT) < margin:
            return seed
    raise AssertionError(f"harness error: no seed of {SEED_TRIES} puts r below {margin:.3g}")


async def _telling_session(ctx: VerifierContext, judge: Rule2Judge, last: int) -> None:
    """A session after ``last``: one telling round (decided by the acceptance test), then one ordinary round."""
    session = ctx.track("bigram", ctx.contract("bigram", rule=2, sampling=dict(STEP_ORDER), max_new=200),
                        (5, 9, last))
    row = telling_row(session.model, session.context, STEP_ORDER)
    sampling = {**STEP_ORDER, "seed": telling_seed(ctx, session.id, 1, row.margin)}
    session.contract["sampling"] = dict(sampling)  # chosen for this session id, before anything is sent
    await _open(ctx, session)
    proposal = sample_proposal(ctx, session, lambda context: row.q, 1)
    expected = expected_rule2(session, proposal, sampling)
    orders = order_expectations(session, proposal, sampling)
    telling = sorted(name for name, other in orders.items() if other.accepted != expected.accepted)
    if telling != sorted(ORDER_WORDS):
        raise AssertionError(f"harness error: round 1 after {last} tells only {telling} apart from §4.1's order")
    ctx.note(f"after token {last}: gap {list(row.gap)}, margin {row.margin:.3f}; proposing {proposal.tokens}: "
             f"§4.1's p accepts {expected.accepted}, every wrong order accepts 1")
    support_row = draw_support(session, proposal, expected.accepted, sampling)
    verdict = await ctx.propose_ok(session, proposal.tokens, q_rows=publish(ctx, session, proposal))
    judge.judge(verdict, proposal, expected, support_row, orders)
    await rule2_round(ctx, session, judge, draft_q("bigram-draft-near", sampling), 1, sampling, orders=True)


async def _open(ctx: VerifierContext, session: TrackedSession) -> None:
    state = ctx.expect_ok(await ctx.open(session), SessionState, what="POST sessions")
    ctx.check_state(session, state, "POST sessions")
    await ctx.assign_ok(session, m_init=1)


@CATALOGUE.case(
    "VER-6.4-RULE2-012", area="rule-2", section="4.1", quote=ORDER_QUOTE, level=Level.MUST,
    profile=("P1-SAMP-1", "P1-SAMP-2", "P1-SAMP-3", "P1-SAMP-4"), rows=(ORDER_ROW, *RULE2_ROWS),
    black_box_note="Temperature 1/2, top-k 16, top-p 0.75, seeded. In each of three sessions the first round "
                   "proposes a token §4.1's p excludes and every other order of the steps keeps, with a seed "
                   "whose HMAC value accepts it under each other order: a verifier that accepts it applies the "
                   "steps in another order (judged on §4.1's sentence when the outcome is exactly that order's); "
                   "a second round per session is judged the same way. " + ORDERS_NOTE,
)
async def step_order(ctx: VerifierContext) -> None:
    """Temperature, top-k and top-p in §4.1's order: rounds that every other order decides differently."""
    judge = Rule2Judge(ctx)
    for last in ctx.rng.sample(ORDER_CONTEXTS, TELLING_SESSIONS):
        await _telling_session(ctx, judge, last)
    judge.finish()


__all__ = ["ORDER_CONTEXTS", "SEED_TRIES", "TELLING_SESSIONS", "TellingRow", "step_order", "telling_row",
           "telling_seed"]
