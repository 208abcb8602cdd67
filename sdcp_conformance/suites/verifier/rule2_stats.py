"""Rule 2 statistics: unseeded sessions judged by a sequential test of the exact outcome laws (§6.4).

The harness is the drafter. For every round it knows p exactly (bigram
closed form), publishes q, samples x from it with its own seeded random
numbers, and computes the exact law of the verdict's outcome; the
:class:`~sdcp_conformance.oracle.statistics.Rule2EProcess` turns the observed
outcomes into an e-value. A correct verifier (within the stated numerical
tolerance) fails a case with probability at most alpha / (number of
statistical cases), whatever the stopping round; an outcome that no
tolerated verifier can produce fails at once. Each case is one adversarial
design of :mod:`sdcp_conformance.oracle.rule2_designs`.

Configuration: ``SDCP_RULE2_ALPHA`` (default 1e-6, the whole certification's
rule-2 statistical false-alarm budget) and ``SDCP_RULE2_RHO`` (default 2^-8,
the entry-wise relative tolerance on the IUT's p).
"""

from __future__ import annotations

import asyncio
import os
import random
from collections.abc import Mapping
from dataclasses import dataclass

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.context import CaseContext, TrackedSession
from sdcp_conformance.oracle.rule2_designs import DESIGNS, Design, DraftedRound, design, draft_round, drafter_uniforms
from sdcp_conformance.oracle.rule2_trace import TracedEProcess
from sdcp_conformance.oracle.statistics import DEFAULT_ALPHA, DEFAULT_RHO, Rule2EProcess, Tolerance, case_alpha
from sdcp_conformance.protocol.messages import SessionState, Verdict
from sdcp_conformance.suites.verifier import CATALOGUE

RULE2 = ("For each position, draw r uniformly from [0, 1). Accept x[i] if r < min(1, p[i](x[i]) / q[i](x[i])) ... "
         "At the first rejected position, the additional token is drawn from the normalized residual distribution "
         "max(0, p[i] - q[i]). If all M tokens are accepted, the additional token is drawn from p[M+1].")
STATISTICAL = ("Statistical: the verifier's values are unseeded (CSPRNG), so single outcomes are random. The case "
               "runs a sequential test of the exact outcome law per round (e-process, Ville's inequality): a "
               "verifier whose p is within the tolerance (entry-wise relative error e^±rho, top-k ties either way) "
               "fails with probability <= alpha / {cases}; outcomes impossible for every such verifier fail at once. "
               "Rounds whose top-p cut lies within the tolerance of a row's running sum are sent but not counted.")
MAX_NEW = 1_000_000
CONTRACT_M_MAX = 8


def configured_alpha() -> float:
    return float(os.environ.get("SDCP_RULE2_ALPHA", DEFAULT_ALPHA))


def configured_tolerance() -> Tolerance:
    return Tolerance(float(os.environ.get("SDCP_RULE2_RHO", DEFAULT_RHO)))


@dataclass
class _Slot:
    """One concurrent session of a design, with its own round counter and policy switch."""

    index: int
    session: TrackedSession
    first_round: int
    policy_from: int | None = None


async def _open(ctx: CaseContext, plan: Design, index: int) -> _Slot:
    contract = ctx.contract("bigram", rule=2, sampling=dict(plan.sampling), m_max=CONTRACT_M_MAX, max_new=MAX_NEW,
                            stop=list(plan.stop))
    session = await ctx.open_ok("bigram", contract, plan.prompt(index))
    await ctx.assign_ok(session, m_init=plan.m)
    return _Slot(index, session, 1)


async def _apply_policy(ctx: CaseContext, plan: Design, slot: _Slot) -> None:
    """§6.6: switch the profile from the next round on, once the session has run ``policy[0]`` rounds."""
    if plan.policy is None or slot.policy_from is not None or slot.session.round < plan.policy[0]:
        return
    answer = await ctx.policy(slot.session, slot.session.round + 1, plan.policy[1])
    ctx.expect_ok(answer, SessionState, what="POST sessions/{id}/policy")
    slot.policy_from = slot.session.round + 1


def _profile(plan: Design, slot: _Slot) -> Mapping[str, int]:
    if plan.policy is not None and slot.policy_from is not None and slot.session.round + 1 >= slot.policy_from:
        return plan.policy[1]
    return plan.sampling


def _m(plan: Design, slot: _Slot) -> int:
    last = slot.session.verdicts.get(slot.session.round)
    cap = plan.m if last is None else last.m_cap
    return max(1, min(plan.m, cap, CONTRACT_M_MAX))


async def _send(ctx: CaseContext, slot: _Slot, drafted: DraftedRound) -> Verdict:
    session = slot.session
    uri = ctx.publish_q(f"q-{session.id.hex()[:12]}-{session.round + 1}", drafted.q)
    return await ctx.propose_ok(session, drafted.tokens, q_rows=uri)


def _judge(ctx: CaseContext, test: Rule2EProcess, drafted: DraftedRound, verdict: Verdict) -> None:
    emitted = list(verdict.emitted)
    law = drafted.law
    cell = law.cell_of(emitted)
    if cell is not None and not any(token in law.stop for token in emitted):
        ctx.require(verdict.accepted == len(emitted) - 1,
                    f"round {verdict.round}: accepted {verdict.accepted} but emitted {len(emitted)} tokens "
                    "(a accepted tokens and one additional token)", expected=str(len(emitted) - 1),
                    actual=str(verdict.accepted))
    if drafted.counted:
        test.update(law, cell, f"round {verdict.round} proposing {list(drafted.tokens)} emitted {emitted}")


class _InOrder:
    """Feeds the e-process in (wave, slot) order whatever order the verdicts arrive in, so the test's decision
    depends on the outcomes only, never on timing; stops everyone once it rejects."""

    def __init__(self, ctx: CaseContext, test: Rule2EProcess, width: int) -> None:
        self.ctx, self.test, self.width = ctx, test, width
        self.waiting: dict[tuple[int, int], tuple[DraftedRound, Verdict]] = {}
        self.next = (0, 0)

    def put(self, wave: int, position: int, drafted: DraftedRound, verdict: Verdict) -> None:
        self.waiting[(wave, position)] = (drafted, verdict)
        while self.next in self.waiting and not self.test.rejected:
            item, answer = self.waiting.pop(self.next)
            _judge(self.ctx, self.test, item, answer)
            wave_, position_ = self.next
            self.next = (wave_, position_ + 1) if position_ + 1 < self.width else (wave_ + 1, 0)


async def _lane(ctx: CaseContext, plan: Design, slots: list[_Slot], position: int, waves: int,
                streams: tuple[random.Random, random.Random], judge: _InOrder, tolerance: Tolerance) -> None:
    """One slot's rounds, each drafted as soon as the last verdict is in: while this lane drafts, the others'
    proposals are at the IUT, so the harness's CPU and the verifier's overlap. Each lane draws its drafter
    values from its own seeded stream (designs with identical sessions share one stream per wave), so what is
    proposed does not depend on which lane runs first."""
    own, shared = streams
    shared_base = shared.random()
    for wave in range(waves):
        if judge.test.rejected:
            return
        slot = slots[position]
        await _apply_policy(ctx, plan, slot)
        values = (drafter_uniforms(random.Random(f"{shared_base}:{wave}"), plan.m) if plan.identical
                  else drafter_uniforms(own, plan.m))
        drafted = draft_round(plan, slot.session.context, _profile(plan, slot), _m(plan, slot), values, tolerance)
        verdict = await _send(ctx, slot, drafted)
        judge.put(wave, position, drafted, verdict)
        if int(verdict.action) == 4:  # finished at a stop token: a fresh session takes the slot
            slots[position] = await _open(ctx, plan, slot.index + len(slots))


async def run_design(ctx: CaseContext, name: str) -> Rule2EProcess:
    """Run one design against the IUT until the test rejects or the round budget is spent."""
    plan = design(name)
    tolerance = configured_tolerance()
    test = TracedEProcess(case_alpha(configured_alpha(), len(DESIGNS)), random.Random(ctx.rng.random()))
    slots = list(await asyncio.gather(*(_open(ctx, plan, index) for index in range(plan.sessions))))
    waves = -(-plan.rounds // len(slots))
    judge = _InOrder(ctx, test, len(slots))
    shared_seed = ctx.rng.random()
    streams = [(random.Random(f"{ctx.rng.random()}"), random.Random(shared_seed)) for _ in slots]
    async with asyncio.TaskGroup() as lanes:
        for position in range(len(slots)):
            lanes.create_task(_lane(ctx, plan, slots, position, waves, streams[position], judge, tolerance))
    sent = judge.next[0] * len(slots) + judge.next[1]
    ctx.note(f"design {plan.name}: targets {plan.targets}")
    ctx.note(f"tolerance rho = {tolerance.rho:.4g}; rounds judged {sent}, counted {test.rounds}")
    ctx.note(test.summary(plan.rounds))
    ctx.attach("rule2", test.trace())  # the HTML report plots it
    if test.rejected:
        ctx.fail(f"rule 2's outcomes do not follow the exact law (design {plan.name}): "
                 + test.summary(plan.rounds).split("\n")[0],
                 expected=["outcomes distributed as min(p, q) acceptance, residual and p[M+1] draws"],
                 actual=test.decisive or f"log e-value {test.log_e:.2f} >= {test.threshold:.2f}")
    return test


def _declare(number: int, name: str, quote: str, title: str, profile: tuple[str, ...] = (),
             rows: tuple[str, ...] = ("R-6.4-RULE2",)) -> None:
    plan = design(name)

    async def run(ctx: CaseContext) -> None:
        await run_design(ctx, name)

    run.__doc__ = title
    CATALOGUE.case(
        f"VER-6.4-RULE2-STAT-{number:03d}", area="rule-2", section="6.4", quote=quote, level=Level.MUST,
        title=title, requires=("model:bigram",), timeout_s=120.0, profile=("P1-SAMP-1", *profile), rows=rows,
        black_box_note=STATISTICAL.format(cases=len(DESIGNS)) + f" Design: {plan.targets}.",
    )(run)


_declare(1, "q-equals-p", RULE2, "q = p: acceptance is certain and bonus tokens follow p[M+1]")
_declare(2, "mode-boost", RULE2, "q above p on p's mode: residual draws exclude the mode")
_declare(3, "low-peak", RULE2, "q peaked on a low-p token: rejections and residual draws nearly every round")
_declare(4, "plus-minus", RULE2, "q(x) 20 % above or below p(x): the clamp and the ratio's direction")
_declare(5, "long-high-acceptance", RULE2, "M = 8 with a close drafter: every position's row and the bonus row")
_declare(6, "profile-and-policy",
         "p is the target model's next-token distribution after applying temperature, top-k, and top-p in that "
         "order ... The verifier applies the new profile to rounds numbered from_round and later",
         "top-k and top-p, then a policy change to temperature 1/2 (§4.1, §6.6)", ("P1-POL-1",),
         rows=("R-4.1-SAMPLING", "R-6.6-APPLY", "R-6.4-RULE2"))
_declare(7, "stop-in-proposals",
         "It truncates the emitted tokens after the first stop token and at max_new. ... At the first rejected "
         "position, the additional token is drawn from the normalized residual distribution max(0, p[i] - q[i]).",
         "stop tokens inside proposals: the truncated emissions follow the exact law",
         rows=("R-6.3-TRUNCATE", "R-6.4-RULE2"))
_declare(8, "many-sessions",
         "It MAY batch proposals of many sessions into one pass. ... If all M tokens are accepted, the additional "
         "token is drawn from p[M+1].",
         "twelve concurrent sessions with different contexts: each scored with its own rows")
_declare(9, "identical-sessions",
         "The verifier's random values MUST be independent of those the drafter used. ... Without a seed, the "
         "verifier uses a cryptographically secure random number generator.",
         "twelve concurrent sessions in identical states: outcomes independent across sessions",
         rows=("R-6.4-INDEPENDENT", "R-6.4-RULE2"))

__all__ = ["configured_alpha", "configured_tolerance", "run_design"]
