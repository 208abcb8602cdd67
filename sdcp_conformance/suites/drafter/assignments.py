"""POST assignments at the drafter (§4.1, §5.2, §6.1, §6.9, P1-DRF-1/2/3/7, P1-MLC-2).

The harness is the drafter's router. It sends assignments the drafter must
refuse — from an identity that is not one of its routers, with a contract
that does not permit its model or names another tokenizer, with m_init 0,
with a contract key §4.1 does not define, with a lower epoch than the one it
holds, malformed — and, for each, checks the refusal's status and problem
type and that no proposal follows. It sends assignments that replace the
held one (an equal or higher epoch, after a failover to another verifier)
and checks that what follows is built on the new one, and assignments whose
prompt and committed tokens are MLC objects.
"""

from __future__ import annotations

from typing import Any

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.contexts.drafter import DrafterContext
from sdcp_conformance.harness.roles.played_session import PlayedSession
from sdcp_conformance.models.registry import mock_model
from sdcp_conformance.protocol.codec import encode
from sdcp_conformance.suites.drafter import CATALOGUE
from sdcp_conformance.suites.drafter.conversation import advance, hold, tokens_of
from sdcp_conformance.suites.drafter.variants import with_ctx_variant
from sdcp_conformance.transport.types import media_type

REPLACE = "an equal or higher epoch replaces the current assignment, abandoning any outstanding proposal first."
WELL_FORMED = ("Receivers reject malformed CBOR, wrong types, out-of-range values, and missing required members with "
               "400 (`sdcp-bad-message`, a profile problem type)")
TOKEN_LISTS = "a token list (`prompt`, `committed_tokens`) is a CBOR array of uint"
GREEDY_ROW = "P1-DRF-4"
"""Judged on every rule-1 proposal by the played verifier: the greedy tokens of the committed prefix; with the
context-dependent draft model that shows a context kept from before the assignment (:mod:`.variants`)."""
VOCAB = ("Receivers reject malformed CBOR, wrong types, out-of-range values, and missing required members with 400 "
         "(`sdcp-bad-message`, a profile problem type) ... `V`, the vocabulary size used for `q_rows`, is the model "
         "config's `vocab_size`.")


async def _refused_and_silent(ctx: DrafterContext, session: PlayedSession, row: str, what: str, *,
                              party: str = "router", **overrides: Any) -> None:
    answer = await ctx.assign(session, party=party, **overrides)
    ctx.expect_refusal(answer, row, what=what)
    arrival = await ctx.next_arrival(session, ctx.pace.quiet_window())
    ctx.check(arrival is None, f"the drafter proposed for a session whose assignment it had to refuse ({what})",
              row=row, expected="no proposal", actual=arrival.describe() if arrival else "")


@CATALOGUE.case("DRF-P1-DRF-1-001", area="assignments", section="P1-DRF-1", level=Level.PROFILE,
                rows=("P1-DRF-1",))
async def not_from_a_router(ctx: DrafterContext) -> None:
    """An assignment sent by a party that is not one of the drafter's routers is 403 sdcp-not-assigned."""
    await _refused_and_silent(ctx, ctx.track(), "P1-DRF-1", "an assignment from the verifier's identity",
                              party="verifier-1")


@CATALOGUE.case("DRF-P1-DRF-3-001", area="assignments", section="P1-DRF-3", level=Level.PROFILE,
                rows=("P1-DRF-3",))
async def model_not_permitted(ctx: DrafterContext) -> None:
    """A contract whose drafters list omits the drafter's model is 422 sdcp-bad-contract."""
    contract = ctx.contract(drafters=[bytes(range(32))])
    await _refused_and_silent(ctx, ctx.track(contract=contract), "P1-DRF-3", "a contract without its model")


@CATALOGUE.case("DRF-P1-DRF-3-002", area="assignments", section="P1-DRF-3", level=Level.PROFILE,
                rows=("P1-DRF-3",))
async def another_tokenizer(ctx: DrafterContext) -> None:
    """A contract naming another tokenizer is 422 sdcp-bad-contract."""
    contract = ctx.contract(tokenizer=bytes(32))
    await _refused_and_silent(ctx, ctx.track(contract=contract), "P1-DRF-3", "a contract with another tokenizer")


@CATALOGUE.case("DRF-P1-DRF-3-003", area="assignments", section="P1-DRF-3, 4.1",
                level=Level.PROFILE, rows=("P1-DRF-3",))
async def model_permitted_second(ctx: DrafterContext) -> None:
    """A contract whose drafters list names another model first and the drafter's second permits it: the
    assignment is accepted and drafted on (found by a planted bug in an independent drafter, which read the first
    entry only)."""
    own = ctx.contract()["drafters"]
    session = ctx.track(contract=ctx.contract(drafters=[bytes(range(32)), *own]))
    answer = await ctx.assign(session)
    ctx.require(answer.ok, f"an assignment whose contract lists the drafter's model second {answer.refused()}",
                expected="2xx (P1-MSG-4: 204)", actual=answer.describe())
    await ctx.decide(session, "round 1")


@CATALOGUE.case("DRF-P1-DRF-2-001", area="assignments", section="P1-DRF-2", level=Level.PROFILE,
                rows=("P1-DRF-2/DRAFTER",))
async def m_init_zero(ctx: DrafterContext) -> None:
    """An assignment with m_init 0 is 400 sdcp-bad-message."""
    await _refused_and_silent(ctx, ctx.track(), "P1-DRF-2/DRAFTER", "m_init 0", m_init=0)


@CATALOGUE.case("DRF-P1-MSG-2-VOCAB-001", area="assignments", section="P1-MSG-2, P1-HASH-2, 5.2",
                level=Level.PROFILE, profile=("P1-MSG-2", "P1-HASH-2"), rows=("P1-MSG-2/TOKEN-RANGE",))
async def prompt_token_at_vocab_size(ctx: DrafterContext) -> None:
    """An assignment whose prompt ends with token V (one past the shared vocabulary) is 400 sdcp-bad-message."""
    vocab = mock_model(ctx.target_model).vocab_size
    await _refused_and_silent(ctx, ctx.track(prompt=(5, 9, vocab)), "P1-MSG-2/TOKEN-RANGE",
                              f"a prompt holding token {vocab} (the vocabulary is 0..{vocab - 1})")


@CATALOGUE.case("DRF-4.1-UNKNOWN-KEY-001", area="assignments", section="4.1", level=Level.MUST,
                rows=("R-4.1-UNKNOWN-KEY-DRAFTER",))
async def contract_unknown_key(ctx: DrafterContext) -> None:
    """A contract with a key §4.1 does not define is 422 sdcp-bad-contract."""
    contract = {**ctx.contract(), "x-speed": 1}
    await _refused_and_silent(ctx, ctx.track(contract=contract), "R-4.1-UNKNOWN-KEY-DRAFTER",
                              "a contract with the unknown key x-speed", deliberate=True)


@CATALOGUE.case("DRF-5.2-WELL-FORMED-001", area="assignments", section="5.2, P1-MSG-2", quote=WELL_FORMED,
                level=Level.MUST, profile=("P1-MSG-2",), rows=("R-5.2-WELL-FORMED",))
async def malformed_assignments(ctx: DrafterContext) -> None:
    """Not CBOR, a missing member, a wrong type, an out-of-range value: each is 400 sdcp-bad-message."""
    session = ctx.track()
    good = ctx.assignment(session)
    bodies = {
        "not CBOR": b"\xff\x00 not cbor",
        "no m_init": encode({key: value for key, value in good.items() if key != "m_init"}),
        "a text round": encode({**good, "round": "one"}),
        "a short session id": encode({**good, "session": bytes(3)}),
    }
    for what, body in bodies.items():
        answer = await ctx.iut.send("router", "POST", "assignments", body)
        ctx.expect_refusal(answer, "R-5.2-WELL-FORMED", what=f"an assignment with {what}")
    arrival = await ctx.next_arrival(session, ctx.pace.quiet_window())
    ctx.check(arrival is None, "the drafter proposed after malformed assignments", expected="no proposal",
              actual=arrival.describe() if arrival else "")


@CATALOGUE.case("DRF-5.2-UNKNOWN-KEYS-001", area="assignments", section="5.2", level=Level.MUST,
                rows=("R-5.2-UNKNOWN-KEYS",))
async def unknown_keys_ignored(ctx: DrafterContext) -> None:
    """Unknown keys in the assignment and in every verdict are ignored: drafting goes on as usual."""
    session = ctx.track()
    await ctx.assign_ok(session, **{"x-router-hint": "fast", "priority": 7})
    for number in range(3):
        arrival = await ctx.take(session, f"round {number + 1}", row="R-5.2-UNKNOWN-KEYS")
        ctx.answer(session, arrival, ctx.verdict(session, arrival), extra={"x-verifier-note": [1, 2], "zz": {}})
    await ctx.take(session, "round 4", row="R-5.2-UNKNOWN-KEYS")


ABANDONED_HOLD_S = 1.0
"""After a replacing assignment, its first proposal is held this long: a drafter whose old loop still retries the
abandoned proposal (after its backoff) then has two outstanding (§6.2, judged on every arrival), where answering at
once let the new loop's verdict come first and the old retry arrive after the case. Shorter than the proposal
timeouts seen (an identical retry of the new proposal is allowed anyway, §6.9)."""


@CATALOGUE.case("DRF-P1-DRF-7-001", area="assignments", section="P1-DRF-7", level=Level.PROFILE,
                rows=("P1-DRF-7/STALE-EPOCH",))
async def lower_epoch(ctx: DrafterContext) -> None:
    """Holding epoch 2, an assignment with epoch 1 is 409 sdcp-stale-epoch, and drafting goes on at epoch 2."""
    session = ctx.track()
    await ctx.assign_ok(session, epoch=2)
    await ctx.decide(session, "round 1 at epoch 2")
    answer = await ctx.assign(session, epoch=1)
    ctx.expect_refusal(answer, "P1-DRF-7/STALE-EPOCH", what="an assignment with epoch 1 while 2 is held")
    if answer.ok:
        return
    arrival = await ctx.take(session, "round 2 at epoch 2", row="P1-DRF-7/STALE-EPOCH")
    ctx.check(arrival.proposal is not None and arrival.proposal.epoch == 2, "the proposal after the refused "
              "assignment does not carry the held epoch 2", expected="epoch 2", actual=arrival.describe())


@with_ctx_variant("DRF-P1-DRF-7-002", "DRF-P1-DRF-7-004", area="assignments", section="P1-DRF-7, 6.9",
                  quote=f"{REPLACE} ... Verifier failure: the router first appends a fence record with the new epoch "
                        "to the commit_log",
                  level=Level.PROFILE, profile=("P1-RTR-3",), rows=("P1-DRF-7/REPLACE", "R-6.9-NEW-DRAFTER"),
                  ctx_rows=(GREEDY_ROW,))
async def failover_replaces(ctx: DrafterContext) -> None:
    """A held epoch-1 proposal is abandoned when epoch 2 names the second verifier: proposals go there, at epoch 2.

    With the context-dependent draft model they are seen to be drafted from the committed prefix, not from a context
    that still holds the abandoned proposal (P1-DRF-4)."""
    session = await ctx.start(rule=1)
    await ctx.decide(session, "round 1")
    held = await ctx.take(session, "round 2 (to be held across the failover)")
    advance(ctx, session, (1,), held)  # committed at the old verifier
    await ctx.assign_ok(session, verifier=1, epoch=2)
    ctx.lose(held, "503")  # the fenced old verifier answers late, with an error: it must not matter
    arrival = await ctx.take(session, "the first proposal after the failover", row="P1-DRF-7/REPLACE")
    proposal = arrival.proposal
    assert proposal is not None
    ctx.check(arrival.verifier == ctx.target.verifiers[1] and proposal.epoch == 2,
              f"after the epoch-2 assignment the proposal went to {arrival.verifier} with epoch {proposal.epoch}",
              expected=f"{ctx.target.verifiers[1]}, epoch 2", actual=f"{arrival.verifier}, epoch {proposal.epoch}")
    await hold(ctx, session, ABANDONED_HOLD_S)
    ctx.answer(session, arrival, ctx.verdict(session, arrival))
    await ctx.decide(session, "the round after", row="P1-DRF-7/REPLACE")


@with_ctx_variant("DRF-P1-DRF-7-003", "DRF-P1-DRF-7-005", area="assignments", section="P1-DRF-7, 6.2",
                  level=Level.PROFILE, rows=("P1-DRF-7/REPLACE",), ctx_rows=(GREEDY_ROW,))
async def equal_epoch_replaces(ctx: DrafterContext) -> None:
    """An assignment with the same epoch but a newer round replaces the held one while a proposal is outstanding.

    With the context-dependent draft model what follows is seen to be drafted from the new committed prefix
    (P1-DRF-4)."""
    session = await ctx.start(rule=1)
    held = await ctx.take(session, "round 1 (to be held)")
    await hold(ctx, session, 0.2)
    advance(ctx, session, (2,), held)  # another drafter's round 1 was committed
    await ctx.reassign_ok(session, m_init=2)
    ctx.lose(held, "503")
    arrival = await ctx.take(session, "the first proposal of the new assignment", row="P1-DRF-7/REPLACE")
    ctx.check(arrival.key != held.key, "the abandoned proposal was retried after the new assignment",
              expected="a proposal for round 2", actual=arrival.describe())
    await hold(ctx, session, ABANDONED_HOLD_S)
    ctx.answer(session, arrival, ctx.verdict(session, arrival))


@CATALOGUE.case("DRF-P1-MLC-2-001", area="assignments", section="P1-MLC-2, 5.2",
                quote=f"{TOKEN_LISTS} ... prompt: [* uint] / cache-ref,", level=Level.PROFILE,
                rows=("P1-MLC-2/TOKEN-LISTS",))
async def prompt_from_the_cache(ctx: DrafterContext) -> None:
    """A prompt given as a cache-ref is read from the MLC: the greedy draft follows its last token."""
    prompt = [40, 41, 42, 77]
    session = ctx.track(prompt=prompt)
    uri = ctx.put_tokens(f"prompt-{session.id.hex()}", prompt)
    await ctx.assign_ok(session, prompt=uri)
    arrival = await ctx.take(session, "the first proposal", row="P1-MLC-2/TOKEN-LISTS")
    reads = ctx.cache.of(uri, "GET")
    ctx.check(bool(reads), f"the drafter never read the prompt object {uri}", expected="GET of the prompt",
              actual="none")
    expected = ctx.draft_greedy(prompt, arrival.m)
    ctx.check(tokens_of(arrival) == expected, "the first proposal is not drafted after the prompt in the MLC",
              expected=str(expected), actual=str(tokens_of(arrival)))
    ctx.answer(session, arrival, ctx.verdict(session, arrival))


SAMPLING = ("? sampling: sampling, ; current profile, if updated ... the router includes it in the \"sampling\" member "
            "of subsequent assignments")


@CATALOGUE.case("DRF-5.2-SAMPLING-001", area="assignments", section="5.2, 6.6", level=Level.MAY,
                rows=("R-5.2-SAMPLING-MEMBER",),
                black_box_note="No sentence makes a drafter draft under the current profile (D-JUDGE-D3); the case "
                               "observes whether the rows it publishes follow the assignment's sampling member.")
async def sampling_member(ctx: DrafterContext) -> None:
    """A sampling member (temperature 0.25) over a contract at temperature 1: the published rows follow it."""
    import numpy as np

    from sdcp_conformance.oracle.drafter_simulation import profile_key, row_array

    contract = ctx.contract(rule=2, sampling={"temperature_milli": 1000})
    session = ctx.track(contract=contract)
    updated = {"temperature_milli": 250}
    await ctx.assign_ok(session, sampling=updated)
    arrival = await ctx.take(session, "the first proposal under the updated profile", row="R-5.2-SAMPLING-MEMBER")
    if arrival.rows is None:
        return
    last = session.context()[-1]
    follows = np.allclose(arrival.rows[0], row_array(ctx.draft_model, last, profile_key(updated)), atol=1e-6)
    contract_rows = np.allclose(arrival.rows[0], row_array(ctx.draft_model, last, profile_key(contract["sampling"])),
                                atol=1e-6)
    if not follows:
        ctx.informational(f"the first row published does not follow the assignment's sampling member "
                          f"({'it is the contract profile' if contract_rows else 'nor the contract profile'})",
                          row="R-5.2-SAMPLING-MEMBER")
    ctx.answer(session, arrival, ctx.verdict(session, arrival))


PROBLEM = ("Errors use Problem Details [RFC9457] ... Errors are RFC 9457 `application/problem+json`. `type` is "
           "`urn:ietf:params:sdcp:problem:<suffix>` with the suffix from Table 2")


@CATALOGUE.case("DRF-5.1-PROBLEM-DETAILS-001", area="assignments", section="5.1, P1-ERR-1", quote=PROBLEM,
                level=Level.MUST, profile=("P1-ERR-1",), rows=("R-5.1-PROBLEM-DETAILS",))
async def refusals_are_problem_details(ctx: DrafterContext) -> None:
    """Refused assignments are answered with Problem Details documents of the profile's URN types."""
    from sdcp_conformance.protocol.problems import PROBLEM_CBOR_MEDIA_TYPE, PROBLEM_MEDIA_TYPE, PROBLEM_URN_PREFIX

    answers = {"m_init 0": await ctx.assign(ctx.track(), m_init=0),
               "from the verifier's identity": await ctx.assign(ctx.track(), party="verifier-1"),
               "a contract with another tokenizer": await ctx.assign(ctx.track(contract=ctx.contract(
                   tokenizer=bytes(32))))}
    for what, answer in answers.items():
        if answer.ok or answer.status is None:
            ctx.note(f"{what}: {answer.describe()} (judged by the case about it)")
            continue
        media = media_type(answer.content_type)
        problem = answer.problem
        ctx.check(media in (PROBLEM_MEDIA_TYPE, PROBLEM_CBOR_MEDIA_TYPE) and problem is not None,
                  f"{what}: the refusal {answer.describe()} is not a Problem Details document",
                  expected=PROBLEM_MEDIA_TYPE, actual=str(answer.content_type))
        if problem is not None and problem.problem_type is not None:
            ctx.check(problem.type_uri == PROBLEM_URN_PREFIX + problem.problem_type.suffix, f"{what}: the problem "
                      f"type {problem.type_uri!r} is not the profile's URN", row="P1-ERR-1",
                      expected=PROBLEM_URN_PREFIX + problem.problem_type.suffix, actual=problem.type_uri)


@CATALOGUE.case("DRF-P1-MSG-1-001", area="assignments", section="P1-MSG-1, 4.1",
                level=Level.PROFILE, profile=("P1-MSG-1",), rows=("P1-MSG-1/ANY-ENCODING",))
async def any_encoding_accepted(ctx: DrafterContext) -> None:
    """An assignment in well-formed but non-deterministic CBOR is accepted, and d[0] is the deterministic one."""
    from sdcp_conformance.suites.verifier.contract import loose_encode

    for options in ({"reverse": True}, {"indefinite": True, "wide": True}):
        session = ctx.track()
        body = loose_encode(ctx.assignment(session), **options)
        saved = session.snapshot()
        session.assigned(epoch=1, m_init=4, verifier=ctx.target.verifiers[0], sampling=None,
                         now=ctx.now())
        answer = await ctx.assign(session, body=body)
        if not answer.ok:
            session.restore(saved)
            ctx.deviate("P1-MSG-1/ANY-ENCODING", f"an assignment encoded {options} {answer.refused()}",
                        expected=["2xx"], actual=answer.describe())
            continue
        # The first proposal's base_digest must be d[0] over the deterministic contract (judged on arrival).
        arrival, _ = await ctx.decide(session, "the first proposal after a loosely encoded assignment",
                                      row="P1-MSG-1/ANY-ENCODING")
        ctx.note(f"{options}: {arrival.describe()}")
