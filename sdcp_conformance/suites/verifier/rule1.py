"""Rule 1 (greedy) exactness, §6.4: the output is greedy decoding of the target, whatever the drafter proposes.

Expectations come from the oracle: the bigram closed form (exact) or, for
``ctx``, the manifest's greedy prompts, whose continuations keep a margin
that survives bfloat16 scoring.
"""

from __future__ import annotations

import asyncio

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.contexts.verifier import TrackedSession, VerifierContext
from sdcp_conformance.models.registry import load_manifest
from sdcp_conformance.oracle.greedy import argmax_smallest, greedy_continuation, next_logits
from sdcp_conformance.protocol.messages import Verdict
from sdcp_conformance.suites.verifier import CATALOGUE
from sdcp_conformance.suites.verifier.conversation import started

ACCEPT_QUOTE = ("x[i] is accepted if it equals argmax p[i], where ties are broken in favor of the smallest token "
                "identifier. Evaluation stops at the first position that is not accepted. The additional token is "
                "argmax p[a+1].")
IDENTITY_QUOTE = ("The output is identical to greedy decoding of the target model as computed by the verifier's "
                  "scoring passes, whatever the drafter proposes.")


def _wrong(expected: int) -> int:
    """A token that is not ``expected`` (never a special token)."""
    return 3 if expected != 3 else 4


def _require_round(ctx: VerifierContext, verdict: Verdict, accepted: int, emitted: list[int]) -> None:
    ctx.check(verdict.accepted == accepted and list(verdict.emitted) == emitted,
              f"round {verdict.round}: rule 1 gives a = {accepted} and emitted {emitted}",
              expected=f"a = {accepted}, emitted {emitted}",
              actual=f"a = {verdict.accepted}, emitted {list(verdict.emitted)}")


def _require_greedy_output(ctx: VerifierContext, session: TrackedSession) -> None:
    expected = greedy_continuation(session.model, session.prompt, len(session.output))
    ctx.check(session.output == expected, "the committed output is not the target's greedy decoding",
              expected=str(expected), actual=str(session.output))


async def _round_with_wrong_at(ctx: VerifierContext, position: int, m: int) -> None:
    """Propose m tokens, correct up to ``position`` (0-based) and wrong there: a = position."""
    session = await started(ctx)
    greedy = ctx.greedy(session, m + 1)
    tokens = list(greedy[:m])
    if position < m:
        tokens[position] = _wrong(greedy[position])
        for later in range(position + 1, m):  # garbage after the first wrong token
            tokens[later] = ctx.rng.randrange(3, 128)
    accepted = min(position, m)
    verdict = await ctx.propose_ok(session, tokens)
    _require_round(ctx, verdict, accepted, greedy[: accepted + 1])


@CATALOGUE.case("VER-6.4-RULE1-001", area="rule-1", section="6.4", quote=ACCEPT_QUOTE, level=Level.MUST,
                rows=("R-6.4-RULE1",))
async def prefix_then_garbage(ctx: VerifierContext) -> None:
    """Two correct tokens then garbage: a = 2 and the additional token is argmax p[3]."""
    await _round_with_wrong_at(ctx, 2, 4)


@CATALOGUE.case("VER-6.4-RULE1-002", area="rule-1", section="6.4", quote=ACCEPT_QUOTE, level=Level.MUST,
                rows=("R-6.4-RULE1",))
async def all_correct(ctx: VerifierContext) -> None:
    """All M tokens correct: a = M and the bonus is argmax p[M+1]."""
    await _round_with_wrong_at(ctx, 4, 4)


@CATALOGUE.case("VER-6.4-RULE1-003", area="rule-1", section="6.4", quote=ACCEPT_QUOTE, level=Level.MUST,
                rows=("R-6.4-RULE1",))
async def first_wrong(ctx: VerifierContext) -> None:
    """The first token wrong: a = 0 and the only emitted token is argmax p[1]."""
    await _round_with_wrong_at(ctx, 0, 3)


def _tie_after(token: int) -> list[int]:
    row = next_logits("bigram", [token])
    return [int(t) for t in (row == row.max()).nonzero()[0]]


def _tie_context() -> int:
    """A token whose bigram row has an exact tie at the top (a ``tie_top2`` row)."""
    return next(t for t in range(3, 128) if len(_tie_after(t)) >= 2)


@CATALOGUE.case("VER-6.4-RULE1-004", area="rule-1", section="6.4", quote=ACCEPT_QUOTE, level=Level.MUST,
                rows=("R-6.4-RULE1",))
async def tie_larger_rejected(ctx: VerifierContext) -> None:
    """At an exact tie the larger id is not argmax: proposing it gives a = 0 and the smaller id."""
    last = _tie_context()
    session = await started(ctx, prompt=(5, 9, last))
    tied = _tie_after(last)
    verdict = await ctx.propose_ok(session, [tied[-1]])
    _require_round(ctx, verdict, 0, [tied[0]])


@CATALOGUE.case("VER-6.4-RULE1-005", area="rule-1", section="6.4", quote=ACCEPT_QUOTE, level=Level.MUST,
                rows=("R-6.4-RULE1",))
async def tie_smaller_accepted(ctx: VerifierContext) -> None:
    """At an exact tie the smaller id is argmax: proposing it is accepted."""
    last = _tie_context()
    session = await started(ctx, prompt=(5, 9, last))
    tied = _tie_after(last)
    greedy_next = argmax_smallest(next_logits("bigram", [tied[0]]))
    verdict = await ctx.propose_ok(session, [tied[0]])
    _require_round(ctx, verdict, 1, [tied[0], greedy_next])


@CATALOGUE.case("VER-6.4-RULE1-006", area="rule-1", section="6.4", quote=ACCEPT_QUOTE, level=Level.MUST,
                rows=("R-6.4-RULE1",))
async def tie_at_bonus(ctx: VerifierContext) -> None:
    """A tie at p[M+1]: the bonus token is the smaller of the tied ids."""
    lead = next(t for t in range(3, 128) if len(_tie_after(argmax_smallest(next_logits("bigram", [t])))) >= 2)
    session = await started(ctx, prompt=(7, lead))
    proposed = argmax_smallest(next_logits("bigram", [lead]))
    verdict = await ctx.propose_ok(session, [proposed])
    _require_round(ctx, verdict, 1, [proposed, _tie_after(proposed)[0]])


@CATALOGUE.case("VER-6.4-RULE1-007", area="rule-1", section="6.4", quote=IDENTITY_QUOTE, level=Level.MUST,
                rows=("R-6.4-RULE1",))
async def garbage_drafter(ctx: VerifierContext) -> None:
    """A drafter proposing random tokens for twelve rounds still yields exactly greedy output."""
    session = await started(ctx, max_new=200)
    limit = 4
    for _ in range(12):
        greedy = ctx.greedy(session, limit)
        keep = ctx.rng.randrange(0, limit + 1)
        tokens = [*greedy[:keep], *(ctx.rng.randrange(3, 128) for _ in range(ctx.rng.randrange(1, limit + 1)))]
        verdict = await ctx.propose_ok(session, tokens[:limit])
        limit = max(1, min(verdict.m_cap, 4))
    _require_greedy_output(ctx, session)


def _ctx_prompt(ctx: VerifierContext) -> tuple[tuple[int, ...], tuple[int, ...]]:
    prompts = load_manifest().greedy_prompts().prompts
    chosen = prompts[ctx.rng.randrange(len(prompts))]
    return chosen.tokens, chosen.greedy


@CATALOGUE.case(
    "VER-6.4-RULE1-008", area="rule-1", section="6.4", quote=IDENTITY_QUOTE, level=Level.MUST, rows=("R-6.4-RULE1",),
    requires=("model:ctx",),
    black_box_note="Runs every ctx prompt of the manifest, whose greedy continuations keep a bf16-safe margin, so "
                   "an IUT scoring in reduced precision must still match. A verifier that keeps the KV entries of "
                   "rejected tokens scores later positions after a context the output does not contain; whether "
                   "that changes an argmax depends on the prompt, so all of them run (one session each, "
                   "concurrently) rather than one chosen by the seed.",
)
async def ctx_rollback(ctx: VerifierContext) -> None:
    """ctx model: a rejection in mid-proposal, then more rounds, still match greedy decoding (KV rolled back)."""
    prompts = load_manifest().greedy_prompts().prompts
    async with asyncio.TaskGroup() as group:
        for chosen in prompts:
            group.create_task(_rollback_rounds(ctx, chosen.tokens, chosen.greedy))


async def _rollback_rounds(ctx: VerifierContext, prompt: tuple[int, ...], greedy: tuple[int, ...]) -> None:
    session = await started(ctx, "ctx", prompt=prompt, max_new=64)
    wrong = [_wrong(greedy[1]), _wrong(greedy[2]) + 7, 90]
    verdict = await ctx.propose_ok(session, [greedy[0], *wrong])
    _require_round(ctx, verdict, 1, list(greedy[:2]))
    for _ in range(3):
        n = len(session.output)
        verdict = await ctx.propose_ok(session, list(greedy[n: n + 3]))
        _require_round(ctx, verdict, 3, list(greedy[n: n + 4]))
    n = len(session.output)
    verdict = await ctx.propose_ok(session, [_wrong(greedy[n])])
    _require_round(ctx, verdict, 0, [greedy[n]])
    n = len(session.output)
    verdict = await ctx.propose_ok(session, list(greedy[n: n + 3]))
    _require_round(ctx, verdict, 3, list(greedy[n: n + 4]))


@CATALOGUE.case(
    "VER-6.4-RULE1-009", area="rule-1", section="6.4", quote=IDENTITY_QUOTE, level=Level.MUST, rows=("R-6.4-RULE1",),
    requires=("model:ctx",),
    black_box_note="Expected tokens are the manifest's greedy continuation (bf16-safe margins).",
)
async def ctx_garbage_drafter(ctx: VerifierContext) -> None:
    """ctx model: random proposals with random correct prefixes for many rounds give the greedy output."""
    prompt, greedy = _ctx_prompt(ctx)
    session = await started(ctx, "ctx", prompt=prompt, max_new=64)
    while len(session.output) < 24:
        n = len(session.output)
        keep = ctx.rng.randrange(0, 4)
        tokens = [*greedy[n: n + keep], ctx.rng.randrange(3, 128)][:4]
        await ctx.propose_ok(session, tokens)
    ctx.check(session.output == list(greedy[: len(session.output)]),
              "the committed output is not the target's greedy decoding",
              expected=str(list(greedy[: len(session.output)])), actual=str(session.output))


@CATALOGUE.case(
    "VER-6.4-RULE1-010", area="rule-1", section="6.4", quote=IDENTITY_QUOTE, level=Level.MUST, rows=("R-6.4-RULE1",),
    profile=("P1-SAMP-1",),
)
async def rule1_ignores_sampling(ctx: VerifierContext) -> None:
    """Rule 1 with temperature 1.5, top-k 3 and a seed: argmax is unchanged, so the output is still greedy."""
    session = await started(ctx, sampling={"temperature_milli": 1500, "top_k": 3, "seed": 7})
    for _ in range(4):
        greedy = ctx.greedy(session, 4)
        await ctx.propose_ok(session, [*greedy[:2], _wrong(greedy[2])])
    _require_greedy_output(ctx, session)
