"""Failover resume at the IUT (§6.9, §6.8, P1-MSG-5, P1-LOG-1, P1-RTR-6).

The harness plays the router that recovers a session: it appends a fence
with the new epoch to the commit log, writes the committed tokens (a CBOR
array) to its cache, and opens the session at the IUT with ``resume``. The
committed tokens and their digest come from the oracle's greedy decoding and
the harness's own digest chain.
"""

from __future__ import annotations

from typing import Any

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.contexts.verifier import TrackedSession, VerifierContext
from sdcp_conformance.oracle.greedy import greedy_continuation
from sdcp_conformance.protocol.chain import extend_digest
from sdcp_conformance.protocol.codec import encode
from sdcp_conformance.protocol.messages import Output, SessionState, Verdict
from sdcp_conformance.suites.verifier import CATALOGUE
from sdcp_conformance.suites.verifier.conversation import (
    cache_path,
    check_event_origin,
    commit_records,
    rejecting_token,
    started,
    state_of,
    still_works,
    wait_event,
)
from sdcp_conformance.suites.verifier.session import UNKNOWN_KEYS

RESUME_QUOTE = ("it then reads the last commit record and opens the session at a new verifier with that epoch and "
                "the \"resume\" member carrying that round, committed length, digest, and the target KV cache from "
                "the MLC if available.")
STALE_QUOTE = "Proposals carrying an older epoch are rejected"
CHUNKS = (3, 2)
"""Tokens committed by each of the old verifier's rounds."""


def _log_name(session: TrackedSession) -> str:
    return session.commit_log.rsplit("/", 1)[-1]


def _old_epoch_log(session: TrackedSession, tokens: list[int]) -> bytes:
    """Commit records of epoch 1 for ``CHUNKS`` rounds, as the failed verifier would have written them."""
    data, done, digest = b"", 0, session.d0
    for number, size in enumerate(CHUNKS, start=1):
        emitted = tokens[done: done + size]
        done += size
        digest = extend_digest(digest, emitted)
        data += encode({"epoch": 1, "round": number, "emitted": emitted, "committed": done, "digest": digest})
    return data


def _resume(ctx: VerifierContext, session: TrackedSession, **overrides: Any) -> dict[str, Any]:
    uri = ctx.put_object(f"committed-{session.id.hex()}-{session.epoch}", encode(list(session.output)))
    member = {"round": session.round, "committed": len(session.output), "digest": session.digest,
              "committed_tokens": uri}
    member.update(overrides)
    return member


async def _fresh_resumed(ctx: VerifierContext, *, what: str = "POST sessions with resume", row: str = "R-6.9-RESUME",
                         contract: dict[str, Any] | None = None, **resume_members: Any) -> TrackedSession:
    """A session the IUT never saw, opened with epoch 2 and resume after two old-epoch rounds (``resume_members``
    added to the resume member; a refusal of the open is judged on ``row``)."""
    session = ctx.track(contract=contract, epoch=2)
    tokens = greedy_continuation(session.model, session.prompt, sum(CHUNKS))
    ctx.put_object(_log_name(session), _old_epoch_log(session, tokens) + encode({"epoch": 2}))
    session.output, session.round = list(tokens), len(CHUNKS)
    answer = await ctx.open(session, resume=_resume(ctx, session, **resume_members))
    state = ctx.expect_ok(answer, SessionState, what=what, row=row)
    _check_resumed(ctx, session, state)
    return session


async def _first_round_resumed(ctx: VerifierContext, session: TrackedSession, tokens: list[int]) -> Verdict:
    """The first proposal at the epoch the session was resumed with: refusing it (a 409 sdcp-stale-epoch, say)
    means the verifier did not take up that epoch, which §6.9 opens it with (R-6.9-RESUME)."""
    answer = await ctx.propose(session, tokens)
    return ctx.expect_ok(answer, Verdict, what=f"the first proposal at epoch {session.epoch} after the resume",
                         row="R-6.9-RESUME")


async def _greedy_round_resumed(ctx: VerifierContext, session: TrackedSession, what: str) -> Verdict:
    """The first round after the resume, greedy (rule 1): its verdict must commit the target's tokens."""
    greedy = ctx.greedy(session, 3)
    verdict = await _first_round_resumed(ctx, session, greedy[:2])
    ctx.check(list(verdict.emitted) == greedy, f"{what} is not greedy from the prefix", row="R-6.4-RULE1",
              expected=str(greedy), actual=str(list(verdict.emitted)))
    return verdict


def _check_resumed(ctx: VerifierContext, session: TrackedSession, state: SessionState) -> None:
    ctx.check_state(session, state, "session-state after resume")
    ctx.require(state.epoch == session.epoch and state.round == session.round, row="R-6.9-RESUME",
                message=f"the resumed session-state has epoch {state.epoch} and round {state.round}",
                expected=f"epoch {session.epoch}, round {session.round}",
                actual=f"epoch {state.epoch}, round {state.round}")


async def _existing_failover(ctx: VerifierContext) -> TrackedSession:
    """A session served at epoch 1 for two rounds, then failed over to epoch 2 at the same verifier."""
    session = await started(ctx)
    for _ in range(2):
        await ctx.propose_ok(session, ctx.greedy(session, 2))
    stored = ctx.cache.store.get(cache_path(session.commit_log), now=0.0)
    ctx.put_object(_log_name(session), (stored.data if stored else b"") + encode({"epoch": 2}))
    session.epoch = 2
    answer = await ctx.open(session, resume=_resume(ctx, session))
    if not answer.ok:
        ctx.fail(f"a failover session-open (epoch 2 with resume) {answer.refused()} (P1-MSG-5: a "
                 "failover, not a conflict)", row="P1-MSG-5/FAILOVER", actual=answer.describe())
    _check_resumed(ctx, session, state_of(ctx, answer, "POST sessions (failover)"))
    return session


@CATALOGUE.case("VER-6.9-RESUME-001", area="recovery", section="6.9", level=Level.MUST,
                profile=("P1-RTR-6", "P1-MLC-2"), rows=("R-6.9-RESUME",))
async def fresh_resume_state(ctx: VerifierContext) -> None:
    """A session-open with epoch 2 and resume answers session-state with that round, committed and digest."""
    await _fresh_resumed(ctx)


@CATALOGUE.case(
    "VER-6.9-RESUME-002", area="recovery", section="6.9, 6.8", level=Level.MUST, profile=("P1-LOG-1",),
    rows=("R-6.9-RESUME", "R-6.8-RECORD", "R-6.4-RULE1"),
    quote="It then informs the verifier of the drafter and sends a new assignment. ... A commit record appended by "
          "a verifier MUST carry the session's current epoch and follow the last record it wrote.",
)
async def fresh_resume_continues(ctx: VerifierContext) -> None:
    """After resume and PUT drafter, rounds continue greedily from the resumed prefix; records carry epoch 2."""
    session = await _fresh_resumed(ctx)
    await ctx.assign_ok(session)
    await _greedy_round_resumed(ctx, session, "the resumed session's first round")
    greedy = ctx.greedy(session, 3)
    verdict = await ctx.propose_ok(session, greedy[:2])
    ctx.check(list(verdict.emitted) == greedy, "the resumed session's second round is not greedy from the prefix",
              row="R-6.4-RULE1", expected=str(greedy), actual=str(list(verdict.emitted)))
    records = [record for record in commit_records(ctx, session) if record.get("epoch") != 1]
    ctx.check([(r.get("epoch"), r.get("round")) for r in records] == [(2, 3), (2, 4)],
              "the new verifier's records are not epoch 2, rounds 3 and 4, after the fence", row="R-6.8-RECORD",
              actual=str(records))


@CATALOGUE.case("VER-6.9-RESUME-003", area="recovery", section="6.3, 6.9",
                level=Level.MUST, rows=("R-6.3-FENCING", "R-6.9-RESUME"))
async def fresh_resume_old_epoch(ctx: VerifierContext) -> None:
    """After resume at epoch 2, a proposal carrying epoch 1 gets 409 sdcp-stale-epoch and commits nothing."""
    session = await _fresh_resumed(ctx)
    await ctx.assign_ok(session)
    answer = await ctx.propose(session, ctx.greedy(session, 2), epoch=1)
    ctx.expect_refusal(answer, "R-6.3-FENCING", what="a proposal with epoch 1")
    await still_works(ctx, session, "the epoch-2 round after the refused epoch-1 proposal", count=2)


@CATALOGUE.case(
    "VER-6.9-RESUME-004", area="recovery", section="6.9", level=Level.SHOULD, quote=RESUME_QUOTE,
    profile=("P1-RTR-6",), rows=("R-6.9-RESUME-CONSISTENT",),
    black_box_note="The draft does not say how a verifier treats a resume whose digest its committed_tokens do "
                   "not reproduce; resuming from it would extend an unverifiable prefix, so any 4xx passes and "
                   "acceptance is NON-STRICT (D-JUDGE-2).",
)
async def resume_digest_mismatch(ctx: VerifierContext) -> None:
    """A resume whose digest does not match committed_tokens over d[0] is refused (any 4xx)."""
    session = ctx.track(epoch=2)
    session.output = greedy_continuation(session.model, session.prompt, 4)
    session.round = 2
    ctx.put_object(_log_name(session), encode({"epoch": 2}))
    bad = extend_digest(session.digest, [7])
    answer = await ctx.open(session, resume=_resume(ctx, session, digest=bad))
    ctx.expect_refusal(answer, "R-6.9-RESUME-CONSISTENT",
                       what="a resume whose digest does not match committed_tokens")


@CATALOGUE.case(
    "VER-6.9-RESUME-005", area="recovery", section="6.9", level=Level.MUST, profile=("P1-MSG-5",),
    rows=("R-6.3-FENCING", "P1-MSG-5/FAILOVER", "R-6.9-RESUME", "R-6.8-RECORD", "R-6.4-RULE1"),
    quote="A `session-open` with `resume` and a higher epoch is a failover (§6.9), not a conflict. ... "
          + STALE_QUOTE,
)
async def existing_session_failover(ctx: VerifierContext) -> None:
    """An existing epoch-1 session reopened with epoch 2 and resume: epoch-2 rounds continue, epoch 1 is stale."""
    session = await _existing_failover(ctx)
    await ctx.assign_ok(session)
    verdict = await _greedy_round_resumed(ctx, session, "the failed-over session's round")
    answer = await ctx.propose(session, ctx.greedy(session, 2), epoch=1)
    ctx.expect_refusal(answer, "R-6.3-FENCING", what="a proposal with epoch 1 after the failover")
    records = commit_records(ctx, session)
    ctx.require(bool(records), "a verdict was sent but the commit log holds no commit record", row="R-6.8-RECORD")
    last = records[-1]
    ctx.check(last.get("epoch") == 2 and last.get("round") == verdict.round,
              "the commit record after the failover does not carry epoch 2", row="R-6.8-RECORD", actual=str(last))


@CATALOGUE.case("VER-6.9-RESUME-006", area="recovery", section="6.7, 6.9", level=Level.MUST,
                profile=("P1-OUT-1",), rows=("R-6.7-STABLE", "R-6.9-RESUME", "R-6.7-RESUMED-PREFIX"))
async def resumed_output_epoch(ctx: VerifierContext) -> None:
    """After resume, output messages carry epoch 2 and the new tokens sit at their stable indices."""
    session = await _fresh_resumed(ctx)
    await ctx.assign_ok(session)
    start = len(session.output)
    await _first_round_resumed(ctx, session, ctx.greedy(session, 2))
    output = ctx.expect_ok(await ctx.output(session, start, party="drafter-2"), Output, what="GET output")
    ctx.check(output.epoch == 2, f"output after the failover carries epoch {output.epoch}, not 2")
    ctx.check(output.from_ == start and list(output.tokens) == session.output[start:],
              "the new tokens are not at their indices after the resumed prefix",
              expected=str(session.output[start:]), actual=str(list(output.tokens)))
    whole = ctx.expect_ok(await ctx.output(session, 0, party="drafter-2"), Output, what="GET output from 0")
    ctx.check(whole.epoch == 2, f"output from 0 carries epoch {whole.epoch}, not 2")
    ctx.check(list(whole.tokens) == session.output, "output from 0 does not serve the resumed prefix at its "
              "indices", row="R-6.7-RESUMED-PREFIX", expected=str(session.output), actual=str(list(whole.tokens)))


@CATALOGUE.case("VER-6.9-RESUME-007", area="recovery", section="5.2, 6.9", quote=f"{UNKNOWN_KEYS} ... {RESUME_QUOTE}",
                level=Level.MUST, rows=("R-5.2-UNKNOWN-KEYS", "R-6.9-RESUME", "R-6.4-RULE1"))
async def unknown_key_in_resume(ctx: VerifierContext) -> None:
    """A resume member carrying an unknown key (a session-open's resume is not the contract: the key is ignored)
    opens the resumed session, whose rounds continue greedily from the resumed prefix."""
    session = await _fresh_resumed(ctx, what="POST sessions with a resume that has an unknown key",
                                   row="R-5.2-UNKNOWN-KEYS", x_vendor_hint="warm")
    await ctx.assign_ok(session)
    await _greedy_round_resumed(ctx, session, "the resumed session's round")


@CATALOGUE.case(
    "VER-6.9-RESUME-008", area="recovery", section="6.5.2, 6.9", level=Level.MUST, profile=("P1-EVT-1",),
    rows=("R-6.5.2-SWITCH", "R-6.9-RESUME", "R-6.5.2-ESCALATE"),
    quote="switch (2):: The verifier sends an event to the router, which assigns the session to another drafter "
          "with a permitted model ... " + RESUME_QUOTE,
    black_box_note="The escalation cases run at epoch 1, where an event stuck at epoch 1 looks right; a router "
                   "discards an event of an epoch older than the session's, so after a failover it would never "
                   "switch the drafter.",
)
async def switch_event_after_resume(ctx: VerifierContext) -> None:
    """A session resumed at epoch 2 escalates to switch: its event of kind 2 carries epoch 2 and the current n, d[n]."""
    session = await _fresh_resumed(ctx, contract=ctx.contract(low_rounds=1, fallback=[2, 5]))
    await ctx.assign_ok(session)
    verdict = await _first_round_resumed(ctx, session, [rejecting_token(session)])
    ctx.require(int(verdict.action) == 2, f"the resumed session's low round (R = 1, fallback [switch, fail]) has "
                f"action {int(verdict.action)}, not switch (2)", row="R-6.5.2-ESCALATE", expected="2",
                actual=str(int(verdict.action)))
    events = await wait_event(ctx, session, 2, timeout_s=5.0)
    ctx.require(bool(events), "no event of kind 2 reached the router within 5 s of the resumed session's switch")
    peer, event = events[0]
    check_event_origin(ctx, peer, "the switch event")
    ctx.check(event.epoch == session.epoch, f"the resumed session's switch event carries epoch {event.epoch}, not "
              f"{session.epoch}: a router discards it as older than the session", expected=str(session.epoch),
              actual=str(event.epoch))
    ctx.check(event.committed == len(session.output) and event.digest == session.digest,
              "the switch event's committed/digest are not the resumed session's current ones",
              expected=f"committed {len(session.output)}", actual=f"committed {event.committed}")
