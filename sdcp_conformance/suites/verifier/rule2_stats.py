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

The test of a round (its exact law, the alternatives, the e-process) is most of
the harness's work per round (issue 16), and no round waits for it: each
verdict is checked at once, and the round goes to
:class:`~sdcp_conformance.harness.rule2_judging.Rule2Feed` as a small
:class:`~sdcp_conformance.oracle.rule2_designs.RoundSpec`, to be judged in a
worker process when the harness has a second CPU
(:mod:`sdcp_conformance.harness.rule2_judging`), in (wave, slot) order either way.

Configuration: ``SDCP_RULE2_ALPHA`` (default 1e-6, the whole certification's
rule-2 statistical false-alarm budget), ``SDCP_RULE2_RHO`` (default 2^-8,
the entry-wise relative tolerance on the IUT's p) and ``SDCP_RULE2_JUDGE``
(``process`` or ``inline``: where the tests run).
"""

from __future__ import annotations

import asyncio
import itertools
import math
import os
import random
from collections.abc import Mapping
from dataclasses import dataclass

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.contexts.verifier import TrackedSession, VerifierContext
from sdcp_conformance.harness.rule2_judging import Rule2Feed
from sdcp_conformance.oracle.rule2_designs import DESIGNS, Design, DraftedRound, design, draft_round, drafter_uniforms
from sdcp_conformance.oracle.rule2_judge import JudgedRound
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
_FEEDS = itertools.count(1)
"""Numbers the tests a run's cases open on their shared judge host."""
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


async def _open(ctx: VerifierContext, plan: Design, index: int) -> _Slot:
    contract = ctx.contract("bigram", rule=2, sampling=dict(plan.sampling), m_max=CONTRACT_M_MAX, max_new=MAX_NEW,
                            stop=list(plan.stop))
    session = await ctx.open_ok("bigram", contract, plan.prompt(index))
    await ctx.assign_ok(session, m_init=plan.m)
    return _Slot(index, session, 1)


async def _apply_policy(ctx: VerifierContext, plan: Design, slot: _Slot) -> None:
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


async def _send(ctx: VerifierContext, slot: _Slot, drafted: DraftedRound) -> Verdict:
    session = slot.session
    uri = ctx.publish_q(f"q-{session.id.hex()[:12]}-{session.round + 1}", drafted.q)
    return await ctx.propose_ok(session, drafted.tokens, q_rows=uri)


def _check(ctx: VerifierContext, drafted: DraftedRound, verdict: Verdict) -> JudgedRound:
    """What the harness checks of a verdict at once; the round, as its test will judge it."""
    emitted = tuple(verdict.emitted)
    stop = drafted.spec.stop
    first_stop = next((index for index, token in enumerate(emitted) if token in stop), len(emitted) - 1)
    # §6.3: nothing is emitted after the first stop token, whatever the random values were (the designs with stop
    # tokens declare the row)
    ctx.require(first_stop == len(emitted) - 1,
                f"round {verdict.round}: emitted {list(emitted)} continue past the stop token {emitted[first_stop]} "
                f"at index {first_stop}", row="R-6.3-TRUNCATE", expected=str(list(emitted[:first_stop + 1])),
                actual=str(list(emitted)))
    if drafted.spec.outcome(emitted) is not None and not any(token in stop for token in emitted):
        ctx.require(verdict.accepted == len(emitted) - 1,
                    f"round {verdict.round}: accepted {verdict.accepted} but emitted {len(emitted)} tokens "
                    "(a accepted tokens and one additional token)", expected=str(len(emitted) - 1),
                    actual=str(verdict.accepted))
    return JudgedRound(drafted.spec, emitted, drafted.counted,
                       f"round {verdict.round} proposing {list(drafted.tokens)} emitted {list(emitted)}")


async def _lane(ctx: VerifierContext, plan: Design, slots: list[_Slot], position: int, waves: int,
                streams: tuple[random.Random, random.Random], feed: Rule2Feed, tolerance: Tolerance) -> None:
    """One slot's rounds, each drafted as soon as the last verdict is in: while this lane drafts, the others'
    proposals are at the IUT, so the harness's CPU and the verifier's overlap. Each lane draws its drafter
    values from its own seeded stream (designs with identical sessions share one stream per wave), so what is
    proposed does not depend on which lane runs first; the test is fed in (wave, slot) order (:class:`Rule2Feed`),
    so its decision does not depend on timing either."""
    own, shared = streams
    shared_base = shared.random()
    for wave in range(waves):
        if feed.rejected:
            return
        slot = slots[position]
        await _apply_policy(ctx, plan, slot)
        values = (drafter_uniforms(random.Random(f"{shared_base}:{wave}"), plan.m) if plan.identical
                  else drafter_uniforms(own, plan.m))
        drafted = draft_round(plan, slot.session.context, _profile(plan, slot), _m(plan, slot), values, tolerance)
        verdict = await _send(ctx, slot, drafted)
        feed.put(wave, position, _check(ctx, drafted, verdict))
        if int(verdict.action) == 4:  # finished at a stop token: a fresh session takes the slot
            slots[position] = await _open(ctx, plan, slot.index + len(slots))


async def run_design(ctx: VerifierContext, name: str) -> Rule2EProcess:
    """Run one design against the IUT until the test rejects or the round budget is spent."""
    plan = design(name)
    tolerance = configured_tolerance()
    alpha, test_seed = case_alpha(configured_alpha(), len(DESIGNS)), ctx.rng.random()
    slots = list(await asyncio.gather(*(_open(ctx, plan, index) for index in range(plan.sessions))))
    waves = -(-plan.rounds // len(slots))
    feed = Rule2Feed(ctx.judge_host(), f"{ctx.case_id}#{next(_FEEDS)}", len(slots))
    await feed.open(alpha, test_seed)
    shared_seed = ctx.rng.random()
    streams = [(random.Random(f"{ctx.rng.random()}"), random.Random(shared_seed)) for _ in slots]
    try:
        async with asyncio.TaskGroup() as lanes:
            for position in range(len(slots)):
                lanes.create_task(_lane(ctx, plan, slots, position, waves, streams[position], feed, tolerance))
        test, judged = await feed.finish()
    except BaseException:
        feed.abandon()
        raise
    ctx.note(f"design {plan.name}: targets {plan.targets}")
    ctx.note(f"tolerance rho = {tolerance.rho:.4g}; rounds judged {judged}, counted {test.rounds}")
    ctx.note(test.summary(plan.rounds))
    ctx.attach("rule2", test.trace())  # the HTML report plots it
    if test.rejected:
        row, cause = evidence_row(test, EVIDENCE.get(name, {}))
        ctx.fail(f"rule 2's outcomes do not follow the exact law (design {plan.name}): "
                 + test.summary(plan.rounds).split("\n")[0] + cause, row=row,
                 expected=["outcomes distributed as min(p, q) acceptance, residual and p[M+1] draws"],
                 actual=test.decisive or f"log e-value {test.log_e:.2f} >= {test.threshold:.2f}")
    return test


RULE2_ROW = "R-6.4-RULE2"
EVIDENCE: dict[str, dict[str, tuple[str, str]]] = {
    "profile-and-policy": {
        "profile": ("R-4.1-SAMPLING", "p computed with the sampling profile applied wrongly (or a policy's profile "
                    "not applied from its from_round, §6.6)"),
    },
    "step-order": {
        "profile": ("R-4.1-SAMPLING", "p computed with the sampling profile applied wrongly: the steps in another "
                    "order than temperature, top-k, top-p (temperature after top-p, say)"),
    },
    "identical-sessions": {
        "memory": ("R-6.4-INDEPENDENT", "sessions in identical states repeat one another's outcomes more often than "
                   "independent random values would"),
    },
}
"""Decision D-JUDGE-STAT-ROW: a statistical case's rejection is a finding on the sentence its evidence points to.

Every design tests the same thing, the exact law of rule 2's outcomes, so a rejection is on R-6.4-RULE2: a bug of
rule 2 itself (the bonus row, the residual) rejects most designs, and all of them then name it, not each its own
headline sentence. A design's own sentence is named only when the evidence for it leads every other explanation
by :data:`EVIDENCE_MARGIN`: the component that gained most is the one aimed at that sentence (a profile family in
the profile design, §4.1; the memory bet, which gains when outcomes repeat across sessions in one state, in the
design of identical sessions, §6.4 independence). After an impossible outcome only the families under which it
is possible are explanations, and the sentence is named when they all point at it, whatever they gained. With
the IUT's values unseeded, the evidence (and so the row) may differ from run to run; the verdict does not."""


EVIDENCE_MARGIN = math.log(10.0)
"""How far (in log-wealth, a log likelihood ratio) the evidence for a design's own sentence must lead every other
explanation before the finding names that sentence instead of rule 2 (10: "strong" on Jeffreys' scale)."""


def evidence_row(test: Rule2EProcess, evidence: Mapping[str, tuple[str, str]]) -> tuple[str, str]:
    """The row a rejected test's finding is on (D-JUDGE-STAT-ROW), and the words that say why, if not rule 2's.

    The evidence is the components' wealth, against the exact law and against each other; after an impossible
    outcome, which rules the exact law out, only the families under which that outcome is possible count, each
    against the others (and when they are all evidence for one sentence, that sentence is named)."""
    ranked = [component for component in test.strongest(len(test.components)) if component.log_wealth > 0]
    floor = 0.0
    if test.decisive and test.explained_by:
        found = {_evidence_of(family, evidence) for family in test.explained_by}
        only = found.pop() if len(found) == 1 else None
        if only is not None:  # every family that explains the outcome is evidence for one sentence
            row, words = only
            return row, f" (the outcome is possible only under {', '.join(test.explained_by)}: {words})"
        ranked = [component for component in test.strongest(len(test.components))
                  if component.name.split("@")[0] in test.explained_by]
        floor = -math.inf
    if not ranked:
        return RULE2_ROW, ""
    best = ranked[0]
    known = _evidence_of(best.name.split("@")[0], evidence)
    rival = next((component.log_wealth for component in ranked[1:]
                  if _evidence_of(component.name.split("@")[0], evidence) != known), floor)
    if known is None or best.log_wealth - rival < EVIDENCE_MARGIN:
        return RULE2_ROW, ""
    row, words = known
    return row, (f" (the strongest evidence, component {best.name}, {best.log_wealth - rival:.1f} in log-wealth "
                 f"above any other explanation: {words})")


def _evidence_of(family: str, evidence: Mapping[str, tuple[str, str]]) -> tuple[str, str] | None:
    """The evidence a family (``profile:untempered:draw-only`` is of ``profile``) is for, if the design names it."""
    return next((found for key, found in evidence.items() if family == key or family.startswith(f"{key}:")), None)


def _declare(number: int, name: str, title: str, profile: tuple[str, ...] = (), *,
             rows: tuple[str, ...] = (RULE2_ROW,), quote: str | None = None) -> None:
    plan = design(name)
    assert set(rows) >= {row for row, _ in EVIDENCE.get(name, {}).values()} | {RULE2_ROW}, name

    async def run(ctx: VerifierContext) -> None:
        await run_design(ctx, name)

    run.__doc__ = title
    CATALOGUE.case(
        f"VER-6.4-RULE2-STAT-{number:03d}", area="rule-2", section="6.4", quote=quote, level=Level.MUST,
        title=title, requires=("model:bigram",), timeout_s=120.0, profile=("P1-SAMP-1", *profile), rows=rows,
        black_box_note=STATISTICAL.format(cases=len(DESIGNS)) + f" Design: {plan.targets}.",
    )(run)


_declare(1, "q-equals-p", "q = p: acceptance is certain and bonus tokens follow p[M+1]")
_declare(2, "mode-boost", "q above p on p's mode: residual draws exclude the mode")
_declare(3, "low-peak", "q peaked on a low-p token: rejections and residual draws nearly every round")
_declare(4, "plus-minus", "q(x) 20 % above or below p(x): the clamp and the ratio's direction")
_declare(5, "long-high-acceptance", "M = 8 with a close drafter: every position's row and the bonus row")
_declare(6, "profile-and-policy", "top-k and top-p, then a policy change to temperature 1/2 (§4.1, §6.6)",
         ("P1-POL-1",), rows=("R-4.1-SAMPLING", "R-6.6-APPLY", "R-6.4-RULE2"),
         quote="p is the target model's next-token distribution after applying temperature, top-k, and top-p in that "
               "order ... The verifier applies the new profile to rounds numbered from_round and later")
_declare(7, "stop-in-proposals", "stop tokens inside proposals: the truncated emissions follow the exact law",
         rows=("R-6.3-TRUNCATE", "R-6.4-RULE2"),
         quote="It truncates the emitted tokens after the first stop token and at max_new. ... At the first rejected "
               "position, the additional token is drawn from the normalized residual distribution max(0, p[i] - q[i]).")
_declare(8, "many-sessions", "twelve concurrent sessions with different contexts: each scored with its own rows",
         quote="It MAY batch proposals of many sessions into one pass. ... If all M tokens are accepted, the "
               "additional token is drawn from p[M+1].")
_declare(9, "identical-sessions",
         "twelve concurrent sessions in identical states: outcomes independent across sessions",
         rows=("R-6.4-INDEPENDENT", "R-6.4-RULE2"))

_declare(10, "step-order",
         "temperature 1/2 with top-k and top-p, q on the tokens p excludes first: the steps in §4.1's order",
         rows=("R-4.1-SAMPLING", "R-6.4-RULE2"),
         quote="p is the target model's next-token distribution after applying temperature, top-k, and top-p in "
               "that order")

__all__ = ["EVIDENCE", "EVIDENCE_MARGIN", "RULE2_ROW", "configured_alpha", "configured_tolerance", "evidence_row",
           "run_design"]
