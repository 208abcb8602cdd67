"""Epoch fencing (§6.3 step 2 and Commit, §6.8, §6.9, P1-LOG-1, P1-LOG-2).

The harness plays the recovering router of §6.9: it appends a fence record
``{epoch: E+1}`` to the session's commit log in its own cache, then lets the
assigned drafter propose the next round. With an enforcing cache the IUT's
append is answered 409; with a non-enforcing one it succeeds and the IUT must
find the fence by reading the log back (§6.8). Either way the round must
produce no verdict and no output, and the IUT must stop serving the session:
a later read of its output is refused too. Which non-2xx answer these get is
not fixed by the draft (the reference's 409 sdcp-stale-epoch is D-VER-7), so
any is accepted and noted.
"""

from __future__ import annotations

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.contexts.verifier import TrackedSession, VerifierContext
from sdcp_conformance.harness.iut import Answer
from sdcp_conformance.protocol.messages import Output
from sdcp_conformance.protocol.problems import ProblemType
from sdcp_conformance.suites.verifier import CATALOGUE
from sdcp_conformance.suites.verifier.conversation import append_fence, commit_records, still_works

FENCING = 'Fencing: if epoch differs from the session epoch, respond 409 with problem type "sdcp-stale-epoch".'
FENCED_APPEND = ("If the append fails because the log has been fenced, the verifier MUST discard the round, release "
                 "no output, and stop serving the session.")
READ_BACK = ("If the MLC cannot enforce this rule, the verifier MUST read the log after its conditional append and "
             "treat its append as failed if a fence record with a higher epoch precedes its own record.")
FENCE_RULE = "after a fence record with epoch E+1, appends carrying an epoch lower than E+1 MUST fail."
LOG_EPOCH = ("A commit record appended by a verifier MUST carry the session's current epoch and follow the last record "
             "it wrote.")


FENCING_ROW = "R-6.3-FENCING"
FENCED_ROWS = ("R-6.3-FENCED-APPEND", "R-6.8-RECORD")
READ_BACK_ROWS = ("R-6.8-READ-BACK", "R-6.3-FENCED-APPEND", "R-6.8-RECORD")


@CATALOGUE.case("VER-6.3-FENCING-001", area="fencing", section="6.3", quote=FENCING, level=Level.MUST,
                rows=(FENCING_ROW,))
async def higher_epoch_proposal(ctx: VerifierContext) -> None:
    """A proposal carrying epoch E+1 is 409 sdcp-stale-epoch and commits nothing."""
    session = await ctx.open_ok()
    await ctx.assign_ok(session)
    answer = await ctx.propose(session, ctx.greedy(session, 1), epoch=session.epoch + 1)
    ctx.expect_refusal(answer, FENCING_ROW, what="a proposal with a higher epoch")
    await still_works(ctx, session, "after the refused epoch")


@CATALOGUE.case("VER-6.3-FENCING-002", area="fencing", section="6.3, 6.9",
                level=Level.MUST, rows=(FENCING_ROW,))
async def lower_epoch_proposal(ctx: VerifierContext) -> None:
    """A proposal carrying epoch 0 (below the session's 1) is 409 sdcp-stale-epoch and commits nothing."""
    session = await ctx.open_ok()
    await ctx.assign_ok(session)
    await still_works(ctx, session, "round 1")
    answer = await ctx.propose(session, ctx.greedy(session, 1), epoch=session.epoch - 1)
    ctx.expect_refusal(answer, FENCING_ROW, what="a proposal with a lower epoch")
    await still_works(ctx, session, "after the refused epoch")


@CATALOGUE.case("VER-6.3-FENCING-003", area="fencing", section="6.3", quote=f"{FENCING} ... Idempotency:",
                level=Level.MUST, rows=(FENCING_ROW,))
async def epoch_checked_before_idempotency(ctx: VerifierContext) -> None:
    """Round 1 re-sent with epoch E+1 after its verdict is 409 sdcp-stale-epoch, not the stored verdict."""
    session = await ctx.open_ok()
    await ctx.assign_ok(session)
    tokens = ctx.greedy(session, 1)
    body = ctx.proposal(session, tokens, epoch=session.epoch + 1)
    await ctx.propose_ok(session, tokens)
    answer = await ctx.send_proposal(body)
    ctx.expect_refusal(answer, FENCING_ROW, what="round 1 re-sent with a higher epoch after its verdict")


def _no_verdict(ctx: VerifierContext, answer: Answer, what: str) -> None:
    if answer.ok:
        ctx.deviate("R-6.3-FENCED-APPEND", f"{what}: the IUT sent a verdict ({answer.describe()}) for a round whose "
                    "commit-log append was fenced", expected=["no verdict (any non-2xx)"], actual=answer.describe())
        return
    if answer.status == 409 and answer.problem_type is ProblemType.STALE_EPOCH:
        return
    ctx.note(f"{what}: answered {answer.describe()} (accepted: any non-2xx; the reference answers 409 "
             "sdcp-stale-epoch, D-VER-7)")


async def _stopped_serving(ctx: VerifierContext, session: TrackedSession) -> None:
    """§6.3: after the fenced append the IUT "MUST ... stop serving the session": a read of its output is refused
    (any non-2xx; the reference answers 409 sdcp-stale-epoch, D-VER-7). An answer is a deviation, and one holding
    tokens beyond those committed before the fence also released the fenced round."""
    answer = await ctx.output(session, 0)
    if not answer.ok:
        ctx.note(f"GET output after the fence: {answer.describe()} (stopped serving)")
        return
    output = ctx.expect_ok(answer, Output, what="GET output after the fence")
    tokens = list(output.tokens)
    ctx.check(len(tokens) <= len(session.output) and tokens == session.output[: len(tokens)],
              f"output after the fence holds {len(tokens)} tokens, beyond the {len(session.output)} committed "
              "before it: the fenced round released output", row="R-6.3-FENCED-APPEND",
              expected=str(session.output), actual=str(tokens))
    ctx.deviate("R-6.3-FENCED-APPEND", "the IUT still served the session's output after its commit-log append was "
                "fenced (§6.3: it MUST stop serving the session)", expected=["a refusal (any non-2xx)"],
                actual=answer.describe())


def _fence_kept(ctx: VerifierContext, session: TrackedSession, committed_before: int, *, enforcing: bool) -> None:
    records = ctx.read_log(session)
    fences = [index for index, record in enumerate(records) if isinstance(record, dict) and set(record) == {"epoch"}
              and record["epoch"] > session.epoch]
    ctx.require(bool(fences), "the fence record is no longer in the commit log: the IUT's append removed it",
                row="R-6.8-RECORD", expected="the fence {epoch: 2} stays in the log", actual=str(records))
    after = [record for record in records[fences[0] + 1:] if isinstance(record, dict) and "round" in record]
    if enforcing:
        ctx.check(not after, "a commit record follows the fence in the log", row="R-6.8-RECORD",
                  expected="no record after the fence", actual=str(after))
    else:
        ctx.note(f"non-enforcing cache: {len(after)} record(s) of the IUT follow the fence (allowed; §6.8 has the "
                 "verifier read back and treat its append as failed)")
    before = [record for record in records[: fences[0]] if isinstance(record, dict) and "round" in record]
    ctx.check(len(before) == committed_before, f"{len(before)} commit records precede the fence, expected "
              f"{committed_before}", row="R-6.8-RECORD", expected=str(committed_before), actual=str(len(before)))


async def _fenced_round(ctx: VerifierContext, *, enforcing: bool, rounds_before: int) -> None:
    ctx.cache.enforce_fences = enforcing
    session = await ctx.open_ok()
    await ctx.assign_ok(session)
    for number in range(rounds_before):
        await still_works(ctx, session, f"round {number + 1} before the fence")
    append_fence(ctx, session, session.epoch + 1)
    body = ctx.proposal(session, ctx.greedy(session, 2))
    _no_verdict(ctx, await ctx.send_proposal(body), "the round after the fence")
    _no_verdict(ctx, await ctx.send_proposal(body), "a retry of the fenced round")
    await _stopped_serving(ctx, session)
    _fence_kept(ctx, session, rounds_before, enforcing=enforcing)


@CATALOGUE.case("VER-6.3-FENCING-004", area="fencing", section="6.3, 6.8, 6.9",
                quote=f"{FENCED_APPEND} ... {FENCE_RULE}", level=Level.MUST, profile=("P1-LOG-1", "P1-LOG-2"),
                rows=FENCED_ROWS, exclusive=True)
async def fenced_by_enforcing_cache(ctx: VerifierContext) -> None:
    """After a fence {epoch: 2} in the log (enforcing cache), the next round gets no verdict and releases no output."""
    await _fenced_round(ctx, enforcing=True, rounds_before=1)


@CATALOGUE.case("VER-6.8-FENCING-005", area="fencing", section="6.3, 6.8", quote=f"{READ_BACK} ... {FENCED_APPEND}",
                level=Level.MUST, profile=("P1-LOG-2",), rows=READ_BACK_ROWS, exclusive=True)
async def fenced_by_read_back(ctx: VerifierContext) -> None:
    """With a cache that does not enforce fences, the IUT reads back, sees the fence, and releases nothing."""
    await _fenced_round(ctx, enforcing=False, rounds_before=1)


@CATALOGUE.case("VER-6.3-FENCING-006", area="fencing", section="6.3, 6.8",
                quote=f"{FENCED_APPEND} ... {FENCE_RULE}", level=Level.MUST, profile=("P1-LOG-1", "P1-LOG-3"),
                rows=FENCED_ROWS, exclusive=True)
async def fence_before_first_commit(ctx: VerifierContext) -> None:
    """A fence that is the log's first record (enforcing cache) stops round 1: no verdict, no output."""
    await _fenced_round(ctx, enforcing=True, rounds_before=0)


@CATALOGUE.case("VER-6.8-FENCING-007", area="fencing", section="6.8", quote=f"{READ_BACK} ... {FENCED_APPEND}",
                level=Level.MUST, profile=("P1-LOG-2", "P1-LOG-3"),
                rows=READ_BACK_ROWS, exclusive=True)
async def fence_before_first_commit_read_back(ctx: VerifierContext) -> None:
    """A fence that is the log's first record (non-enforcing cache) stops round 1: no verdict, no output."""
    await _fenced_round(ctx, enforcing=False, rounds_before=0)


@CATALOGUE.case("VER-6.8-FENCING-008", area="fencing", section="6.3, 6.8",
                quote=f"{LOG_EPOCH} ... Commit: it appends the emitted tokens to the committed prefix, updates n and "
                      "d[n], and appends a commit record (epoch, round, emitted tokens, n, and d[n])",
                level=Level.MUST, profile=("P1-LOG-1",), rows=("R-6.8-RECORD",))
async def records_carry_the_epoch(ctx: VerifierContext) -> None:
    """After three rounds the log holds three records: epoch 1, rounds 1–3, each verdict's emitted, n and d[n]."""
    session = await ctx.open_ok()
    await ctx.assign_ok(session)
    for number in range(3):
        await still_works(ctx, session, f"round {number + 1}", count=number + 1)
    records = commit_records(ctx, session)
    ctx.require(len(records) == 3, f"the log holds {len(records)} commit records after 3 rounds",
                expected="3", actual=str(records))
    for record, number in zip(records, (1, 2, 3), strict=True):
        verdict = session.verdicts[number]
        expected = {"epoch": session.epoch, "round": number, "emitted": list(verdict.emitted),
                    "committed": verdict.committed, "digest": verdict.digest}
        seen = {key: record.get(key) for key in expected}
        ctx.check(seen == expected, f"the commit record of round {number} is not (epoch, round, emitted, n, d[n]) "
                  "of its verdict", expected=str(expected), actual=str(record))
