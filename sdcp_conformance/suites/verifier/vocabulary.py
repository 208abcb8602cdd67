"""Token ids at the edge of the vocabulary (P1-MSG-2, P1-HASH-2, §6.4): V itself, the first id no model row has.

The CDDL types every token as a uint, so nothing in a message's shape stops a
prompt or a proposal naming token V. An implementation that trusts the id
indexes past its rows: into the next q row, into a crash, or into an accepted
token the target can never emit. Each case sends V where a careful receiver
refuses it, then checks the session is unharmed (P1-JUDGE-2). Where the row
stands is decided once, in the requirement ``P1-MSG-2/TOKEN-RANGE``
(D-JUDGE-VOCAB).
"""

from __future__ import annotations

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.contexts.verifier import VerifierContext
from sdcp_conformance.suites.verifier import CATALOGUE
from sdcp_conformance.suites.verifier.conversation import started, still_works
from sdcp_conformance.suites.verifier.q_preconditions import SAMPLING, seeded_session, then_valid_round
from sdcp_conformance.suites.verifier.seeded_rule2 import RULE2_ROWS, as_published, draft_q, publish, sample_proposal

RANGE_ROW = "P1-MSG-2/TOKEN-RANGE"
RANGE_QUOTE = ("Receivers reject malformed CBOR, wrong types, out-of-range values, and missing required members with "
               "400 (`sdcp-bad-message`, a profile problem type) ... `V`, the vocabulary size used for `q_rows`, is "
               "the model config's `vocab_size`.")
RULE1_QUOTE = ("x[i] is accepted if it equals argmax p[i] ... The output is identical to greedy decoding of the "
               "target model as computed by the verifier's scoring passes, whatever the drafter proposes.")
ZERO_QUOTE = ("a proposal for which q[i](x[i]) is zero is rejected, before any random draw, with problem type "
              "\"sdcp-bad-proposal\".")


@CATALOGUE.case("VER-P1-MSG-2-VOCAB-001", area="vocabulary", section="5.2, 6.1",
                level=Level.PROFILE, profile=("P1-MSG-2", "P1-HASH-2"), rows=(RANGE_ROW,))
async def prompt_token_at_vocab_size(ctx: VerifierContext) -> None:
    """A session-open whose prompt ends with token V is refused (400 sdcp-bad-message)."""
    vocab = ctx.mock().vocab_size
    session = ctx.track(prompt=(5, 9, vocab))
    ctx.expect_refusal(await ctx.open(session), RANGE_ROW, what=f"a session-open whose prompt holds token {vocab} "
                       f"(the vocabulary is 0..{vocab - 1})")


@CATALOGUE.case(
    "VER-6.4-VOCAB-002", area="vocabulary", section="6.4", quote=f"{RULE1_QUOTE} ... {RANGE_QUOTE}",
    level=Level.MUST, profile=("P1-MSG-2",), rows=("R-6.4-RULE1", RANGE_ROW),
    black_box_note="Rule 1 never accepts token V (it is no argmax), so a verdict that accepts it is FAILED; a "
                   "verdict that rejects it and emits the greedy token keeps the draft but not P1-MSG-2 "
                   "(NON-STRICT), as does any answer other than 400 sdcp-bad-message or 422 sdcp-bad-proposal.",
)
async def rule1_proposal_with_token_at_vocab_size(ctx: VerifierContext) -> None:
    """Rule 1, tokens [greedy, V]: refused, or at most the greedy token accepted; the session then goes on."""
    session = await started(ctx)
    vocab = ctx.mock(session.model).vocab_size
    greedy = ctx.greedy(session, 2)
    what = f"a rule-1 proposal [{greedy[0]}, {vocab}] (token {vocab} is outside the vocabulary 0..{vocab - 1})"
    answer = await ctx.propose(session, [greedy[0], vocab])
    if answer.ok:
        verdict = session.verdicts[session.round]  # propose checked and applied it
        ctx.check(verdict.accepted <= 1 and list(verdict.emitted) == greedy,
                  f"{what}: the verdict accepted {verdict.accepted} and emitted {list(verdict.emitted)}; rule 1 "
                  f"accepts only argmax tokens and emits the greedy {greedy}", row="R-6.4-RULE1",
                  expected=f"accepted <= 1, emitted {greedy}", actual=f"accepted {verdict.accepted}, emitted "
                  f"{list(verdict.emitted)}")
    ctx.expect_refusal(answer, RANGE_ROW, what=what)
    await still_works(ctx, session, f"after {what}")


@CATALOGUE.case(
    "VER-6.4-VOCAB-003", area="vocabulary", section="6.3, 6.4", quote=f"{ZERO_QUOTE} ... {RANGE_QUOTE}",
    level=Level.MUST, profile=("P1-MSG-2",), rows=("R-6.4-ZERO-Q", RANGE_ROW, *RULE2_ROWS),
    black_box_note="A row of q_rows holds V values, for tokens 0..V-1: token V has no draft probability, so "
                   "q[1](x[1]) is zero and §6.4 requires 422 sdcp-bad-proposal (400 sdcp-bad-message, P1-MSG-2, is "
                   "accepted too). A verdict is FAILED. The valid round that follows must get exactly the seeded "
                   "outcome, which shows the refused round left no trace.",
)
async def rule2_proposal_with_token_at_vocab_size(ctx: VerifierContext) -> None:
    """Rule 2, x[1] = V with two published rows: a verifier indexing row 1 at V reads row 2's first value."""
    session, sampling = await seeded_session(ctx)
    vocab = ctx.mock(session.model).vocab_size
    proposal = sample_proposal(ctx, session, draft_q("bigram-draft-near", SAMPLING), 2)
    # Row 2 keeps x[2] and gives token 0 half the mass: a verifier that indexes the rows flat reads q[1] "at V"
    # there, a value that is not zero.
    proposal.q[1] = as_published([0.5 * value + (0.5 if token == 0 else 0.0)
                                  for token, value in enumerate(proposal.q[1])])
    proposal.tokens[0] = vocab
    answer = await ctx.propose(session, proposal.tokens, q_rows=publish(ctx, session, proposal, "-vocab"))
    ctx.expect_refusal(answer, "R-6.4-ZERO-Q", RANGE_ROW,
                       what=f"a rule-2 proposal whose x[1] is token {vocab} (outside the vocabulary 0..{vocab - 1})")
    if not answer.ok:
        await then_valid_round(ctx, session, sampling)
