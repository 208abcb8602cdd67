"""Speculation limit and escalation (§6.5.1, §6.5.2, P1-CTL-1..5, P1-EVT-1, P1-STATE-1).

The harness drives low rounds (a = 0, or 100 * a < low_ratio * M) with
wrong proposals and good rounds with greedy ones, and predicts c, g, j and
m_cap itself. Load-dependent behaviour is judged against the load the IUT
itself reports in the verdict of the round that escalates (D-JUDGE-3: that
is the load its control step used). The target says how its load is known:
the embedded IUT's can be pinned at will (``load:control``), and so can a
vendor's whose target file names a ``load_hook`` or ``load_command``
(:mod:`sdcp_conformance.harness.load_control`); otherwise a vendor's is
pinned at a declared value (``pinned_load``) or reported, and the cases
choose self_load from it so that they test the branch they name (a case
that cannot reach its branch says so, SKIPPED, rather than judging the
other one). A load set for a case is given back when it ends.
"""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np

from sdcp_conformance.harness.case import CaseIncomplete, Level
from sdcp_conformance.harness.contexts.verifier import TrackedSession, VerifierContext
from sdcp_conformance.harness.iut import Answer
from sdcp_conformance.oracle import rule2 as oracle
from sdcp_conformance.oracle.greedy import argmax_smallest, greedy_continuation
from sdcp_conformance.oracle.statistics import DEFAULT_ALPHA
from sdcp_conformance.protocol.codec import decode_sequence
from sdcp_conformance.protocol.errors import MalformedMessage
from sdcp_conformance.protocol.messages import Event, Output, SessionState, Verdict
from sdcp_conformance.suites.verifier import CATALOGUE
from sdcp_conformance.suites.verifier.conversation import (
    SELF_DECODING_CAP_S,
    SELF_DECODING_STALL_S,
    cache_path,
    check_event_origin,
    commit_records,
    current_state,
    events_of,
    rejecting_token,
    started,
    state_of,
    wait_event,
    wait_event_while_committing,
)
from sdcp_conformance.suites.verifier.seeded_rule2 import DraftedProposal, p_row, publish

ESCALATE_QUOTE = ("When c reaches R, the verifier applies entry j of the fallback list (skipping entries that are "
                  "not permitted, as described for self_decode, and advancing j past every entry it applies or "
                  "skips), then resets c to zero. If no entry remains, it applies \"fail\".")
REDUCE_QUOTE = "reduce (1):: The verifier sets m_cap to max(1, floor(m_cap / 2)) and the drafter proceeds."


async def _low(ctx: VerifierContext, session: TrackedSession) -> Verdict:
    """A round with a = 0 (the first token is not the target's argmax)."""
    return await ctx.propose_ok(session, [rejecting_token(session)])


async def _good(ctx: VerifierContext, session: TrackedSession, m: int = 2) -> Verdict:
    return await ctx.propose_ok(session, ctx.greedy(session, m))


def _expect(ctx: VerifierContext, verdict: Verdict, *, action: int | None = None, low: int | None = None,
            m_cap: int | None = None, row: str | None = None) -> bool:
    wanted = {"action": action, "low": low, "m_cap": m_cap}
    actual = {"action": int(verdict.action), "low": verdict.low, "m_cap": verdict.m_cap}
    wrong = {key: value for key, value in wanted.items() if value is not None and actual[key] != value}
    return ctx.check(not wrong, f"round {verdict.round}: " + ", ".join(f"{k} is {actual[k]}, expected {v}"
                                                                      for k, v in wrong.items()), row=row,
                     expected=str({k: v for k, v in wanted.items() if v is not None}), actual=str(actual))


async def _pin(ctx: VerifierContext, load: int) -> bool:
    """Pin the IUT's load when the target offers it (``load:control``); a hook or command that fails makes the
    case INCOMPLETE (the control step failed, P1-JUDGE-4). The environment gives the load back after the case."""
    from sdcp_conformance.harness.load_control import LoadControlError

    try:
        return await ctx.set_load(load)
    except LoadControlError as exc:
        raise CaseIncomplete(f"the harness could not set the verifier's load to {load}: {exc}") from exc


async def _load_now(ctx: VerifierContext) -> int:
    """The IUT's load as it declares it (pinned) or reports it (the verdict of a throw-away round)."""
    if ctx.target.pinned_load is not None:
        return ctx.target.pinned_load
    probe = await started(ctx)
    return (await _good(ctx, probe, 1)).load


@CATALOGUE.case("VER-6.5-ESC-001", area="escalation", section="6.5.2", level=Level.MUST,
                profile=("P1-CTL-5",), rows=("R-6.5.2-LOW", "P1-CTL-5/LOW"))
async def low_without_ratio(ctx: VerifierContext) -> None:
    """low_ratio absent: only a = 0 is low; `low` counts consecutive low rounds and resets on a good one."""
    session = await started(ctx)
    _expect(ctx, await _low(ctx, session), action=0, low=1)
    _expect(ctx, await _low(ctx, session), action=0, low=2)
    _expect(ctx, await ctx.propose_ok(session, [*ctx.greedy(session, 1), rejecting_token(session)]),
            action=0, low=0)
    _expect(ctx, await _low(ctx, session), action=0, low=1)


@CATALOGUE.case("VER-6.5-ESC-002", area="escalation", section="6.5.2", level=Level.MUST,
                profile=("P1-CTL-5",), rows=("R-6.5.2-LOW", "R-6.4-RULE1", "P1-CTL-5/LOW"))
async def low_with_ratio(ctx: VerifierContext) -> None:
    """low_ratio 50: a = 1 of M = 4 is low (100 < 200), a = 2 of 4 is not (200 < 200 is false)."""
    session = await started(ctx, low_ratio=50)
    for accepted, low in ((1, 1), (1, 2), (2, 0), (0, 1)):
        greedy = ctx.greedy(session, accepted + 1)
        wrong = next(t for t in range(3, 128) if t != greedy[accepted])
        tokens = [*greedy[:accepted], wrong, 5, 6][:4]
        verdict = await ctx.propose_ok(session, tokens)
        ctx.require(verdict.accepted == accepted, f"rule 1 accepts {accepted} of these tokens, not "
                    f"{verdict.accepted}", row="R-6.4-RULE1")
        _expect(ctx, verdict, action=0, low=low)


@CATALOGUE.case("VER-6.5-ESC-003", area="escalation", section="6.5.2", quote=ESCALATE_QUOTE + " ... " + REDUCE_QUOTE,
                level=Level.MUST, profile=("P1-CTL-5", "P1-CTL-4"),
                rows=("R-6.5.2-REDUCE", "R-6.5.2-ESCALATE", "R-6.5.1-RESTORE"),
                black_box_note="m_cap must be exactly halved when the verdict reports load 0 (the embedded IUT's "
                               "is pinned to 0); at another load a lower m_cap is accepted (§6.5.1: the verifier "
                               "lowers m_cap when its own load makes long proposals costly).")
async def reduce_halves(ctx: VerifierContext) -> None:
    """R = 2, fallback [reduce x3]: every second low round halves m_cap, rounding down (7 -> 3 -> 1 -> 1).

    The odd m_caps are what tell floor from other roundings: halving 4 and 2 gives the same with ceil or round.
    reduce halves the m_cap in effect when it applies, the one the low round before it reported: an m_cap that
    rose on that low round is a deviation from §6.5.1's SHOULD ("restore m_cap ... when rounds are no longer
    low", P1-CTL-4: "by one per round that is not low"), judged as such (NON-STRICT), not as a wrong halving
    (found by a planted bug in an independent verifier, which this case used to fail on R-6.5.2-REDUCE).
    """
    await _pin(ctx, 0)
    session = await started(ctx, low_rounds=2, fallback=[1, 1, 1], m_max=8, m_init=7)
    cap = 7
    for _ in range(3):
        first = await _low(ctx, session)
        _expect(ctx, first, action=0, low=1, row="R-6.5.2-ESCALATE")
        ctx.check(first.m_cap <= cap, f"round {first.round} was low, yet m_cap rose from {cap} to {first.m_cap} "
                  "(§6.5.1 restores it only when rounds are no longer low)", row="R-6.5.1-RESTORE",
                  expected=f"at most {cap}", actual=str(first.m_cap))
        cap = first.m_cap
        verdict = await _low(ctx, session)
        cap = max(1, cap // 2)
        _expect(ctx, verdict, action=1, low=0, row="R-6.5.2-ESCALATE")
        ctx.check(verdict.m_cap == cap if verdict.load == 0 else 1 <= verdict.m_cap <= cap,
                  f"reduce set m_cap to {verdict.m_cap} (load {verdict.load}), expected max(1, floor(m_cap / 2)) "
                  f"= {cap}", expected=str(cap), actual=str(verdict.m_cap))
        cap = verdict.m_cap


@CATALOGUE.case("VER-6.5-ESC-004", area="escalation", section="6.5.1",
                level=Level.MUST, profile=("P1-CTL-1",), rows=("R-6.5.1-M-CAP",))
async def m_cap_bounds(ctx: VerifierContext) -> None:
    """m_max 3 with m_init 8, good and reducing rounds: every verdict has 1 <= m_cap <= 3."""
    session = await started(ctx, m_init=8, m_max=3, low_rounds=1, fallback=[1, 1, 1, 1, 5])
    for step in range(8):
        verdict = await (_low(ctx, session) if step in (1, 2, 3, 5) else _good(ctx, session, 1))
        ctx.check(1 <= verdict.m_cap <= 3, f"round {verdict.round}: m_cap {verdict.m_cap} is outside 1..m_max (3)")


@CATALOGUE.case(
    "VER-6.5-ESC-005", area="escalation", section="6.5.1", level=Level.SHOULD, profile=("P1-CTL-4",),
    rows=("R-6.5.1-RESTORE", "R-6.5.2-REDUCE"),
    black_box_note="The load is pinned to 0 where the target allows it; elsewhere a verdict reporting load may "
                   "keep m_cap lower. Deviation is NON-STRICT.",
)
async def gradual_restore(ctx: VerifierContext) -> None:
    """After a reduce (4 -> 2), good rounds restore m_cap by one per round, up to min(m_max = 8, m_init = 4)."""
    await _pin(ctx, 0)
    session = await started(ctx, low_rounds=1, fallback=[1, 5])
    _expect(ctx, await _low(ctx, session), action=1, m_cap=2, row="R-6.5.2-REDUCE")
    verdicts = [await _good(ctx, session, 1) for _ in range(4)]
    caps, loads = [verdict.m_cap for verdict in verdicts], [verdict.load for verdict in verdicts]
    restored = [3, 4, 4, 4]  # m_max is 8: the ceiling is m_init's 4, which only P1-CTL-4 sets
    if all(load == 0 for load in loads):
        ctx.check(caps == restored, f"m_cap after good rounds went {caps}; P1-CTL-4 restores by one per round "
                  "up to min(m_max, m_init) = 4", expected=str(restored), actual=str(caps))
        return
    # A load may keep m_cap lower (§6.5.1), never higher: above the restore is judged at any load.
    ctx.check(all(cap <= bound for cap, bound in zip(caps, restored, strict=True)),
              f"m_cap after good rounds went {caps} (loads {loads}); P1-CTL-4 restores by one per round up to "
              f"min(m_max, m_init) = 4, and a load can only keep it lower", expected=f"at most {restored}",
              actual=str(caps))
    if caps != restored:
        ctx.informational(f"the IUT reported loads {loads} during the restore, which may keep m_cap lower "
                          f"(§6.5.1); m_cap went {caps}")


@CATALOGUE.case(
    "VER-6.5-ESC-006", area="escalation", section="6.5.2", level=Level.MUST, profile=("P1-EVT-1", "P1-ID-1"),
    rows=("R-6.5.2-SWITCH", "R-6.5.2-ESCALATE"),
    quote="switch (2):: The verifier sends an event to the router, which assigns the session to another drafter "
          "with a permitted model; the current drafter MUST stop proposing for the session.",
)
async def switch_event(ctx: VerifierContext) -> None:
    """switch: an event of kind 2 with the current n and d[n] reaches the router from the verifier's identity."""
    session = await started(ctx, low_rounds=1, fallback=[2, 5])
    _expect(ctx, await _low(ctx, session), action=2, row="R-6.5.2-ESCALATE")
    events = await wait_event(ctx, session, 2, timeout_s=5.0)
    ctx.require(bool(events), "no event of kind 2 reached the router within 5 s")
    peer, event = events[0]
    check_event_origin(ctx, peer, "the switch event")
    ctx.check(event.epoch == session.epoch and event.committed == len(session.output)
              and event.digest == session.digest, "the switch event's epoch/committed/digest are not current")


@CATALOGUE.case(
    "VER-6.5-ESC-007", area="escalation", section="6.3, 6.5.2", level=Level.MUST, profile=("P1-EVT-1",),
    rows=("R-6.3-AUTHORIZATION", "P1-EVT-1/OLD-DRAFTER", "R-6.5.2-ESCALATE"),
    quote="The verifier accepts proposals only from the drafter named in the latest assignment it has received. ... "
          "After `switch` or the start of self-decoding, the old drafter's proposals get 403 `sdcp-not-assigned` "
          "until a new assignment arrives.",
    black_box_note="Between the switch and the new assignment only the profile decides (NON-STRICT); after the "
                   "new assignment the old drafter must be refused (strict).",
)
async def switch_authorization(ctx: VerifierContext) -> None:
    """After switch the old drafter is refused; after assigning drafter-2 only drafter-2 is served."""
    session = await started(ctx, low_rounds=1, fallback=[2, 5])
    _expect(ctx, await _low(ctx, session), action=2, row="R-6.5.2-ESCALATE")
    before = await ctx.propose(session, ctx.greedy(session, 1))
    ctx.expect_refusal(before, "P1-EVT-1/OLD-DRAFTER", what="drafter-1 right after switch")
    await ctx.assign_ok(session, "drafter-2")
    old = await ctx.propose(session, ctx.greedy(session, 1))
    ctx.expect_refusal(old, "R-6.3-AUTHORIZATION", what="drafter-1 after drafter-2 was assigned")
    await ctx.propose_ok(session, ctx.greedy(session, 2), drafter="drafter-2")


async def _self_decoding_session(ctx: VerifierContext, **contract: Any) -> tuple[TrackedSession, Verdict]:
    """Open a session whose first round is low and whose fallback starts with self_decode (R = 1).

    self_load 100: no load can exceed it, so self_decode is permitted whatever the IUT's load.
    """
    await _pin(ctx, 0)
    contract.setdefault("self_load", 100)
    contract.setdefault("max_new", 200)
    session = await started(ctx, low_rounds=1, **contract)
    verdict = await _low(ctx, session)
    ctx.require(int(verdict.action) == 3, f"the verdict reports load {verdict.load} <= self_load "
                f"{contract['self_load']}, yet the action is {int(verdict.action)}, not self_decode (3)",
                row="R-6.5.2-SELF-PERMITTED")
    return session, verdict


async def _absorb_self_decoded(ctx: VerifierContext, session: TrackedSession) -> list[int]:
    """Read the self-decoded tokens (output) and check them and their records; returns them."""
    start = len(session.output)
    output = ctx.expect_ok(await ctx.output(session, start, party="drafter-2"), Output, what="GET output")
    tokens = list(output.tokens)
    if output.final:
        # "The final output message has final set to true" (§6.7): the verifier's own session-state must then say
        # the session is over; a self-decoding period ends with a drafter needed again, not with the session.
        state = await current_state(ctx, session)
        ctx.check(state.state in (4, 5), f"GET output after self-decoding is final (finish {output.finish}), but "
                  f"the session-state says {state.state}, not finished (4) or failed (5): a front end would stop "
                  "reading a session that goes on", row="R-6.7-FINAL", expected="final false, or state 4 or 5",
                  actual=f"final true, state {state.state}")
    if session.contract.get("rule") == 2:
        _judge_sampled(ctx, session, tokens)
    else:
        greedy = greedy_continuation(session.model, session.context, len(tokens))
        ctx.check(tokens == greedy, "the self-decoded tokens are not the target's greedy continuation (rule 1)",
                  row="R-6.5.2-SELF-RUN", expected=str(greedy), actual=str(tokens))
    records = [r for r in commit_records(ctx, session) if r.get("round", 0) > session.round]
    ctx.check([r.get("round") for r in records] == list(range(session.round + 1, session.round + 1 + len(tokens)))
              and all(list(r.get("emitted", [])) == [t] for r, t in zip(records, tokens, strict=False)),
              "self-decoded tokens are not recorded one per round with consecutive round numbers",
              row="R-6.5.2-SELF-RUN", actual=str(records))
    session.output.extend(tokens)
    session.round += len(tokens)
    return tokens


def _judge_sampled(ctx: VerifierContext, session: TrackedSession, tokens: list[int]) -> None:
    """Rule 2's self-decoding samples the target model (§6.5.2): every token in the support of p under the
    session's profile (strict), and with a seed the token P1-SAMP-3 draws (round number, i = 1, purpose 1)."""
    sampling = dict(session.contract.get("sampling") or {})
    seed = sampling.get("seed")
    drawn_otherwise = []
    greedy_chance = 1.0  # the chance, under p, that every token so far is its row's argmax (a greedy decoder's)
    for index, token in enumerate(tokens):
        context, round_number = [*session.context, *tokens[:index]], session.round + 1 + index
        p = p_row(session.model, context, sampling)
        greedy_chance *= p[token] if 0 <= token < len(p) and token == argmax_smallest(np.asarray(p)) else 0.0
        ctx.check(0 <= token < len(p) and p[token] > 0.0,
                  f"round {round_number}: the self-decoded token {token} lies outside the support of the target's "
                  f"distribution under the session's profile {sampling}", row="R-6.5.2-SELF-TARGET",
                  expected="a token with p > 0", actual=str(token))
        if seed is not None:
            expected = oracle.draw(p, oracle.uniform(int(seed), session.id, round_number, 1, oracle.PURPOSE_DRAW))
            if token != expected:
                drawn_otherwise.append(f"round {round_number}: drew {token}, P1-SAMP-3 gives {expected}")
    # A sampler lands on every argmax with probability greedy_chance, so judging only when that is below
    # SELF_GREEDY_ALPHA keeps the false alarm of this check below it (D-JUDGE-SELF-GREEDY).
    ctx.check(not tokens or not 0.0 < greedy_chance < SELF_GREEDY_ALPHA,
              f"all {len(tokens)} self-decoded tokens are the argmax of the target's distribution, which sampling "
              f"under the profile {sampling} does with probability {greedy_chance:.2e}: the verifier decoded "
              "greedily, not with the target model's distribution (rule 2)", row="R-6.5.2-SELF-TARGET",
              expected=f"draws from p (all argmax has chance {greedy_chance:.2e} < {SELF_GREEDY_ALPHA:g})",
              actual=str(tokens))
    if drawn_otherwise:
        ctx.deviate("P1-SAMP-3/SELF", "the self-decoded tokens are not the seeded draws of P1-SAMP-3: "
                    + "; ".join(drawn_otherwise))


SELF_GREEDY_ALPHA = DEFAULT_ALPHA
"""D-JUDGE-SELF-GREEDY: a rule-2 self-decoding period whose tokens are all argmax tokens is judged greedy when a
sampler would do that with a probability below this (the rule-2 tests' alpha)."""

SELF_CASE_TIMEOUT_S = SELF_DECODING_CAP_S + 30.0
"""The cases that wait for a self-decoding period to end outlast the longest wait (the set-up rounds besides)."""
STALLED = (f"waited while it committed, until no commit record came for {SELF_DECODING_STALL_S:g} s or "
           f"{SELF_DECODING_CAP_S:g} s had passed")

SELF_ROWS = ("R-6.5.2-SELF-RUN", "R-6.5.2-SELF-PERMITTED", "P1-EVT-1/EVENTS", "R-6.7-FINAL")
PERIOD_END_KINDS = (0, 1, 2)
"""Events that can end a self-decoding period: §6.5.2 asks only for "an event so that the router assigns a drafter
again"; that it is kind 0 (continue) is P1-EVT-1's. Kind 3 would start a period, 4 and 5 end the session."""


async def _period_end(ctx: VerifierContext, session: TrackedSession, count: int = 1,
                      also: tuple[int, ...] = ()) -> list[tuple[str | None, Event]]:
    """Wait for the event that ends self-decoding period ``count`` (or one of the kinds ``also``); the events.

    An end event of another kind than 0 is P1-EVT-1's deviation (NON-STRICT) and the case goes on."""
    ended = await wait_event_while_committing(ctx, session, (*PERIOD_END_KINDS, *also), count=count)
    if len(ended) >= count and int(ended[count - 1][1].kind) not in (0, *also):
        kind = int(ended[count - 1][1].kind)
        ctx.deviate("P1-EVT-1/EVENTS", f"the event ending self-decoding period {count} has kind {kind}, not 0 "
                    "(P1-EVT-1: continue; §6.5.2 asks only for an event so that the router assigns a drafter again)",
                    expected=["kind 0"], actual=f"kind {kind}")
    return ended
HELD_APPEND_WAIT_S = 5.0
"""How long the harness waits for a self-decoding period's append to hold."""
STATE_WHILE_HELD_S = 2.0
"""How long session-state may take while an append is held before the harness lets the append go (the draft
does not say that a verifier answers it meanwhile; one that waits for its append is read afterwards)."""


async def _state_while_self_decoding(ctx: VerifierContext, session: TrackedSession) -> None:
    """P1-STATE-1: session-state.state is 3 while the period goes on, read while the cache holds one of its
    appends (so that the period cannot end under the read, whatever the IUT's load and speed)."""
    gate = ctx.cache.faults.hold(cache_path(session.commit_log), methods=frozenset({"PUT"}))
    try:
        held = await gate.wait_arrival(HELD_APPEND_WAIT_S)
        reading = asyncio.ensure_future(current_state(ctx, session)) if held else None
        # The output committed so far, read in the same window: a period that goes on is no final output (§6.7).
        output = asyncio.ensure_future(ctx.output(session, 0, party="drafter-2")) if held else None
        if reading is not None and output is not None:
            await asyncio.wait({reading, output}, timeout=STATE_WHILE_HELD_S)
        # An output answered only after the gate opens may come after the session finished: not judged for final.
        output_in_window = output is not None and output.done()
    finally:
        gate.open()
    if reading is None or output is None:
        ctx.note("no append of the self-decoding period reached the cache to be held: its state was not read")
        return
    state: SessionState = await reading
    if state.state == 4:
        ctx.note("session-state was answered only after the held append, by when the session had finished: the "
                 "state during self-decoding was not observed")
        return
    ctx.check(state.state == 3, f"session-state.state while a self-decoding append was held was {state.state} "
              "(P1-STATE-1: 3)", row="P1-STATE-1", expected="3", actual=str(state.state))
    read = ctx.expect_ok(await output, Output, what="GET output while self-decoding went on")
    if state.state == 3 and output_in_window:
        ctx.check(not read.final, f"GET output while self-decoding went on (state 3) is final (finish {read.finish}): "
                  "a front end would stop reading a session that goes on", row="R-6.7-FINAL",
                  expected="final false", actual=f"final true after {len(read.tokens)} tokens")


@CATALOGUE.case(
    "VER-6.5-ESC-008", area="escalation", section="6.5.2", level=Level.MUST,
    timeout_s=SELF_CASE_TIMEOUT_S,
    profile=("P1-EVT-1", "P1-SAMP-3"), rows=SELF_ROWS,
    black_box_note="self_load is 100, which no load exceeds, so exactly self_max tokens are decoded.",
)
async def self_decode_period(ctx: VerifierContext) -> None:
    """self_decode: event 3, then self_max (3) greedy tokens in consecutive rounds, then event 0; drafting resumes."""
    session, _ = await _self_decoding_session(ctx, fallback=[3, 5], self_max=3)
    ctx.check(bool(await wait_event(ctx, session, 3, timeout_s=5.0)),
              "no event of kind 3 reached the router when self-decoding started", row="P1-EVT-1/EVENTS")
    ended = await _period_end(ctx, session)
    ctx.require(bool(ended), f"self-decoding did not end with an event ({STALLED})")
    check_event_origin(ctx, ended[0][0], "the end-of-self-decoding event")
    tokens = await _absorb_self_decoded(ctx, session)
    ctx.check(len(tokens) == 3, f"{len(tokens)} tokens were self-decoded with self_max 3 (and no load above "
              "self_load 100)", expected="3", actual=str(len(tokens)))
    ctx.check(ended[0][1].committed == len(session.output) and ended[0][1].digest == session.digest,
              "the end event does not carry the committed length and digest after self-decoding")
    state = state_of(ctx, await ctx.assign(session, "drafter-1"), "PUT drafter after self-decoding")
    ctx.check_state(session, state, "PUT drafter after self-decoding")
    ctx.check(state.round == session.round, f"session-state round {state.round}, expected {session.round}")
    await _good(ctx, session)


@CATALOGUE.case(
    "VER-6.5-ESC-019", area="escalation", section="6.5.2", level=Level.MUST,
    timeout_s=SELF_CASE_TIMEOUT_S,
    profile=("P1-EVT-1",), rows=(*SELF_ROWS, "R-6.5.2-ESCALATE"),
    black_box_note="self_max is per period (\"max tokens per self-decode period\"): the second period decodes "
                   "self_max tokens again. self_load is 100, which no load exceeds.",
)
async def second_self_decode_period(ctx: VerifierContext) -> None:
    """fallback [self_decode, self_decode, fail], self_max 2: two periods, each of two tokens, each ended by event 0."""
    session, _ = await _self_decoding_session(ctx, fallback=[3, 3, 5], self_max=2)
    for period in (1, 2):
        ended = await _period_end(ctx, session, period)
        ctx.require(len(ended) >= period, f"self-decoding period {period} did not end with an event ({STALLED})",
                    row="R-6.5.2-SELF-RUN")
        tokens = await _absorb_self_decoded(ctx, session)
        ctx.check(len(tokens) == 2, f"period {period} self-decoded {len(tokens)} tokens with self_max 2 (a period's "
                  "budget, and no load above self_load 100)", row="R-6.5.2-SELF-RUN", expected="2",
                  actual=str(len(tokens)))
        state_of(ctx, await ctx.assign(session, "drafter-1"), f"PUT drafter after self-decoding period {period}")
        if period == 1:
            _expect(ctx, await _low(ctx, session), action=3, row="R-6.5.2-ESCALATE")


@CATALOGUE.case(
    "VER-6.5-ESC-009", area="escalation", section="6.5.2", level=Level.MUST,
    requires=("load:control",), profile=("P1-STATE-1", "P1-EVT-1"), rows=(*SELF_ROWS, "P1-STATE-1"),
    black_box_note="Needs the IUT's load to change during the period: the harness raises it above self_load and "
                   "self-decoding must stop with an event of kind 0. It runs against the embedded IUT and against "
                   "a verifier whose target file names a load_hook or load_command (the harness sets the load "
                   "through it); a vendor's load that is only pinned or reported cannot be changed, and the case "
                   "is SKIPPED there. ESC-017 judges the other branch (it goes on while the load permits) against "
                   "every target.",
)
async def self_decode_stops_on_load(ctx: VerifierContext) -> None:
    """Without self_max, self-decoding runs (state 3) until the load exceeds self_load, then stops (event 0)."""
    session, _ = await _self_decoding_session(ctx, fallback=[3, 5], max_new=2000, self_load=50)
    state = await current_state(ctx, session)
    await _pin(ctx, 100)
    ended = await wait_event(ctx, session, 0, timeout_s=10.0)
    ctx.check(bool(ended), "self-decoding went on after the load exceeded self_load (no event 0 in 10 s)")
    if not events_of(ctx, session, 4):
        ctx.check(state.state == 3, f"session-state.state during self-decoding was {state.state} (P1-STATE-1: 3)",
                  row="P1-STATE-1")


@CATALOGUE.case(
    "VER-6.5-ESC-010", area="escalation", section="6.5.2", level=Level.MUST,
    rows=("R-6.5.2-SELF-PERMITTED", "R-6.5.2-ESCALATE"),
    black_box_note="self_load is set below the IUT's load: pinned at will (embedded), the declared pinned_load "
                   "minus one, or the reported load minus one. The branch is judged from the load the escalating "
                   "verdict reports; a round that reports a load within self_load is judged on that branch and "
                   "the case tries again (three times), SKIPPED if the IUT never reports a load above it (a load "
                   "of 0 exceeds no self_load).",
)
async def self_decode_skipped_on_load(ctx: VerifierContext) -> None:
    """Load above self_load: self_decode is skipped and the next entry (switch) applies; no event 3."""
    load = 90 if await _pin(ctx, 90) else await _load_now(ctx)
    for _ in range(3):
        if load == 0:
            ctx.skip("the IUT's load is 0, which exceeds no self_load: the skipped branch cannot be reached; a "
                     "[target] load_hook or load_command (the harness sets the load), or a pinned_load above 0, "
                     "lets it run")
        self_load = min(50, load - 1)
        session = await started(ctx, low_rounds=1, fallback=[3, 2, 5], self_load=self_load)
        verdict = await _low(ctx, session)
        if verdict.load > self_load:
            _expect(ctx, verdict, action=2)
            await wait_event(ctx, session, 2, timeout_s=5.0)
            ctx.check(not events_of(ctx, session, 3), "an event of kind 3 was sent although self_decode was "
                      f"skipped (load {verdict.load} > self_load {self_load})")
            return
        ctx.note(f"the escalating verdict reported load {verdict.load} <= self_load {self_load}: judged on the "
                 "permitted branch, trying again")
        _expect(ctx, verdict, action=3)
        load = verdict.load
    ctx.skip("the IUT never reported a load above the self_load chosen from its own reports; a [target] load_hook "
             "or load_command (the harness sets the load) lets it run")


@CATALOGUE.case("VER-6.5-ESC-011", area="escalation", section="6.5.2", level=Level.MUST,
                rows=("R-6.5.2-SELF-PERMITTED", "R-6.5.2-REDUCE"))
async def self_decode_without_self_load(ctx: VerifierContext) -> None:
    """A contract without self_load never permits self_decode: the next entry (reduce) applies."""
    await _pin(ctx, 0)
    session = await started(ctx, low_rounds=1, fallback=[3, 1, 5])
    verdict = await _low(ctx, session)
    _expect(ctx, verdict, action=1)
    _expect(ctx, verdict, m_cap=2 if verdict.load == 0 else None, row="R-6.5.2-REDUCE")


@CATALOGUE.case(
    "VER-6.5-ESC-012", area="escalation", section="6.5.2", level=Level.MUST,
    profile=("P1-EVT-1",), rows=("R-6.5.2-ESCALATE", "R-6.7-FINAL", "P1-EVT-1/EVENTS"),
)
async def fail_when_exhausted(ctx: VerifierContext) -> None:
    """fallback [reduce], R = 1: the first low round reduces, the second fails (action 5, final output, event 5)."""
    session = await started(ctx, low_rounds=1, fallback=[1])
    _expect(ctx, await _low(ctx, session), action=1)
    _expect(ctx, await _low(ctx, session), action=5)
    output = ctx.expect_ok(await ctx.output(session, 0, party="drafter-2"), Output, what="GET output after fail")
    ctx.check(output.final and output.finish is not None and int(output.finish) == 5,
              "the output after fail is not final with finish 5", row="R-6.7-FINAL", actual=str(output.to_obj()))
    ctx.check(bool(await wait_event(ctx, session, 5, timeout_s=5.0)),
              "no event of kind 5 reached the router after fail (P1-EVT-1)", row="P1-EVT-1/EVENTS")


@CATALOGUE.case(
    "VER-6.5-ESC-013", area="escalation", section="6.5.2", level=Level.MUST, rows=("R-6.5.2-J-RESET",),
)
async def j_reset_after_good_rounds(ctx: VerifierContext) -> None:
    """R = 2, fallback [reduce, fail]: low, low (reduce), good, good (j = 0), low, low: reduce again, not fail.

    Then good, low, good, low, low: the two good rounds are not consecutive (the low one between them resets g),
    so g never reaches R, j stays past reduce, and the escalation is fail. A verifier that counts the good rounds
    without resetting g on a low one resets j and reduces again (found by a planted bug in an independent
    verifier, which the consecutive good rounds above could not tell from a right one).
    """
    session = await started(ctx, low_rounds=2, fallback=[1, 5])
    await _low(ctx, session)
    _expect(ctx, await _low(ctx, session), action=1)
    for _ in range(2):
        _expect(ctx, await _good(ctx, session, 1), action=0, low=0)
    _expect(ctx, await _low(ctx, session), action=0, low=1)
    _expect(ctx, await _low(ctx, session), action=1)
    for _ in range(2):  # g: 1, then reset by the low round; c: 1, then reset by the good one
        _expect(ctx, await _good(ctx, session, 1), action=0, low=0)
        _expect(ctx, await _low(ctx, session), action=0, low=1)
    _expect(ctx, await _low(ctx, session), action=5)


@CATALOGUE.case(
    "VER-6.5-ESC-014", area="escalation", section="6.5.2", level=Level.MUST, rows=("R-6.5.2-J-PERSISTS",),
)
async def j_persists_across_drafter(ctx: VerifierContext) -> None:
    """fallback [switch, reduce, fail], R = 1: after switch and a new drafter, the next escalation is reduce."""
    session = await started(ctx, low_rounds=1, fallback=[2, 1, 5])
    _expect(ctx, await _low(ctx, session), action=2)
    await ctx.assign_ok(session, "drafter-2")
    verdict = await ctx.propose_ok(session, [rejecting_token(session)], drafter="drafter-2")
    _expect(ctx, verdict, action=1)


@CATALOGUE.case(
    "VER-6.5-ESC-015", area="escalation", section="6.5.2", timeout_s=SELF_CASE_TIMEOUT_S, level=Level.MUST,
    rows=("R-6.5.2-J-PERSISTS", *SELF_ROWS),
    black_box_note="self_load is 100, which no load exceeds, so self-decoding is always permitted.",
)
async def j_persists_across_self_decoding(ctx: VerifierContext) -> None:
    """fallback [self_decode, reduce], R = 1: after a self-decoding period, the next escalation is reduce."""
    session, _ = await _self_decoding_session(ctx, fallback=[3, 1, 5], self_max=2)
    ctx.require(bool(await _period_end(ctx, session)), f"self-decoding did not end with an event ({STALLED})",
                row="R-6.5.2-SELF-RUN")
    await _absorb_self_decoded(ctx, session)
    state = state_of(ctx, await ctx.assign(session, "drafter-1"), "PUT drafter after self-decoding")
    ctx.check_state(session, state, "PUT drafter after self-decoding")
    _expect(ctx, await _low(ctx, session), action=1)


@CATALOGUE.case(
    "VER-6.5-ESC-016", area="escalation", section="6.5.2", level=Level.PROFILE, profile=("P1-CTL-5", "P1-CTL-2"),
    rows=("P1-CTL-5/FINISH", "R-6.3-TRUNCATE"),
)
async def finish_beats_escalation(ctx: VerifierContext) -> None:
    """max_new 1, fallback [fail], R = 1, a = 0: the round both finishes and would fail; it reports finish."""
    session = await started(ctx, low_rounds=1, fallback=[5], max_new=1)
    verdict = await _low(ctx, session)
    ctx.check(int(verdict.action) in (4, 5), f"the last round's action is {int(verdict.action)}, not finish/fail",
              row="R-6.3-TRUNCATE")
    ctx.check(int(verdict.action) != 5, "the round reached max_new and would escalate; P1-CTL-5 reports finish "
              "(4), got fail (5)")


@CATALOGUE.case(
    "VER-6.5-ESC-017", area="escalation", section="6.5.2", level=Level.MUST,
    timeout_s=SELF_CASE_TIMEOUT_S,
    profile=("P1-EVT-1", "P1-STATE-1"), rows=(*SELF_ROWS, "P1-STATE-1"),
    black_box_note="self_load is 100, which no load exceeds, and there is no self_max: self-decoding must go on, "
                   "one token per round, until max_new ends the session. The branch where the load rises above "
                   "self_load is ESC-009's. While the cache holds one of the period's appends, session-state "
                   "must say 3 (P1-STATE-1): the state ESC-009 reads only where the harness controls the load.",
)
async def self_decode_goes_on(ctx: VerifierContext) -> None:
    """Without self_max and with self_load 100, self-decoding goes on (state 3) until max_new finishes it."""
    session, _ = await _self_decoding_session(ctx, fallback=[3, 5], max_new=8)
    await _state_while_self_decoding(ctx, session)
    await wait_event_while_committing(ctx, session, (4, 0))
    finished = events_of(ctx, session, 4)
    ctx.check(not events_of(ctx, session, 0), "self-decoding ended (event 0) although the load never exceeded "
              "self_load 100 and the contract has no self_max")
    # no event of kind 4 is P1-EVT-1's deviation; whether the session ended at max_new is judged below, from the
    # verifier's own output (P1-JUDGE-2: the case goes on)
    ctx.check(bool(finished), f"no event of kind 4 reached the router when self-decoding should have reached "
              f"max_new 8 ({STALLED})", row="P1-EVT-1/EVENTS")
    tokens = await _absorb_self_decoded(ctx, session)
    ctx.check(len(session.output) == 8, f"the session finished with {len(session.output)} tokens, not max_new 8",
              actual=str(tokens))
    final = ctx.expect_ok(await ctx.output(session, len(session.output), party="drafter-2"), Output,
                          what="GET output after the self-decoded finish")
    ctx.check(final.final and final.finish is not None and int(final.finish) == 4,
              "the output after the self-decoded finish is not final with finish 4", row="R-6.7-FINAL",
              actual=str(final.to_obj()))


SAMPLED_SELF_MAX = 24
"""Tokens VER-6.5-ESC-018 has the verifier self-decode under rule 2, at temperature 3 and top-k 4
(SAMPLED_SELF_PROFILE). Each is a chance to see a draw P1-SAMP-3 does not give, but two different uniforms draw
the same token from the bigram's top 4 with probability sum p^2, whose mean over its rows is 0.40 at this
temperature (0.51 at temperature 1): a verifier drawing with purpose 0 passes about 0.40^24 = 2e-10 of runs. A
greedy verifier is judged when every token is the argmax and a sampler would do that with probability below
SELF_GREEDY_ALPHA: at 24 tokens from any first token the greedy path's chance is at most 1.4e-7 (at 16 tokens
and temperature 1 it reached 4e-3, which is why the period is this long and this hot)."""
SAMPLED_SELF_PROFILE = {"temperature_milli": 3000, "top_k": 4}


@CATALOGUE.case(
    "VER-6.5-ESC-018", area="escalation", section="6.5.2", timeout_s=SELF_CASE_TIMEOUT_S,
    level=Level.MUST, profile=("P1-SAMP-1", "P1-SAMP-2", "P1-SAMP-3", "P1-EVT-1"),
    rows=("R-6.5.2-SELF-TARGET", "P1-SAMP-3/SELF", *SELF_ROWS, "R-6.4-RULE2"),
    black_box_note="Under rule 2 the target model is sampled, not decoded greedily: each self-decoded token must "
                   "lie in the support of p under the session's profile (top-k 4), strictly; with the seed it must "
                   "be the token P1-SAMP-3 draws (the round's number, i = 1, purpose 1), a profile-level check. "
                   "Tokens that are all the argmax of their rows, which a sampler produces with a chance below "
                   "1e-6 here, show greedy decoding (FAILED). self_load is 100, which no load exceeds. self_max "
                   "is 24 at temperature 3: two different uniforms often draw the same token, so few tokens could "
                   "hide a draw made with other uniforms.",
)
async def self_decode_samples_under_rule2(ctx: VerifierContext) -> None:
    """Rule 2, seeded, top-k 4: a rejected proposal starts self-decoding; its self_max tokens are p's draws."""
    await _pin(ctx, 0)
    sampling = {"seed": ctx.rng.randrange(1, 2**63), **SAMPLED_SELF_PROFILE}
    session = await started(ctx, rule=2, sampling=sampling, low_rounds=1, fallback=[3, 5], self_load=100,
                            self_max=SAMPLED_SELF_MAX, max_new=200)
    # A proposal rule 2 must reject: a token outside p's top 4 (p = 0), published with q = 1 (§6.3: q > 0).
    p = p_row(session.model, session.context, sampling)
    token = next(t for t in range(3, len(p)) if p[t] == 0.0)
    one_hot = [0.0] * len(p)
    one_hot[token] = 1.0
    proposal = DraftedProposal([token], [one_hot])
    verdict = await ctx.propose_ok(session, [token], q_rows=publish(ctx, session, proposal))
    ctx.require(verdict.accepted == 0, f"rule 2 accepted {verdict.accepted} tokens of a proposal whose first token "
                "has p = 0 (min(1, p / q) = 0)", row="R-6.4-RULE2", expected="0", actual=str(verdict.accepted))
    ctx.require(int(verdict.action) == 3, f"the low round's action is {int(verdict.action)}, not self_decode (3), "
                "with self_load 100", row="R-6.5.2-SELF-PERMITTED", expected="3", actual=str(int(verdict.action)))
    ended = await _period_end(ctx, session, also=(4,))
    ctx.require(bool(ended), f"self-decoding did not end (no event ending it, none of kind 4; {STALLED})",
                row="R-6.5.2-SELF-RUN")
    tokens = await _absorb_self_decoded(ctx, session)
    ctx.check(len(tokens) == SAMPLED_SELF_MAX or bool(events_of(ctx, session, 4)),
              f"{len(tokens)} tokens were self-decoded with self_max {SAMPLED_SELF_MAX}", row="R-6.5.2-SELF-RUN",
              expected=str(SAMPLED_SELF_MAX), actual=str(len(tokens)))


ASSIGNED_QUIET_S = 2.0
"""How long after an assignment during self-decoding the harness watches for another append of the verifier's own
(a verifier that goes on self-decoding appends every pass). A verifier that stopped appends nothing, so this
window cannot cause a false alarm; it only bounds how long a verifier going on has to show it."""


def _last_round(log: bytes) -> int:
    """The highest round among the commit records of a commit log's bytes (P1-LOG-1), -1 if none can be read."""
    try:
        records = decode_sequence(log)
    except MalformedMessage:
        return -1
    rounds = [record["round"] for record in records
              if isinstance(record, dict) and isinstance(record.get("round"), int)]
    return max(rounds, default=-1)


@CATALOGUE.case(
    "VER-6.5-ESC-020", area="escalation", section="6.5.2, P1-EVT-1", timeout_s=SELF_CASE_TIMEOUT_S,
    quote="After `switch` or the start of self-decoding, the old drafter's proposals get 403 `sdcp-not-assigned` "
          "until a new assignment arrives.", level=Level.PROFILE, profile=("P1-EVT-1",),
    rows=("P1-EVT-1/NEW-ASSIGNMENT", "R-6.5.2-SELF-RUN"),
    black_box_note="D-JUDGE-ASSIGN-SELF: an assignment received during self-decoding (no self_max, self_load 100: "
                   "the period would go on until max_new) ends the period: after the append under way, the "
                   "verifier appends nothing of its own, and the newly assigned drafter's proposal at the committed "
                   "prefix is verified. Only P1-EVT-1's \"until a new assignment arrives\" speaks of it: NON-STRICT.",
)
async def assignment_ends_self_decoding(ctx: VerifierContext) -> None:
    """While a self-decoded token's append is held, PUT …/drafter names drafter-2; the verifier then appends no
    token of its own, and drafter-2's proposal at the committed prefix gets a verdict."""
    session, _ = await _self_decoding_session(ctx, fallback=[3, 5], max_new=60)
    path = cache_path(session.commit_log)
    gate = ctx.cache.faults.hold(path, methods=frozenset({"PUT"}))
    assigning: asyncio.Future[Answer] | None = None
    try:
        if not await gate.wait_arrival(HELD_APPEND_WAIT_S):
            ctx.note("no append of the self-decoding period reached the cache to be held: no assignment was sent "
                     "during the period")
            return
        assigning = asyncio.ensure_future(ctx.assign(session, "drafter-2"))
        await asyncio.wait({assigning}, timeout=STATE_WHILE_HELD_S)
        follow = ctx.cache.faults.hold(path, methods=frozenset({"PUT"}))  # the next append, if any
    finally:
        gate.open()
    try:
        # Another append carrying a later round than the held one's (a retry of the held append carries no
        # later round): a token of the verifier's own after the assignment.
        went_on = (await follow.wait_arrival(ASSIGNED_QUIET_S)
                   and _last_round(follow.bodies[0]) > _last_round(gate.bodies[0]))
    finally:
        follow.open()
    assert assigning is not None
    state_of(ctx, await assigning, "PUT sessions/{id}/drafter during self-decoding")
    if went_on:
        ctx.deviate("P1-EVT-1/NEW-ASSIGNMENT", "the verifier appended another record of its own after the "
                    "assignment of drafter-2 during self-decoding: the period went on although a drafter was "
                    "assigned (D-JUDGE-ASSIGN-SELF)", expected=["no append without a proposal"],
                    actual="a commit-log PUT")
        return
    await _absorb_self_decoded(ctx, session)
    answer = await ctx.propose(session, ctx.greedy(session, 2), drafter="drafter-2")
    if not answer.ok:
        ctx.deviate("P1-EVT-1/NEW-ASSIGNMENT", f"drafter-2, assigned during self-decoding, proposed at the committed "
                    f"prefix ({len(session.output)} tokens) and {answer.refused()}", expected=["a verdict"],
                    actual=answer.describe())
