"""The harness as a rule-2 drafter, and the judge of seeded rule-2 rounds; declares no case.

The harness samples every proposed token from exactly the row it publishes
(§5.2), computes p from the mock models through the oracle (closed form or
runtime), and predicts a seeded round's outcome with the plain-Python rule 2
of :mod:`sdcp_conformance.oracle.rule2` and the HMAC values of §6.4 — never
by asking reference code.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from sdcp_conformance.harness.contexts.verifier import TrackedSession, VerifierContext
from sdcp_conformance.oracle import rule2 as oracle
from sdcp_conformance.oracle.greedy import next_logits
from sdcp_conformance.oracle.sampling_orders import ORDER_WORDS, order_variants
from sdcp_conformance.protocol.messages import Verdict

Row = list[float]
QSource = Callable[[Sequence[int]], Row]
"""A draft distribution for the next token after a context (prompt + output + drafted tokens)."""


def p_row(model: str, context: Sequence[int], sampling: Mapping[str, int] | None) -> Row:
    """§4.1 target distribution p after ``context`` under a sampling profile (rule 2)."""
    return oracle.distribution(next_logits(model, context).tolist(), sampling, 2)


def as_published(row: Sequence[float]) -> Row:
    """The values a verifier reads back from a binary32 q row (§5.2)."""
    return [float(value) for value in np.asarray(row, dtype=np.float32)]


def target_q(model: str, sampling: Mapping[str, int] | None) -> QSource:
    """q = p: the drafter is the target itself."""
    return lambda context: p_row(model, context, sampling)


def draft_q(draft_model: str, sampling: Mapping[str, int] | None) -> QSource:
    """q from a mock draft model's closed form under the same profile."""
    return lambda context: p_row(draft_model, context, sampling)


def flat_q(context: Sequence[int]) -> Row:
    """A uniform draft over the vocabulary (a poor drafter)."""
    del context
    return [1.0 / 128] * 128


def avoiding_q(model: str, sampling: Mapping[str, int] | None) -> QSource:
    """Mass concentrated where p is smallest: proposals the target rarely wants."""
    def row(context: Sequence[int]) -> Row:
        p = p_row(model, context, sampling)
        order = sorted(range(len(p)), key=lambda token: (p[token], token))
        weights = [0.0] * len(p)
        for rank, token in enumerate(order[:8]):
            weights[token] = 8.0 - rank
        total = sum(weights)
        return [weight / total for weight in weights]
    return row


@dataclass(frozen=True)
class DraftedProposal:
    tokens: list[int]
    q: list[Row]
    """The rows as published (binary32 values)."""


def sample_proposal(ctx: VerifierContext, session: TrackedSession, source: QSource, m: int) -> DraftedProposal:
    """The harness as drafter: sample each x[i] from exactly the row it publishes (§5.2), with its own RNG."""
    tokens: list[int] = []
    rows: list[Row] = []
    for _ in range(m):
        row = as_published(source([*session.context, *tokens]))
        tokens.append(oracle.draw(row, ctx.rng.random()))
        rows.append(row)
    return DraftedProposal(tokens, rows)


def expected_rule2(session: TrackedSession, proposal: DraftedProposal, sampling: Mapping[str, int],
                   round_number: int | None = None, *,
                   purposes: tuple[int, int] = (oracle.PURPOSE_ACCEPT, oracle.PURPOSE_DRAW)
                   ) -> oracle.Rule2Expectation:
    """§6.4 rule 2 with the seeded HMAC values (P1-SAMP-3 for i), from first principles (``purposes``: see
    :func:`sdcp_conformance.oracle.rule2.rule2`)."""
    tokens = proposal.tokens
    p_rows = [p_row(session.model, [*session.context, *tokens[:i]], sampling) for i in range(len(tokens) + 1)]
    number = session.round + 1 if round_number is None else round_number
    return oracle.rule2(p_rows, proposal.q, tokens, int(sampling["seed"]), session.id, number, purposes=purposes)


Orders = Mapping[str, oracle.Rule2Expectation]
"""§6.4's seeded outcome of a round under each wrong order of §4.1's steps that changes a row of the round."""


def order_expectations(session: TrackedSession, proposal: DraftedProposal, sampling: Mapping[str, int],
                       round_number: int | None = None) -> dict[str, oracle.Rule2Expectation]:
    """The outcome p would give with §4.1's steps applied in another order, per order whose p differs on a row
    of the round (:mod:`sdcp_conformance.oracle.sampling_orders`): what explains a verifier's outcome that is not
    §4.1's."""
    tokens = proposal.tokens
    rows = [p_row(session.model, [*session.context, *tokens[:i]], sampling) for i in range(len(tokens) + 1)]
    variants = [order_variants(next_logits(session.model, [*session.context, *tokens[:i]]).tolist(), sampling)
                for i in range(len(tokens) + 1)]
    number = session.round + 1 if round_number is None else round_number
    names = [name for name in ORDER_WORDS if any(name in position for position in variants)]
    return {name: oracle.rule2([position.get(name, row) for position, row in zip(variants, rows, strict=True)],
                               proposal.q, tokens, int(sampling["seed"]), session.id, number)
            for name in names}


def publish(ctx: VerifierContext, session: TrackedSession, proposal: DraftedProposal, label: str = "") -> str:
    return ctx.publish_q(f"q-{session.id.hex()[:8]}-{session.round + 1}{label}", np.asarray(proposal.q))


RULE2_ROWS = ("R-6.4-HMAC", "R-6.4-RULE2", "P1-SAMP-2/DRAW")
"""What a seeded rule-2 round is judged on: the decisions (strict), the draw's support (strict), the draw (profile)."""

ORDER_ROW = "R-4.1-SAMPLING"
"""Where an outcome that p with §4.1's steps in another order explains is judged (a case passing ``orders`` to
:meth:`Rule2Judge.judge` declares it)."""
ORDERS_NOTE = ("An outcome that p with the profile's steps in another order gives exactly (temperature after "
               "top-p, say) is judged on §4.1's sentence (MUST); drawn tokens alone only when at least two rounds, "
               "or a round whose decisions it explained, agree with one such order.")


@dataclass
class Rule2Judge:
    """Judges seeded rule-2 rounds; the drawn-token deviations (profile-level) are gathered into one finding.

    ``accept_row`` names the sentence the acceptance decisions are judged on
    (the HMAC derivation of §6.4 by default; a policy case passes §6.6's).
    """

    ctx: VerifierContext
    accept_row: str = "R-6.4-HMAC"
    drawn_mismatches: list[str] = field(default_factory=list)
    drawn_orders: list[frozenset[str]] = field(default_factory=list)
    """Per drawn mismatch, the wrong orders of §4.1's steps whose p gives exactly the drawn token."""
    decided_orders: set[str] = field(default_factory=set)
    """The wrong orders that explained a round's acceptance decisions exactly (judged on §4.1's row)."""

    def judge(self, verdict: Verdict, proposal: DraftedProposal, expected: oracle.Rule2Expectation,
              support: Row, orders: Orders | None = None) -> None:
        """``orders``: the round's outcome under wrong orders of §4.1's steps (:func:`order_expectations`); an
        outcome one of them gives exactly, and §4.1's p does not, is judged on :data:`ORDER_ROW`."""
        ctx, tokens = self.ctx, proposal.tokens
        a = expected.accepted
        emitted = list(verdict.emitted)
        explaining = sorted(name for name, other in (orders or {}).items()
                            if other.accepted == verdict.accepted and other.emitted == emitted)
        if verdict.accepted != a and explaining:
            ctx.deviate(ORDER_ROW, f"round {verdict.round}: rule 2 accepted {verdict.accepted} tokens and emitted "
                        f"{emitted}; §4.1's p (temperature, then top-k, then top-p) accepts {a}. The outcome is "
                        f"exactly the one p gives with the steps in another order: {_orders(explaining)}",
                        expected=[f"accepted {a}, emitted {expected.emitted}"],
                        actual=f"accepted {verdict.accepted}, emitted {emitted}")
            self.decided_orders.update(explaining)
            return
        if not ctx.check(verdict.accepted == a,
                         f"round {verdict.round}: rule 2 accepted {verdict.accepted} tokens; the seeded HMAC "
                         f"values (§6.4, P1-SAMP-3) accept {a}", row=self.accept_row, expected=str(a),
                         actual=str(verdict.accepted)):
            return
        if not ctx.check(len(emitted) == a + 1 and emitted[:a] == tokens[:a],
                         f"round {verdict.round}: emitted {emitted} is not the {a} accepted tokens plus one",
                         row="R-6.4-RULE2", expected=f"{tokens[:a]} + [one drawn token]", actual=str(emitted)):
            return
        drawn = emitted[a]
        if support[drawn] <= 0.0 and explaining:
            ctx.deviate(ORDER_ROW, f"round {verdict.round}: the additional token {drawn} lies outside the support "
                        "of the distribution §4.1's p makes it be drawn from, and is exactly the token p gives "
                        f"with the steps in another order: {_orders(explaining)}", actual=str(emitted))
            return
        ctx.check(support[drawn] > 0.0,
                  f"round {verdict.round}: the additional token {drawn} lies outside the support of the "
                  "distribution it must be drawn from (residual max(0, p - q), or p[M+1])", row="R-6.4-RULE2")
        if drawn != expected.emitted[a]:
            self.drawn_mismatches.append(f"round {verdict.round}: drew {drawn}, P1-SAMP-2 gives "
                                         f"{expected.emitted[a]}")
            self.drawn_orders.append(frozenset(explaining))

    def finish(self) -> None:
        """File the drawn-token mismatches: on §4.1's row when one wrong order of its steps gives every one of
        them exactly and either there are at least :data:`ORDER_DRAWS` (one could be another inverse CDF's chance
        agreement) or that order already explained a round's acceptance decisions; on P1-SAMP-2 otherwise."""
        if not self.drawn_mismatches:
            return
        common = frozenset.intersection(*self.drawn_orders)
        if common and (len(self.drawn_mismatches) >= ORDER_DRAWS or common & self.decided_orders):
            self.ctx.deviate(ORDER_ROW, "the acceptance decisions match; every drawn token is the one P1-SAMP-2 "
                             "draws from p with §4.1's steps in another order, "
                             f"{_orders(sorted(common))}, not from §4.1's p: " + "; ".join(self.drawn_mismatches))
            return
        hint = ""
        if common:
            hint = (f" (p with §4.1's steps in another order, {_orders(sorted(common))}, gives these tokens too: too "
                    "few to tell it from another inverse CDF)")
        self.ctx.deviate("P1-SAMP-2/DRAW", "the acceptance decisions match; the drawn token does not follow "
                         "P1-SAMP-2's inverse CDF: " + "; ".join(self.drawn_mismatches) + hint)


ORDER_DRAWS = 2
"""How many drawn-token mismatches, all explained by one wrong order of §4.1's steps, put them on §4.1's row."""


def _orders(names: Sequence[str]) -> str:
    return " or ".join(f"{ORDER_WORDS[name]} ({name})" for name in names)


def draw_support(session: TrackedSession, proposal: DraftedProposal, accepted: int,
                 sampling: Mapping[str, int]) -> Row:
    """The (unnormalized) distribution the additional token is drawn from (§6.4 rule 2)."""
    tokens = proposal.tokens
    p = p_row(session.model, [*session.context, *tokens[:accepted]], sampling)
    if accepted == len(tokens):
        return p
    rest = [max(0.0, a - b) for a, b in zip(p, proposal.q[accepted], strict=True)]
    return rest if sum(rest) > 0 else p


async def rule2_round(ctx: VerifierContext, session: TrackedSession, judge: Rule2Judge, source: QSource, m: int,
                      sampling: Mapping[str, int], *, orders: bool = False) -> Verdict:
    """One seeded rule-2 round: draft, publish, propose, and judge against the oracle (``orders``: an outcome
    that §4.1's steps in another order explain is judged on :data:`ORDER_ROW`)."""
    proposal = sample_proposal(ctx, session, source, m)
    expected = expected_rule2(session, proposal, sampling)
    support = draw_support(session, proposal, expected.accepted, sampling)
    others = order_expectations(session, proposal, sampling) if orders else None
    verdict = await ctx.propose_ok(session, proposal.tokens, q_rows=publish(ctx, session, proposal))
    judge.judge(verdict, proposal, expected, support, others)
    return verdict


__all__ = [
    "ORDERS_NOTE",
    "ORDER_DRAWS",
    "ORDER_ROW",
    "RULE2_ROWS",
    "DraftedProposal",
    "Orders",
    "QSource",
    "Row",
    "Rule2Judge",
    "as_published",
    "avoiding_q",
    "draft_q",
    "draw_support",
    "expected_rule2",
    "flat_q",
    "order_expectations",
    "p_row",
    "publish",
    "rule2_round",
    "sample_proposal",
    "target_q",
]
