"""Verifier failure and recovery (§6.9, §6.8, P1-RTR-5, P1-RTR-6, P1-LOG-3): the fence first, then the resume from
the last counted record with its committed_tokens, then the drafter at the new epoch — whether the verifier's
status expired, its resources fail with 5xx or at the transport, or it is partitioned and keeps serving."""

from __future__ import annotations

import asyncio
import contextlib

from sdcp_conformance.cache.commit_log import CommitRecord, FenceRecord, encode_record
from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.contexts.router import RouterContext
from sdcp_conformance.harness.roles.played_verifier import OUTPUT_WAIT_S, Fault
from sdcp_conformance.harness.roles.router_history import OpenSeen, OutputServed
from sdcp_conformance.harness.roles.router_truth import FrontSession
from sdcp_conformance.suites.router import router_case
from sdcp_conformance.suites.router.support import (
    ELIGIBLE,
    FENCE_FIRST,
    NOT_EXPIRED,
    OLD_EPOCH,
    REASSIGN,
    RESUME,
    failover,
    opens_at,
    quiet,
    switch,
)

FAILED = ("A verifier has failed when its status expired or its resources failed (transport error, 404, 5xx) three "
          "times in a row over at least 0.5 s.")
RTR6 = ("Resume (§6.9): after appending the fence, the router ignores commit records that follow a fence of a higher "
        "epoch, concatenates the `emitted` tokens of the rest, checks them against the last record's digest, writes "
        "them as the `committed_tokens` object, and opens the session at the new verifier from that record (round 0, "
        "committed 0 and d[0] if there is none).")
CONDITIONAL = ("The commit_log is an MLC object to which records are appended with a conditional operation, for "
               "example an HTTP PUT with If-Match on the current entity tag [RFC9110], so that an append succeeds only "
               "if no other append has happened since the writer last read the log.")
LOG3 = ("The router names the commit log; the object need not exist yet. The first append creates it with "
        "`If-None-Match: *`.")
IN_FLIGHT_READ_S = 10.0
"""How long the old verifier keeps the front's read waiting in RTR-6.9-PARTITION-002 (P1-OUT-1 allows 30 s), so it
is still in flight when that verifier releases tokens past the fence."""
INTERMITTENT_S = 5.0
"""How long the serving verifier fails two requests of every three in RTR-P1-RTR-5-INTERMITTENT-001: several
rounds of three (each two slow failures, 1.2 s, and the router's retries and 1 s output polls), and well over
P1-RTR-5's 0.5 s."""
QUICK_SPAN_S = 0.4
"""RTR-P1-RTR-5-QUICK-001 judges only when the three failures it saw answered span less than this: P1-RTR-5's 0.5 s
less a margin for the time between the harness answering and the router receiving (the router's own clock)."""
SLOW_FAILURE_S = 0.6
"""How long each failing read takes in RTR-P1-RTR-5-INTERMITTENT-001: over P1-RTR-5's 0.5 s, so that two failures in
a row span more than 0.5 s whatever the router's pace of retries."""
AFTER_FENCE_S = 1.0
"""How long after a router's fence the harness watches for a session-open it must not send (a router that resumes
does so at once: fence, committed_tokens, open); in RTR-6.9-FAILOVER-006, how long the failed verifier stays the
only one whose status is fresh."""
FAILOVER_ROWS = ("R-6.9-FENCE-FIRST", "R-6.9-ROUTER-RESUME", "R-6.9-REASSIGN", "R-6.8-CONDITIONAL",
                 "P1-RTR-5/FAILED-VERIFIER",
                 "R-6.8-FENCE-RECORD", "R-5.2-COMMITTED-TOKENS", "P1-RTR-3/ALWAYS-TOKENS", "P1-RTR-3/ASSIGNMENT-STATE",
                 "R-6.1-ASSIGN-ORDER", "R-6.1-NOT-EXPIRED", "R-6.7-FRONT-END")


def _first(row: str) -> tuple[str, ...]:
    """:data:`FAILOVER_ROWS` with ``row`` first (the case's own sentence)."""
    return tuple(dict.fromkeys((row, *FAILOVER_ROWS)))


def _log_path(ctx: RouterContext, session: FrontSession) -> str:
    """The path in the harness's MLC of the commit log the router named when it opened the session."""
    opens = ctx.accepted_opens(session)
    path = ctx.cache.path_of(opens[0].opening.commit_log if opens and opens[0].opening else "")
    assert path is not None, "the session was opened with a commit log in the harness's MLC (ctx.open_ok)"
    return path


async def _resume_then_serve(ctx: RouterContext, session: FrontSession, committed: list[int]) -> None:
    """After a failover the new verifier commits; the front delivers everything, in order, once."""
    more = ctx.commit(session, 2)
    tokens, _ = await ctx.read_front(session, count=len(committed) + 2)
    ctx.check(tokens == committed + more, "the front's output across the failover is not the committed output",
              row="R-6.7-FRONT-END", expected=str(committed + more), actual=str(tokens))


@router_case("RTR-6.9-FAILOVER-001", area="failover", section="6.9, 6.8, P1-RTR-6", quote=f"{FENCE_FIRST} ... "
             f"{RESUME} ... {REASSIGN}", level=Level.MUST, profile=("P1-RTR-6", "P1-LOG-1", "P1-RTR-3"),
             rows=FAILOVER_ROWS)
async def expired_verifier_is_fenced_then_resumed(ctx: RouterContext) -> None:
    """The verifier's status expires after two rounds: fence {epoch: 2} (conditionally), then the session-open
    at another verifier resuming from the last record, then PUT …/drafter and an assignment at epoch 2.

    A switch comes between the two rounds: the state the router last learned (from that reassignment's PUT) is
    then one round behind the log, so a router resuming from its own state instead of the commit log's last
    record shows (found by a planted bug in an independent router)."""
    session = await ctx.open_ok()
    committed = ctx.commit(session, 3)
    await switch(ctx, session)
    committed += ctx.commit(session, 2)
    opened, _ = await failover(ctx, session)
    resume = opened.opening.resume if opened.opening else None
    ctx.check(resume is not None and (resume.round, resume.committed) == (2, 5), "the resume does not carry the "
              "last commit record's round and committed length", row="R-6.9-ROUTER-RESUME",
              expected="round 2, committed 5", actual=str(resume.to_obj() if resume else None))
    await _resume_then_serve(ctx, session, committed)


@router_case("RTR-6.9-FAILOVER-002", area="failover", section="P1-RTR-6, P1-LOG-3, 6.9", quote=f"{RTR6} ... {LOG3}",
             level=Level.PROFILE, profile=("P1-RTR-6", "P1-LOG-3"),
             rows=("P1-RTR-6", "P1-LOG-3/ROUTER", *FAILOVER_ROWS))
async def failover_before_any_commit(ctx: RouterContext) -> None:
    """No record yet: the fence creates the log (If-None-Match: *) and the resume is round 0, committed 0, d[0]."""
    session = await ctx.open_ok()
    opened, _ = await failover(ctx, session)
    resume = opened.opening.resume if opened.opening else None
    ctx.check(resume is not None and (resume.round, resume.committed, resume.digest) == (0, 0, session.d0)
              and opened.tokens_object == (), "the resume of an empty log is not round 0, committed 0, d[0] with an "
              "empty committed_tokens", expected="round 0, committed 0, d[0], []",
              actual=f"{resume.to_obj() if resume else None}, tokens {opened.tokens_object}")
    await _resume_then_serve(ctx, session, [])


async def _failing_resources(ctx: RouterContext, how: str) -> None:
    session = await ctx.open_ok()
    committed = ctx.commit(session, 2)
    # A front client keeps reading: the router's reads of the failing verifier are what fail three times in a row.
    reader = asyncio.ensure_future(ctx.read_front(session, count=len(committed), timeout_s=ctx.act_s))
    try:
        await failover(ctx, session, how, row="P1-RTR-5/FAILED-VERIFIER")
    finally:
        tokens, _ = await reader
    ctx.check(tokens == committed, "the front did not deliver the committed tokens from the new verifier",
              row="R-6.7-FRONT-END", expected=str(committed), actual=str(tokens))


@router_case("RTR-6.9-FAILOVER-003", area="failover", section="P1-RTR-5, 6.9", quote=FAILED, level=Level.PROFILE,
             profile=("P1-RTR-5",), rows=_first("P1-RTR-5/FAILED-VERIFIER"))
async def verifier_answering_5xx_is_failed_over(ctx: RouterContext) -> None:
    """Its status stays fresh but every request gets 503: after three failures over 0.5 s the router fails over."""
    await _failing_resources(ctx, "errors")


@router_case("RTR-6.9-FAILOVER-004", area="failover", section="P1-RTR-5, 6.9", quote=FAILED, level=Level.PROFILE,
             profile=("P1-RTR-5",), rows=_first("P1-RTR-5/FAILED-VERIFIER"))
async def verifier_failing_at_the_transport_is_failed_over(ctx: RouterContext) -> None:
    """Its status stays fresh but every stream is reset: after three failures over 0.5 s the router fails over."""
    await _failing_resources(ctx, "transport")


@router_case("RTR-P1-RTR-6-DIGEST-001", area="failover", section="P1-RTR-6, 4.2, 6.9",
             level=Level.PROFILE, profile=("P1-RTR-6",), rows=("P1-RTR-6",))
async def a_log_that_does_not_give_its_digest_is_not_resumed(ctx: RouterContext) -> None:
    """The commit log's last record carries a digest its tokens do not give (written there by the harness); the
    verifier expires. Whatever the router then does with the session, it does not open it elsewhere with a resume
    whose committed_tokens do not give the resume's digest (P1-RTR-6: it "checks them against the last record's
    digest"; found by a planted bug in an independent router, which compared the lengths only)."""
    session = await ctx.open_ok()
    committed = ctx.commit(session, 2)
    served = ctx.serving(session).serving(session.id)
    assert served is not None
    bad = CommitRecord(served.epoch, served.round + 1, tuple(ctx.tokens(2)), len(committed) + 2, bytes(32))
    opening = ctx.accepted_opens(session)[0].opening
    assert opening is not None
    ctx.require(ctx.cache.append(opening.commit_log, bad).stored, "the harness could not append to the commit log "
                "(a harness fault)", row="P1-RTR-6")
    epoch, mark = ctx.epoch(session), ctx.history.mark()
    await ctx.fail_verifier(ctx.serving(session), "expire")
    fenced = await ctx.wait(lambda: any(isinstance(record, FenceRecord) and record.epoch > epoch
                                        for record in ctx.log(session)))
    if fenced:
        await quiet(ctx, AFTER_FENCE_S)
    resumed = [seen for seen in ctx.history.of(OpenSeen, session.id, since=mark)
               if seen.opening is not None and seen.opening.resume is not None]

    def gives_its_digest(seen: OpenSeen) -> bool:
        resume = seen.opening.resume if seen.opening else None
        return resume is not None and seen.tokens_object is not None and session.d(seen.tokens_object) == resume.digest

    wrong = [seen for seen in resumed if not gives_its_digest(seen)]
    first = wrong[0].opening.resume if wrong and wrong[0].opening else None
    where = wrong[0].verifier if wrong else ""
    ctx.check(not wrong, f"the router opened the session {len(wrong)} time(s) (first at {where}) "
              "with a resume whose committed_tokens do not give its digest: the commit log's tokens do not give its "
              "last record's digest", row="P1-RTR-6", expected="no resume from a log that fails the digest check",
              actual=f"resume {first.to_obj() if first else None}, tokens {wrong[0].tokens_object if wrong else None}")
    ctx.note(f"after the fence the router opened the session {len(resumed)} time(s) with a resume")


@router_case("RTR-P1-RTR-5-INTERMITTENT-001", area="failover", section="P1-RTR-5, 6.9", quote=FAILED,
             level=Level.PROFILE, profile=("P1-RTR-5",), rows=("P1-RTR-5/FAILED-VERIFIER", "R-6.7-FRONT-END"))
async def intermittent_failures_are_not_a_failure(ctx: RouterContext) -> None:
    """Two of every three requests to the serving verifier get 503 for a while, each only after 0.6 s, the third is
    served at once: never three failures in a row, so the verifier has not failed and the session stays where it
    is. Found by two planted bugs in an independent router: one counted failures without resetting the count on a
    success; one failed a verifier after two failures in a row, which quick 503s would have kept within P1-RTR-5's
    0.5 s (slow ones span more, so only the count of three can keep the session in place)."""
    session = await ctx.open_ok()
    committed = ctx.commit(session, 2)
    serving = ctx.serving(session)
    mark = ctx.history.mark()
    # The front's reads are the router's requests to the verifier: some fail, none three in a row. The served ones
    # answer at once (no long poll), so a router that abandons a read it waited for still sees them answered.
    serving.fault, serving.output_wait_s, serving.error_delay_s = Fault.INTERMITTENT, 0.0, SLOW_FAILURE_S
    try:
        await ctx.read_front(session, count=len(committed) + 1, timeout_s=INTERMITTENT_S)
    finally:
        serving.fault, serving.output_wait_s, serving.error_delay_s = Fault.NONE, OUTPUT_WAIT_S, 0.0
    ctx.note(f"{serving.intermittent_count} requests reached {serving.name} while it failed intermittently (each "
             f"failure answered after {SLOW_FAILURE_S} s)")
    moved = [seen for seen in ctx.history.of(OpenSeen, session.id, since=mark) if seen.verifier != serving.name]
    ctx.check(not moved, f"the router failed the session over to {moved[0].verifier if moved else ''} although no "
              f"three requests in a row to {serving.name} had failed", row="P1-RTR-5/FAILED-VERIFIER",
              expected="the session stays at its verifier", actual=f"{len(moved)} session-open(s) elsewhere")
    if not moved:
        more = ctx.commit(session, 2)
        tokens, _ = await ctx.read_front(session, count=len(committed) + 2)
        ctx.check(tokens == committed + more, "after the intermittent failures the front did not deliver the "
                  "committed output", row="R-6.7-FRONT-END", expected=str(committed + more), actual=str(tokens))


@router_case("RTR-P1-RTR-5-QUICK-001", area="failover", section="P1-RTR-5, 6.9", quote=FAILED, level=Level.PROFILE,
             profile=("P1-RTR-5",), rows=("P1-RTR-5/FAILED-VERIFIER", "R-6.7-FRONT-END"))
async def quick_failures_are_not_a_failure(ctx: RouterContext) -> None:
    """The serving verifier answers the next three requests with 503 at once, then serves again, while the front
    reads three times at once: three failures in a row, but over less than 0.5 s, so the verifier has not failed
    and the session stays where it is. Judged only when the three failures the harness answered span under 0.4 s
    (a router that reads one at a time, slowly, is not judged here). Found by a planted bug in an independent
    router that failed a verifier after any three failures in a row."""
    session = await ctx.open_ok()
    committed = ctx.commit(session, 2)
    serving = ctx.serving(session)
    mark = ctx.history.mark()
    serving.fault, serving.burst_left, serving.output_wait_s = Fault.BURST, 3, 0.0
    try:
        # Three front reads at once, so the router's three reads of the verifier fail together, whatever its pace of
        # retries (a router that paces one read at a time spans more and is not judged here).
        reads = await asyncio.gather(*(ctx.read_front(session, count=len(committed)) for _ in range(3)))
    finally:
        serving.fault, serving.burst_left, serving.output_wait_s = Fault.NONE, 0, OUTPUT_WAIT_S

    def moved() -> list[OpenSeen]:
        return [seen for seen in ctx.history.of(OpenSeen, session.id, since=mark) if seen.verifier != serving.name]

    # A router that declares the verifier failed fences and reopens at once; one that does not shows nothing.
    await ctx.history.wait_for(lambda: bool(moved()), AFTER_FENCE_S)
    failures = [seen.at for seen in ctx.history.of(OutputServed, session.id, since=mark)
                if seen.verifier == serving.name and seen.status >= 500]
    if len(failures) < 3:
        ctx.note(f"only {len(failures)} of the router's reads met the failing verifier: nothing to judge")
        return
    span = failures[2] - failures[0]
    ctx.note(f"the router's three failed reads were answered over {span:.3f} s")
    if span >= QUICK_SPAN_S:
        ctx.note(f"they span {QUICK_SPAN_S} s or more: a router may count them as failed (not judged)")
        return
    elsewhere = moved()
    ctx.check(not elsewhere, f"the router failed the session over to {elsewhere[0].verifier if elsewhere else ''} "
              f"after three failures in a row that spanned {span:.3f} s, less than P1-RTR-5's 0.5 s",
              row="P1-RTR-5/FAILED-VERIFIER", expected="the session stays at its verifier",
              actual=f"{len(elsewhere)} session-open(s) elsewhere")
    if not elsewhere:
        delivered = [tokens for tokens, _ in reads]
        ctx.check(all(tokens == committed for tokens in delivered), "after the quick failures the front did not "
                  "deliver the committed output to every read", row="R-6.7-FRONT-END", expected=str(committed),
                  actual=str(delivered))


@router_case("RTR-6.9-FAILOVER-006", area="failover", section="6.9, P1-RTR-5", quote=f"{FAILED} ... {FENCE_FIRST} "
             f"{RESUME}", level=Level.MUST, profile=("P1-RTR-5",), requires=("verifiers:2",),
             rows=_first("R-6.9-ROUTER-RESUME"))
async def failed_verifier_is_not_the_new_one(ctx: RouterContext) -> None:
    """Every request to the serving verifier gets 503 while its status stays fresh, and every other verifier's
    status has expired: after the fence the router does not open the session at the failed verifier again (§6.9:
    "at a new verifier"); it resumes at another once that one reports again, or ends the session (D-JUDGE-R11).
    With a fresh alternative a router that ranks failed verifiers last never shows this (found by a planted bug in
    an independent router)."""
    session = await ctx.open_ok()
    committed = ctx.commit(session, 2)
    failing = ctx.serving(session)
    others = [verifier for verifier in ctx.verifiers.values() if verifier is not failing]
    await asyncio.gather(*(ctx.expire(verifier) for verifier in others))
    epoch, mark = ctx.epoch(session), ctx.history.mark()
    reader = asyncio.ensure_future(ctx.read_front(session, count=len(committed), timeout_s=3 * ctx.act_s))
    try:
        await ctx.fail_verifier(failing, "errors")
        fenced = await ctx.wait(lambda: any(isinstance(record, FenceRecord) and record.epoch > epoch
                                            for record in ctx.log(session)))
        ctx.require(fenced, f"the router did not fence the session within {ctx.act_s:.0f} s of its verifier "
                    "failing (every request 503)", row=ctx.helper_row("P1-RTR-5/FAILED-VERIFIER"))
        await quiet(ctx, AFTER_FENCE_S)  # no verifier but the failed one is eligible now
        again = opens_at(ctx, session, {failing.name}, since=mark)
        ctx.check(not again, f"with no other verifier eligible, the router opened the session again at "
                  f"{failing.name}, the verifier that had failed, instead of at a new verifier",
                  row="R-6.9-ROUTER-RESUME", expected="no session-open until another verifier reports",
                  actual=", ".join(f"session-open at {seen.verifier}" for seen in again))
        await others[0].status.revive()
        opened = await ctx.resumed(session, epoch=epoch + 1)
        if opened is None:
            # No text says what a router does while no verifier can take the session: waiting for one, as most
            # do, or failing the session (D-JUDGE-R11). A session left neither resumed nor ended is judged.
            _, last = await ctx.read_front(session, final=True, start=len(committed), timeout_s=ctx.act_s)
            ended = last is not None and last.final
            ctx.require(ended, f"the router neither resumed the session at {others[0].name} within "
                        f"{ctx.act_s:.0f} s of its status report nor ended it", row=ctx.helper_row(
                            "R-6.9-ROUTER-RESUME"), expected=f"a session-open at {others[0].name}",
                        actual="no resume, no final output")
            ctx.note("with no verifier eligible the router ended the session instead of waiting for one "
                     f"(finish {last.finish if last else None}): no text decides")
            return
        ctx.require(opened.verifier == others[0].name, f"the session was resumed at {opened.verifier}, not at "
                    f"{others[0].name}, the only verifier eligible", row=ctx.helper_row("R-6.9-ROUTER-RESUME"),
                    expected=others[0].name, actual=opened.verifier)
    finally:
        tokens, _ = await reader
    ctx.check(tokens == committed, "the front did not deliver the committed tokens from the new verifier",
              row="R-6.7-FRONT-END", expected=str(committed), actual=str(tokens))


@router_case("RTR-6.9-FAILOVER-005", area="failover", section="6.9, P1-RTR-6", quote=f"{RESUME} ... {RTR6}",
             level=Level.MUST, profile=("P1-RTR-6", "P1-LOG-2"), requires=("verifiers:3",),
             rows=("R-6.9-ROUTER-RESUME", "P1-RTR-6", "R-6.9-OLD-EPOCH", *FAILOVER_ROWS))
async def records_after_a_higher_fence_do_not_count(ctx: RouterContext) -> None:
    """A non-enforcing MLC: the partitioned first verifier appends after the fence; the next failover resumes from
    the last record no higher fence precedes, not from the old verifier's late one. The new verifier commits a
    round at epoch 2 first: records of the fence's own epoch after it count (a router counting only records of a
    higher epoch than the last fence would resume from before the first failover, losing that round: found by a
    planted bug in an independent router)."""
    ctx.cache.enforce_fences = False
    session = await ctx.open_ok()
    committed = ctx.commit(session, 3)
    old = ctx.serving(session)
    await failover(ctx, session, "partition")
    committed += ctx.commit(session, 2)  # round 2 at epoch 2, at the new verifier
    late = old.commit(session.id, ctx.tokens(2))  # lands after the fence: it must never count
    ctx.check(late.appended, "the harness's non-enforcing MLC refused the late append (a harness fault)",
              row="P1-RTR-6")
    opened, _ = await failover(ctx, session)
    resume = opened.opening.resume if opened.opening else None
    # Counting the fenced late record is P1-RTR-6's deviation; any other resume misses the last record that counts
    # under either reading, which §6.9's "reads the last commit record" forbids.
    # (The late record is round 2, committed 5 too: only its digest and tokens tell it apart.)
    fenced = resume is not None and resume.digest == late.record.digest
    ctx.check(resume is not None and (resume.round, resume.committed, resume.digest) == (2, 5, session.d(committed))
              and opened.tokens_object == tuple(committed), "the second failover did not resume from the last "
              "record no higher fence "
              "precedes", row="P1-RTR-6" if fenced else "R-6.9-ROUTER-RESUME",
              expected=f"round 2, committed 5, {committed}",
              actual=f"{resume.to_obj() if resume else None}, tokens {opened.tokens_object}")
    await _resume_then_serve(ctx, session, committed)


@router_case("RTR-6.9-PARTITION-001", area="failover", section="6.9, 6.7", quote=f"{FENCE_FIRST} ... Proposals "
             "carrying an older epoch are rejected, and front ends discard output carrying an older epoch, so a "
             "recovered old verifier cannot extend the session.", level=Level.MUST, profile=("P1-FRONT-2",),
             rows=("R-6.9-OLD-EPOCH", "P1-FRONT-2/OUTPUT", *FAILOVER_ROWS))
async def partitioned_verifier_cannot_extend_the_session(ctx: RouterContext) -> None:
    """The front was reading from the first verifier when it was partitioned; it keeps serving its old epoch (and
    commits past the fence into a non-enforcing MLC), but the front's output is the new verifier's."""
    ctx.cache.enforce_fences = False
    session = await ctx.open_ok()
    committed = ctx.commit(session, 3)
    tokens, _ = await ctx.read_front(session, count=3)
    old = ctx.serving(session)
    await failover(ctx, session, "partition")
    old.commit(session.id, ctx.tokens(2))  # the zombie's tokens: released at epoch 1, never committed
    more = ctx.commit(session, 2)
    rest, _ = await ctx.read_front(session, count=2, start=len(tokens))
    ctx.check(tokens + rest == committed + more, "the front delivered output the partitioned old verifier served",
              row="R-6.9-OLD-EPOCH", expected=str(committed + more), actual=str(tokens + rest))
    ctx.serving(session).end(session.id, 4)
    await ctx.serving(session).send_event(session.id, 4)
    await ctx.read_front(session, final=True, start=len(tokens) + len(rest))


@router_case("RTR-6.9-PARTITION-002", area="failover", section="6.9, 6.7, P1-RTR-6", quote=f"{FENCE_FIRST} ... "
             f"{OLD_EPOCH}", level=Level.MUST, profile=("P1-FRONT-2", "P1-RTR-6"),
             rows=("R-6.9-OLD-EPOCH", "P1-FRONT-2/OUTPUT", *FAILOVER_ROWS))
async def old_epoch_output_during_the_failover_is_discarded(ctx: RouterContext) -> None:
    """A front read is in flight at the first verifier when it is partitioned. The harness holds the router's first
    write to the MLC after its fence (P1-RTR-6: the committed_tokens object, written before the session-open), and
    meanwhile the old verifier commits past the fence into a non-enforcing MLC and answers that read at its old
    epoch. The front never delivers those tokens: the router discards output of an epoch below its fence's even
    before the session is open at the new verifier (found by a planted bug in an independent router, which dropped
    old-epoch output only once the new verifier served the session)."""
    ctx.cache.enforce_fences = False
    session = await ctx.open_ok()
    committed = ctx.commit(session, 3)
    tokens, _ = await ctx.read_front(session, count=3)
    old = ctx.serving(session)
    served = old.serving(session.id)
    assert served is not None
    old.output_wait_s = IN_FLIGHT_READ_S  # the read below stays at the old verifier across the failover
    served.polled.clear()
    reader = asyncio.ensure_future(ctx.read_front(session, count=2, start=len(tokens), timeout_s=3 * ctx.act_s))
    more: list[int] = []
    try:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(served.polled.wait()), ctx.act_s)
        ctx.require(served.polled.is_set(), "the front's read did not reach the verifier serving the session within "
                    f"{ctx.act_s:.0f} s", row=ctx.helper_row("R-6.7-FRONT-END"))
        log_path = _log_path(ctx, session)
        fence_gate = ctx.cache.faults.hold(log_path, methods=frozenset({"PUT"}))
        await ctx.fail_verifier(old, "partition")
        after_fence = None
        if await fence_gate.wait_arrival(ctx.act_s):
            after_fence = ctx.cache.faults.hold(None, methods=frozenset({"PUT"}))
            fence_gate.open()
            await after_fence.wait_arrival(ctx.act_s)
        fence_gate.open()
        mark = ctx.history.mark()
        zombie = old.commit(session.id, ctx.tokens(2))  # released at epoch 1, past the fence: never committed
        answered = await ctx.wait(lambda: any(seen.verifier == old.name and seen.output is not None
                                              and seen.output.tokens for seen in ctx.history.of(
                                                  OutputServed, session.id, since=mark)))
        if answered:
            await quiet(ctx, 0.3)  # the router reads the old verifier's answer while its resume is held
        else:
            ctx.note("the front's read was no longer in flight at the old verifier when it released its tokens")
        if after_fence is not None:
            after_fence.open()
        opened = await ctx.resumed(session, epoch=2)
        ctx.require(opened is not None, "no failover after the partition", row=ctx.helper_row("R-6.9-ROUTER-RESUME"))
        await ctx.assigned(session, epoch=2)
        more = ctx.commit(session, 2)
        ctx.note(f"the old verifier released {list(zombie.record.emitted)} at epoch 1 after the fence")
    finally:
        rest, _ = await reader
    ctx.check(tokens + rest == committed + more, "the front delivered output the partitioned old verifier served "
              "at its old epoch while the failover was under way", row="R-6.9-OLD-EPOCH",
              expected=str(committed + more), actual=str(tokens + rest))


@router_case("RTR-6.9-EXPIRED-001", area="failover", section="6.1, 6.9, P1-RTR-2", quote=f"{NOT_EXPIRED} ... "
             f"{ELIGIBLE}", level=Level.MUST_NOT, profile=("P1-RTR-2",), requires=("verifiers:3",),
             rows=("R-6.1-NOT-EXPIRED", "P1-RTR-2/ELIGIBLE", "R-6.9-ROUTER-RESUME", "R-6.9-REASSIGN",
                   "P1-RTR-5/FAILED-VERIFIER"))
async def never_resume_at_an_expired_verifier(ctx: RouterContext) -> None:
    """Of the two other verifiers one has expired: the failover resumes at the live one."""
    session = await ctx.open_ok()
    ctx.commit(session, 2)
    serving = ctx.serving(session)
    others = [v for v in ctx.verifiers.values() if v is not serving]
    await ctx.expire(others[0])
    mark = ctx.history.mark()
    await failover(ctx, session)
    wrong = opens_at(ctx, session, {others[0].name}, since=mark)
    ctx.check(not wrong, f"the session was resumed at {others[0].name}, whose status had expired",
              expected=others[1].name, actual=others[0].name)


@router_case("RTR-6.9-EVENTS-001", area="failover", section="6.5.2, 6.9, P1-RTR-2",
             level=Level.MUST, profile=("P1-RTR-2",),
             rows=("R-6.5.2-ROUTER-SWITCH", "P1-RTR-2/EVENT-SENDER", "R-6.9-ROUTER-RESUME", "R-6.9-REASSIGN",
                   "P1-RTR-5/FAILED-VERIFIER"))
async def events_follow_the_current_verifier(ctx: RouterContext) -> None:
    """After a failover the old verifier's events get 403 and the new verifier's switch reassigns the session."""
    session = await ctx.open_ok()
    old = ctx.serving(session)
    await failover(ctx, session)
    answer = await old.send_event(session.id, 2, epoch=1)
    ctx.expect_refusal(answer, "P1-RTR-2/EVENT-SENDER", what="a switch event from the old verifier")
    assigned = await switch(ctx, session)
    ctx.check(assigned is not None and assigned.assignment is not None and assigned.assignment.epoch == 2,
              "the new verifier's switch event did not lead to an assignment at epoch 2",
              expected="an assignment at epoch 2", actual=str(assigned.assignment.epoch
                                                              if assigned and assigned.assignment else None))


@router_case("RTR-6.9-FENCE-ORDER-001", area="failover", section="6.9", level=Level.MUST,
             rows=FAILOVER_ROWS)
async def nothing_opens_while_the_fence_is_held(ctx: RouterContext) -> None:
    """The harness's MLC holds the router's fence PUT: while it waits, no verifier receives the session's resume."""
    session = await ctx.open_ok()
    ctx.commit(session, 2)
    gate = ctx.cache.faults.hold(_log_path(ctx, session), methods=frozenset({"PUT"}))
    mark = ctx.history.mark()
    await ctx.fail_verifier(ctx.serving(session), "expire")
    arrived = await gate.wait_arrival(ctx.act_s)
    if arrived:
        await quiet(ctx, 0.4)
    early = [seen for seen in ctx.history.of(OpenSeen, session.id, since=mark)]
    ctx.check(not early, "the session was opened at another verifier while the router's fence append was still "
              "waiting at the MLC", expected="no session-open before the fence", actual=str(len(early)))
    gate.open()
    opened = await ctx.resumed(session, epoch=2)
    ctx.require(opened is not None, "no failover after the fence was let through", row="R-6.9-ROUTER-RESUME")
    await ctx.assigned(session, epoch=2)


@router_case("RTR-6.8-CONDITIONAL-001", area="failover", section="6.8, P1-LOG-1", quote=CONDITIONAL,
             level=Level.MUST, profile=("P1-LOG-1",), rows=FAILOVER_ROWS)
async def fence_append_survives_a_concurrent_writer(ctx: RouterContext) -> None:
    """The old verifier's last record lands between the router's read and its PUT: the conditional PUT fails, the
    router reads again and appends after it, and the resume includes that record."""
    session = await ctx.open_ok()
    committed = ctx.commit(session, 2)
    old = ctx.serving(session)
    served = old.serving(session.id)
    assert served is not None
    last = ctx.tokens(2)
    record = CommitRecord(served.epoch, served.round + 1, tuple(last), len(committed) + 2,
                          session.d(committed + last))
    path = ctx.cache.path_of(served.commit_log)
    assert path is not None
    ctx.cache.faults.insert_before_put(path, encode_record(record))
    opened, _ = await failover(ctx, session)
    resume = opened.opening.resume if opened.opening else None
    ctx.check(resume is not None and resume.committed == 4 and opened.tokens_object == tuple(committed + last),
              "the resume lost the record another writer appended just before the fence",
              row="R-6.8-CONDITIONAL", expected=f"committed 4, {committed + last}",
              actual=f"{resume.to_obj() if resume else None}, tokens {opened.tokens_object}")
