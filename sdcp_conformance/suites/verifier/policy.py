"""Sampling policy updates (§6.6, P1-POL-1): a new profile applies from from_round on, never earlier.

Observed through seeded rule 2: each round's outcome is predicted exactly
under the profile that round must use, with q rows chosen so that the old
and new profiles usually give different outcomes.
"""

from __future__ import annotations

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.contexts.verifier import TrackedSession, VerifierContext
from sdcp_conformance.protocol.messages import Output, SessionState
from sdcp_conformance.suites.verifier import CATALOGUE
from sdcp_conformance.suites.verifier.conversation import check_output, check_stale_state, started
from sdcp_conformance.suites.verifier.seeded_rule2 import (
    RULE2_ROWS,
    QSource,
    Rule2Judge,
    draft_q,
    draw_support,
    expected_rule2,
    flat_q,
    publish,
    rule2_round,
    sample_proposal,
)
from sdcp_conformance.suites.verifier.session import UNKNOWN_KEYS

APPLY_QUOTE = "The verifier applies the new profile to rounds numbered from_round and later"


async def _seeded(ctx: VerifierContext) -> tuple[TrackedSession, dict[str, int], int]:
    seed = ctx.rng.randrange(1, 2**63)
    sampling = {"temperature_milli": 1000, "seed": seed}
    session = await started(ctx, rule=2, sampling=dict(sampling), max_new=200)
    return session, sampling, seed


async def _policy_ok(ctx: VerifierContext, session: TrackedSession, from_round: int, sampling: dict[str, int]) -> None:
    state = ctx.expect_ok(await ctx.policy(session, from_round, sampling), SessionState, what="POST policy",
                          row="R-6.6-APPLY")
    ctx.check_state(session, state, "POST policy")


async def _distinguishing_round(ctx: VerifierContext, session: TrackedSession, judge: Rule2Judge,
                                right: dict[str, int], wrong: dict[str, int]) -> None:
    """One round judged under ``right``, with a proposal whose accepted count under ``wrong`` differs."""
    for _ in range(200):
        proposal = sample_proposal(ctx, session, draft_q("bigram-draft-near", right), 3)
        expected = expected_rule2(session, proposal, right)
        if expected.accepted != expected_rule2(session, proposal, wrong).accepted:
            break
    support = draw_support(session, proposal, expected.accepted, right)
    verdict = await ctx.propose_ok(session, proposal.tokens, q_rows=publish(ctx, session, proposal))
    judge.judge(verdict, proposal, expected, support)


@CATALOGUE.case("VER-6.6-POLICY-001", area="policy", section="6.6", level=Level.MUST,
                profile=("P1-POL-1", "P1-SAMP-4"), rows=("R-6.6-APPLY", *RULE2_ROWS))
async def applies_from_round(ctx: VerifierContext) -> None:
    """A policy for round n+2 (temperature 0) leaves round n+1 on the old profile and governs n+2 and later."""
    session, old, seed = await _seeded(ctx)
    judge = Rule2Judge(ctx, accept_row="R-6.6-APPLY")
    await rule2_round(ctx, session, judge, draft_q("bigram-draft-near", old), 3, old)
    new = {"temperature_milli": 0, "seed": seed}
    await _policy_ok(ctx, session, session.round + 2, new)
    await _distinguishing_round(ctx, session, judge, old, new)
    for _ in range(2):
        await rule2_round(ctx, session, judge, flat_q, 3, new)
    judge.finish()


@CATALOGUE.case(
    "VER-6.6-POLICY-002", area="policy", section="6.6", level=Level.PROFILE, profile=("P1-POL-1", "P1-ERR-2"),
    rows=("P1-POL-1/STALE", "P1-ERR-2/ENCODING"),
)
async def stale_from_round(ctx: VerifierContext) -> None:
    """from_round equal to the current round: 409 sdcp-stale-base carrying the current session-state."""
    session = await started(ctx)
    await ctx.propose_ok(session, ctx.greedy(session, 2))
    for from_round in (session.round, 0):
        answer = await ctx.policy(session, from_round, {"temperature_milli": 500})
        check_stale_state(ctx, answer, session, f"a policy with from_round {from_round}", row="P1-POL-1/STALE",
                          state_row="P1-POL-1/STALE")


@CATALOGUE.case("VER-6.6-POLICY-003", area="policy", section="6.6",
                level=Level.MUST, rows=("R-6.6-OUTPUT", "R-6.6-APPLY", *RULE2_ROWS))
async def output_unchanged(ctx: VerifierContext) -> None:
    """Output read before and after a policy (and a round under it) keeps every committed token."""
    session, _, seed = await _seeded(ctx)
    judge = Rule2Judge(ctx, accept_row="R-6.6-APPLY")
    old = {"temperature_milli": 1000, "seed": seed}
    for _ in range(2):
        await rule2_round(ctx, session, judge, draft_q("bigram-draft-near", old), 3, old)
    committed = len(session.output)
    new = {"temperature_milli": 0, "seed": seed}
    await _policy_ok(ctx, session, session.round + 1, new)
    after = ctx.expect_ok(await ctx.output(session, 0, party="drafter-2"), Output, what="GET output")
    check_output(ctx, session, after, 0, "output after the policy")
    await rule2_round(ctx, session, judge, flat_q, 2, new)
    later = ctx.expect_ok(await ctx.output(session, 0, party="drafter-2"), Output, what="GET output")
    ctx.check(list(later.tokens[:committed]) == session.output[:committed],
              "tokens committed before the policy changed")
    judge.finish()


@CATALOGUE.case(
    "VER-6.6-POLICY-004", area="policy", section="6.6", level=Level.PROFILE, profile=("P1-POL-1",),
    rows=("P1-POL-1/LATEST", "R-6.6-APPLY", *RULE2_ROWS),
    black_box_note="Only the unambiguous order is tested: the policy received later also has the later "
                   "from_round. Round n+1 has one applicable policy, so §6.6 alone fixes its outcome (strict). "
                   "From n+2 on both policies apply and only P1-POL-1 says the later one wins: an outcome that "
                   "follows the earlier policy there is NON-STRICT, an outcome that follows neither is FAILED "
                   "(§6.4 decides it under either profile).",
)
async def latest_policy_wins(ctx: VerifierContext) -> None:
    """Policies for n+1 (temperature 0) and n+2 (temperature 0.8, top-k 4): each round uses the latest applicable."""
    session, _, seed = await _seeded(ctx)
    first = {"temperature_milli": 0, "seed": seed}
    second = {"temperature_milli": 800, "top_k": 4, "seed": seed}
    await _policy_ok(ctx, session, session.round + 1, first)
    await _policy_ok(ctx, session, session.round + 2, second)
    judge = Rule2Judge(ctx, accept_row="R-6.6-APPLY")
    await rule2_round(ctx, session, judge, flat_q, 3, first)
    for source in (draft_q("bigram-draft-near", second), flat_q):
        await _round_under_either(ctx, session, judge, source, latest=second, earlier=first)
    judge.finish()


async def _round_under_either(ctx: VerifierContext, session: TrackedSession, judge: Rule2Judge, source: QSource, *,
                              latest: dict[str, int], earlier: dict[str, int]) -> None:
    """A round two policies apply to: the latest one's outcome passes, the earlier one's is P1-POL-1's deviation."""
    proposal = sample_proposal(ctx, session, source, 3)
    want, other = expected_rule2(session, proposal, latest), expected_rule2(session, proposal, earlier)
    support = draw_support(session, proposal, want.accepted, latest)
    verdict = await ctx.propose_ok(session, proposal.tokens, q_rows=publish(ctx, session, proposal))
    if verdict.accepted != want.accepted and verdict.accepted == other.accepted:
        ctx.deviate("P1-POL-1/LATEST", f"round {verdict.round} follows the earlier of two applicable policies "
                    f"(accepted {verdict.accepted}; the latest gives {want.accepted})",
                    expected=[f"accepted {want.accepted}"], actual=f"accepted {verdict.accepted}")
        return
    judge.judge(verdict, proposal, want, support)


@CATALOGUE.case(
    "VER-6.6-POLICY-005", area="policy", section="6.6", level=Level.SHOULD, profile=("P1-ID-2",),
    rows=("P1-ID-2/ROUTER-ONLY", *RULE2_ROWS),
    quote="Router-only resources (`POST sessions`, `PUT sessions/{id}/drafter`, `POST sessions/{id}/policy`) are "
          "accepted only from identities in the verifier's configured router list; others get 403 with "
          "`sdcp-not-assigned`.",
)
async def policy_from_drafter(ctx: VerifierContext) -> None:
    """A policy sent by the assigned drafter (not a router): 403 sdcp-not-assigned, and it has no effect."""
    session, old, seed = await _seeded(ctx)
    answer = await ctx.policy(session, session.round + 1, {"temperature_milli": 0, "seed": seed}, party="drafter-1")
    ctx.expect_refusal(answer, "P1-ID-2/ROUTER-ONLY", what="a policy from drafter-1")
    judge = Rule2Judge(ctx)
    await rule2_round(ctx, session, judge, flat_q, 3, old)
    judge.finish()


@CATALOGUE.case("VER-6.6-POLICY-006", area="policy", section="6.6",
                level=Level.MUST, profile=("P1-POL-1",),
                rows=("R-6.6-RULE", "R-5.2-UNKNOWN-KEYS", *RULE2_ROWS))
async def rule_unchanged(ctx: VerifierContext) -> None:
    """A policy carrying an extra `rule: 1` member (unknown there, ignored) leaves rule 2 in force."""
    session, old, _ = await _seeded(ctx)
    body = {"session": session.id, "from_round": session.round + 1, "sampling": dict(old), "rule": 1}
    answer = await ctx.iut.send("router", "POST", f"sessions/{session.path_id}/policy", body)
    ctx.expect_ok(answer, SessionState, what="POST policy with an extra member", row="R-5.2-UNKNOWN-KEYS")
    judge = Rule2Judge(ctx, accept_row="R-6.6-RULE")
    for _ in range(2):
        await rule2_round(ctx, session, judge, flat_q, 3, old)
    judge.finish()


@CATALOGUE.case("VER-6.6-POLICY-007", area="policy", section="5.2, 6.6",
                quote=f"{UNKNOWN_KEYS} ... {APPLY_QUOTE}",
                level=Level.MUST, profile=("P1-POL-1",), rows=("R-5.2-UNKNOWN-KEYS", "R-6.6-APPLY", *RULE2_ROWS))
async def unknown_key_in_policy_sampling(ctx: VerifierContext) -> None:
    """A policy whose sampling map carries an unknown key (a policy is not the contract: the key is ignored) is
    accepted and governs the rounds from its from_round."""
    session, old, seed = await _seeded(ctx)
    new = {"temperature_milli": 0, "seed": seed}
    answer = await ctx.policy(session, session.round + 1, {**new, "x_vendor_knob": 7})
    state = ctx.expect_ok(answer, SessionState, what="POST policy whose sampling has an unknown key",
                          row="R-5.2-UNKNOWN-KEYS")
    ctx.check_state(session, state, "POST policy whose sampling has an unknown key")
    judge = Rule2Judge(ctx, accept_row="R-6.6-APPLY")
    await _distinguishing_round(ctx, session, judge, new, old)
    await rule2_round(ctx, session, judge, flat_q, 3, new)
    judge.finish()
