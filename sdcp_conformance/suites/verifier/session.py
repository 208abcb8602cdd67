"""Session open, d[0] and session resources (§4.2, §5.1, §5.2, §6.1, P1-MSG-3/5, P1-MLC-2, P1-SES-1).

Every expected digest is recomputed by the harness from the tokens and the
contract it sent (the tracked session's d[0] and chain).
"""

from __future__ import annotations

import base64

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.contexts.verifier import TrackedSession, VerifierContext
from sdcp_conformance.harness.self_check import deliberate
from sdcp_conformance.models.registry import load_manifest
from sdcp_conformance.protocol.codec import encode
from sdcp_conformance.protocol.messages import SessionState, Verdict
from sdcp_conformance.suites.verifier import CATALOGUE
from sdcp_conformance.suites.verifier.conversation import still_works

OPEN = ("The verifier validates the contract (it MUST refuse a contract whose target digest does not match its "
        "model), computes or loads the KV cache of the prompt, computes d[0], and answers with session-state "
        "(round 0, committed 0).")
D0 = ('d[0] = SHA-256( "SDCP-PREFIX-1" || 0x00 || contract_digest || uint32(P) || uint32(t[0]) || ... || '
      'uint32(t[P-1]) )')
MSG5 = ("Opening an existing session id with the same epoch and an identical contract returns its current "
        "session-state (idempotent retry); with a different contract it is 422 `sdcp-bad-contract`.")
UNKNOWN_KEYS = "Unknown map keys MUST be ignored, except in the contract (Section 4.1)."


async def _opened(ctx: VerifierContext, session: TrackedSession, what: str = "POST sessions") -> SessionState:
    state = ctx.expect_ok(await ctx.open(session), SessionState, what=what, row="R-6.1-OPEN")
    ctx.check_state(session, state, what)
    ctx.check(state.round == 0 and state.epoch == session.epoch,
                f"{what}: session-state has round {state.round}, epoch {state.epoch}; expected round 0, "
              f"epoch {session.epoch}", row="R-6.1-OPEN", expected=f"round 0, epoch {session.epoch}",
              actual=f"round {state.round}, epoch {state.epoch}")
    if state.state not in (None, 0):
        ctx.note(f"session-state.state is {state.state} for a new session (P1-STATE-1: 0 active)")
    return state


@CATALOGUE.case("VER-6.1-SESSION-001", area="session", section="6.1, 4.2", quote=f"{OPEN} ... {D0}",
                level=Level.MUST, rows=("R-6.1-OPEN",))
async def open_reports_d0(ctx: VerifierContext) -> None:
    """A new session answers round 0, committed 0, its epoch and the harness's d[0] (long prompt, high ids)."""
    prompt = [127, 0, 1, 2, 64, 65, 126, 3, 3, 3, 99, 100, 101, 5, 9, 14, 77]
    session = ctx.track(contract=ctx.contract(max_new=33, stop=[2]), prompt=prompt)
    await _opened(ctx, session)


@CATALOGUE.case("VER-6.1-SESSION-002", area="session", section="6.1, 4.2", quote=f"{OPEN} ... {D0}",
                level=Level.MUST, requires=("model:ctx",), rows=("R-6.1-OPEN",))
async def open_reports_d0_ctx_model(ctx: VerifierContext) -> None:
    """A session on the ctx model answers the harness's d[0], and its first greedy round extends it."""
    # A prompt of the manifest's: its greedy continuation is recorded (bf16-safe margins), so the harness knows it
    # without running the model in torch.
    session = ctx.track("ctx", prompt=load_manifest().greedy_prompts().prompts[0].tokens)
    await _opened(ctx, session)
    await ctx.assign_ok(session)
    await still_works(ctx, session, "the first round", count=2)


@CATALOGUE.case("VER-6.1-SESSION-003", area="session", section="6.1", quote=MSG5, level=Level.PROFILE,
                profile=("P1-MSG-5",), rows=("P1-MSG-5/IDEMPOTENT-OPEN",))
async def reopen_is_idempotent(ctx: VerifierContext) -> None:
    """Re-sending the identical session-open after a round returns the current state, not round 0."""
    session = await ctx.open_ok()
    await ctx.assign_ok(session)
    await still_works(ctx, session, "round 1", count=2)
    answer = await ctx.open(session)
    if ctx.check(answer.ok, f"an identical session-open retry {answer.refused()}",
                 expected="2xx current session-state", actual=answer.describe()):
        state = ctx.expect_ok(answer, SessionState, what="the retried POST sessions")
        current = (session.round, len(session.output), session.digest)
        ctx.check((state.round, state.committed, state.digest) == current,
                  f"the retried open answered round {state.round}, committed {state.committed} instead of the "
                  f"current round {session.round}, committed {len(session.output)}",
                  expected=f"round {session.round}, committed {len(session.output)}",
                  actual=f"round {state.round}, committed {state.committed}")
    await still_works(ctx, session, "after the retried open")


@CATALOGUE.case("VER-6.1-SESSION-004", area="session", section="6.1", quote=MSG5, level=Level.PROFILE,
                profile=("P1-MSG-5",), rows=("P1-MSG-5/CONFLICT",))
async def reopen_with_another_contract(ctx: VerifierContext) -> None:
    """The same id with a different contract is 422 sdcp-bad-contract, and the session is untouched."""
    session = await ctx.open_ok()
    await ctx.assign_ok(session)
    await still_works(ctx, session, "round 1")
    body = ctx.opening(session, contract=ctx.contract(max_new=65))
    answer = await ctx.iut.send("router", "POST", "sessions", body)
    ctx.expect_refusal(answer, "P1-MSG-5/CONFLICT", what="a session-open of an existing id with another contract")
    await still_works(ctx, session, "after the conflicting open")


@CATALOGUE.case("VER-6.1-SESSION-005", area="session", section="6.1",
                level=Level.PROFILE, profile=("P1-SES-1",),
                rows=("P1-SES-1/EMPTY-PROMPT",))
async def empty_prompt(ctx: VerifierContext) -> None:
    """A session-open with an empty prompt is 400 sdcp-bad-message."""
    session = ctx.track(prompt=())
    ctx.expect_refusal(await ctx.open(session), "P1-SES-1/EMPTY-PROMPT", what="a session-open with an empty prompt")


@CATALOGUE.case(
    "VER-6.1-SESSION-006", area="session", section="5.2, 6.1",
    quote="prompt: [* uint] / cache-ref, ; tokens or MLC reference ... Object contents: a token list (`prompt`, "
          "`committed_tokens`) is a CBOR array of uint",
    level=Level.MUST, profile=("P1-MLC-2",), rows=("R-6.1-OPEN", "P1-MLC-2/TOKEN-LIST"),
)
async def prompt_by_cache_reference(ctx: VerifierContext) -> None:
    """A prompt given as a cache-ref is read from the harness's cache: d[0] and the first round use its tokens."""
    tokens = [5, 9, 14, 33, 71, 8]
    uri = ctx.put_object("prompt", encode(tokens))
    session = ctx.track(prompt=tokens)
    state = ctx.expect_ok(await ctx.open(session, prompt=uri), SessionState, what="POST sessions (prompt by reference)")
    ctx.check_state(session, state, "POST sessions (prompt by reference)")
    await ctx.assign_ok(session, prompt=uri)
    await still_works(ctx, session, "the first round after a prompt by reference", count=2)


@CATALOGUE.case(
    "VER-6.1-SESSION-007", area="session", section="6.1, 6.9",
    level=Level.PROFILE, profile=("P1-SES-1", "P1-MSG-5"), rows=("P1-SES-1/HIGHER-EPOCH",),
)
async def higher_epoch_without_resume(ctx: VerifierContext) -> None:
    """Re-opening a session at epoch 2 without resume is 409 sdcp-stale-epoch; epoch 1 carries on."""
    session = await ctx.open_ok()
    await ctx.assign_ok(session)
    await still_works(ctx, session, "round 1")
    answer = await ctx.open(session, epoch=session.epoch + 1)
    ctx.expect_refusal(answer, "P1-SES-1/HIGHER-EPOCH", what="a session-open with a higher epoch and no resume")
    if answer.ok:
        # Taking the open is the deviation (P1-SES-1 alone, NON-STRICT). The IUT then holds the session at epoch 2,
        # where epoch 1's proposals are rightly stale (§6.3 step 2): judging them would judge the open twice.
        ctx.note("the IUT opened the session at the higher epoch; epoch 1 is not tried again")
        return
    await still_works(ctx, session, "after the refused higher-epoch open")


@CATALOGUE.case(
    "VER-6.1-SESSION-008", area="session", section="5.1",
    level=Level.PROFILE, profile=("P1-SES-1",), rows=("P1-SES-1/UNKNOWN-SESSION",),
)
async def unknown_session_resources(ctx: VerifierContext) -> None:
    """GET output, PUT drafter and POST policy on a session id never opened are 404."""
    session = ctx.track()
    answers = [
        ("GET output", await ctx.output(session, 0)),
        ("PUT sessions/{id}/drafter", await ctx.assign(session)),
        ("POST sessions/{id}/policy", await ctx.policy(session, 1, {"temperature_milli": 0})),
    ]
    for what, answer in answers:
        ctx.expect_refusal(answer, "P1-SES-1/UNKNOWN-SESSION", what=f"{what} for an unknown session")


@CATALOGUE.case(
    "VER-6.1-SESSION-009", area="session", section="6.3",
    level=Level.PROFILE, profile=("P1-SES-1",), rows=("P1-SES-1/UNKNOWN-PROPOSAL",),
)
async def unknown_session_proposal(ctx: VerifierContext) -> None:
    """A proposal for a session id never opened is 403 sdcp-not-assigned."""
    session = ctx.track()
    ctx.expect_refusal(await ctx.propose(session, [5]), "P1-SES-1/UNKNOWN-PROPOSAL",
                       what="a proposal for an unknown session")


def _malformed_ids(session_id: bytes) -> list[tuple[str, str]]:
    encoded = base64.urlsafe_b64encode(session_id).rstrip(b"=").decode()
    return [
        ("the id with '=' padding", encoded + "=="),
        ("the id in the standard base64 alphabet ('+' for '-')", encoded.replace("-", "+")),
        ("15 octets", base64.urlsafe_b64encode(session_id[:15]).rstrip(b"=").decode()),
        ("17 octets", base64.urlsafe_b64encode(session_id + b"\x00").rstrip(b"=").decode()),
    ]


@CATALOGUE.case(
    "VER-5.1-SESSION-010", area="session", section="5.1",
    quote="{id} in session paths is the base64url encoding without padding [RFC4648] of the session identifier. ... "
          "`{id}` in paths is base64url without padding of the 16-octet session id; any other length or alphabet "
          "is 400.",
    level=Level.PROFILE, profile=("P1-MSG-3",), rows=("P1-MSG-3/PATH-ID",),
)
async def malformed_path_id(ctx: VerifierContext) -> None:
    """GET output with a padded, standard-alphabet, 15- or 17-octet {id} of an open session is 400."""
    session = ctx.track()
    session.id = b"\xf8" + session.id[1:]  # its base64url starts with '-', which base64 would spell '+'
    await _opened(ctx, session)
    for what, path_id in _malformed_ids(session.id):
        answer = await ctx.iut.send("drafter-1", "GET", f"sessions/{path_id}/output?from=0")
        ctx.expect_refusal(answer, "P1-MSG-3/PATH-ID", what=f"GET output with {what} ({path_id!r})")


@CATALOGUE.case("VER-5.2-SESSION-011", area="session", section="5.2", level=Level.MUST,
                rows=("R-5.2-UNKNOWN-KEYS",))
async def unknown_keys_in_session_open(ctx: VerifierContext) -> None:
    """Unknown keys in a session-open (outside the contract) are ignored: it opens with the same d[0]."""
    session = ctx.track()
    body = ctx.opening(session, priority=3, vendor={"trace": "abc", "n": [1, 2]})
    answer = await ctx.iut.send("router", "POST", "sessions", body)
    state = ctx.expect_ok(answer, SessionState, what="POST sessions with unknown keys", row="R-5.2-UNKNOWN-KEYS")
    ctx.check_state(session, state, "POST sessions with unknown keys")


@CATALOGUE.case("VER-5.2-SESSION-012", area="session", section="5.2", level=Level.MUST,
                rows=("R-5.2-UNKNOWN-KEYS",))
async def unknown_keys_in_assignment_and_proposal(ctx: VerifierContext) -> None:
    """Unknown keys in PUT drafter (also inside its sampling map, which is not the contract's) and in a proposal
    (and its status) are ignored: the round is verified."""
    session = await ctx.open_ok(contract=ctx.contract(sampling={"temperature_milli": 0}))
    sampling = {**session.contract["sampling"], "x_vendor_knob": 7}  # the session's profile, plus an unknown key
    state = ctx.expect_ok(await ctx.assign(session, hint="fast", extra_map={"a": 1}, sampling=sampling), SessionState,
                          what="PUT sessions/{id}/drafter with unknown keys", row="R-5.2-UNKNOWN-KEYS")
    ctx.check_state(session, state, "PUT sessions/{id}/drafter with unknown keys")
    uri = ctx.drafters.uri_of("drafter-1")
    status = {"instance": uri, "role": 1, "load": 0, "queue": 0, "ttl_ms": 5000, "gpu": "h200"}
    tokens = ctx.greedy(session, 3)
    answer = await ctx.propose(session, tokens[:2], trace_id="t-1", status=status)
    verdict = ctx.expect_ok(answer, Verdict, what="a proposal with unknown keys", row="R-5.2-UNKNOWN-KEYS")
    ctx.check(list(verdict.emitted) == tokens, "the round with unknown keys did not commit the greedy tokens",
              expected=str(tokens), actual=str(list(verdict.emitted)))


@CATALOGUE.case(
    "VER-6.1-SESSION-013", area="session", section="5.2",
    quote="Receivers reject malformed CBOR, wrong types, out-of-range values, and missing required members with 400 "
          "(`sdcp-bad-message`, a profile problem type)",
    level=Level.MUST, profile=("P1-MSG-2",), rows=("R-5.2-WELL-FORMED",),
    black_box_note="Accepting a message that is not an instance of its CDDL type is FAILED (D-JUDGE-1); refusing "
                   "it with another 4xx than 400 sdcp-bad-message deviates only from P1-MSG-2 (NON-STRICT).",
)
async def session_open_missing_member(ctx: VerifierContext) -> None:
    """A session-open without commit_log, or with a 15-octet session id, is 400 sdcp-bad-message."""
    session = ctx.track()
    for what, body in (("no commit_log", ctx.opening(session, commit_log=None)),
                       ("a 15-octet session id", {**ctx.opening(session), "session": session.id[:15]})):
        answer = await ctx.iut.send("router", "POST", "sessions", deliberate(body))
        ctx.expect_refusal(answer, "R-5.2-WELL-FORMED", what=f"a session-open with {what}")


@CATALOGUE.case(
    "VER-6.1-SESSION-014", area="session", section="6.1",
    level=Level.PROFILE, profile=("P1-EVT-1", "P1-RTR-3"), rows=("P1-RTR-3/STATE",),
)
async def assignment_returns_current_state(ctx: VerifierContext) -> None:
    """A PUT drafter carrying an outdated round/committed/digest gets the current state back and changes nothing."""
    session = await ctx.open_ok()
    await ctx.assign_ok(session)
    await still_works(ctx, session, "round 1", count=2)
    await still_works(ctx, session, "round 2", count=1)
    answer = await ctx.assign(session, round=0, committed=0, digest=session.d0)
    state = ctx.expect_ok(answer, SessionState, what="PUT sessions/{id}/drafter with outdated members",
                          row="P1-RTR-3/STATE")
    ctx.check((state.round, state.committed, state.digest) == (session.round, len(session.output), session.digest),
              f"PUT drafter answered round {state.round}, committed {state.committed}, not the current "
              f"round {session.round}, committed {len(session.output)}",
              expected=f"round {session.round}, committed {len(session.output)}",
              actual=f"round {state.round}, committed {state.committed}")
    await still_works(ctx, session, "after the outdated assignment")


PATH_ID = "`{id}` in paths is base64url without padding of the 16-octet session id"


@CATALOGUE.case(
    "VER-5.1-SESSION-015", area="session", section="5.1", quote=f"{{id}} in session paths is the base64url encoding "
    f"without padding [RFC4648] of the session identifier. ... {PATH_ID}", level=Level.PROFILE,
    profile=("P1-MSG-3",), rows=("P1-MSG-3/BODY-SESSION",),
    black_box_note="D-JUDGE-PATH-BODY: a PUT …/drafter or POST …/policy whose body names another open session than "
                   "its path is refused with 400 sdcp-bad-message, and changes neither session. The draft and the "
                   "profile do not say so: any deviation is NON-STRICT.",
)
async def body_names_another_session(ctx: VerifierContext) -> None:
    """PUT sessions/{A}/drafter naming drafter-2 and POST sessions/{A}/policy, each with session B in its body, are
    refused; afterwards drafter-1 still serves both sessions."""
    first, second = await ctx.open_ok(), await ctx.open_ok()
    await ctx.assign_ok(first)
    await ctx.assign_ok(second)
    body = ctx.assignment(second, "drafter-2")
    answer = await ctx.iut.send("router", "PUT", f"sessions/{first.path_id}/drafter", body)
    ctx.expect_refusal(answer, "P1-MSG-3/BODY-SESSION", what="PUT sessions/{A}/drafter whose body names session B")
    policy = {"session": second.id, "from_round": second.round + 1, "sampling": {"temperature_milli": 500}}
    answer = await ctx.iut.send("router", "POST", f"sessions/{first.path_id}/policy", policy)
    ctx.expect_refusal(answer, "P1-MSG-3/BODY-SESSION", what="POST sessions/{A}/policy whose body names session B")
    for name, session in (("A", first), ("B", second)):
        tokens = ctx.greedy(session, 2)
        answer = await ctx.propose(session, tokens[:1])
        if not answer.ok:  # which session the IUT changed is its reading of the body or of the path: our decision
            ctx.deviate("P1-MSG-3/BODY-SESSION", f"after the requests about session A that named session B, "
                        f"drafter-1's proposal for session {name} {answer.refused()}: the IUT acted on one of them",
                        expected=["a verdict"], actual=answer.describe())
