"""Opening a session (§6.1, §4.1, P1-FRONT-1, P1-RTR-2): epoch 1, a commit log in the MLC, the front's contract
digest for digest and its prompt, at a verifier whose status is unexpired — or a 422 for a contract the router
cannot serve."""

from __future__ import annotations

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.contexts.router import RouterContext
from sdcp_conformance.harness.roles.router_history import OpenSeen
from sdcp_conformance.models.registry import mock_model
from sdcp_conformance.protocol.codec import decode
from sdcp_conformance.suites.router import router_case
from sdcp_conformance.suites.router.support import ELIGIBLE, NOT_EXPIRED, opens_at

SESSION_OPEN = ("The router selects a verifier and sends session-open with epoch 1 and a commit_log reference in the "
                "MLC.")
FRONT_OPEN = ("`POST client/sessions` with `{contract, prompt: [* uint] / cache-ref, ? session: session-id}` makes the "
              "router open the session as §6.1 says, with that contract unchanged (digest for digest) and that prompt, "
              "and answers 201 `{session, verifier, epoch}` once the verifier has answered the session-open.")
CANNOT_SERVE = ("A contract the router cannot serve (no permitted drafter, no verifier for its target) gets 422 "
                "`sdcp-bad-contract`.")
OPEN_ROWS = ("R-6.1-SESSION-OPEN", "R-4.1-CONTRACT-UNCHANGED", "P1-FRONT-1/OPEN")


@router_case("RTR-6.1-OPEN-001", area="session-open", section="6.1, 4.1, P1-FRONT-1", quote=f"{SESSION_OPEN} ... "
             f"{FRONT_OPEN}", level=Level.MUST, profile=("P1-FRONT-1", "P1-MSG-1"), rows=OPEN_ROWS)
async def open_carries_the_fronts_contract(ctx: RouterContext) -> None:
    """A contract with every optional member reaches the verifier digest for digest, at epoch 1, and the front
    answers 201 {session, verifier, epoch} only after that verifier answered. Its limits sit at the CDDL's bounds
    (m_max 64), where a router that clamps them to its own would change the contract (found by a planted bug in an
    independent router)."""
    contract = ctx.contract(sampling={"temperature_milli": 700, "top_k": 5, "seed": 3}, low_ratio=40, self_load=60,
                            self_max=4, scope=bytes(range(16)), stop=[3, 4], fallback=[1, 2, 3, 5], low_rounds=2,
                            rule=2, m_max=64, max_new=1_000_000)
    front, answer = await ctx.open(contract, (7, 1, 120, 0))
    ctx.require(front is not None and answer.ok, f"the front did not open the session: {answer.describe()}",
                row="P1-FRONT-1/OPEN", expected="201", actual=answer.describe())
    assert front is not None
    ctx.check(answer.status == 201, f"the front answered {answer.status}, not 201", row="P1-FRONT-1/OPEN",
              expected="201", actual=str(answer.status))
    body = decode(answer.body)
    opened = ctx.accepted_opens(front)
    ctx.require(bool(opened), "the front answered before any verifier accepted the session-open (or none did)",
                row="P1-FRONT-1/OPEN", expected="the session-open answered first", actual="none")
    first = opened[0]
    ctx.check(isinstance(body, dict) and body.get("session") == front.id and body.get("epoch") == 1
              and body.get("verifier") == ctx.verifiers[first.verifier].uri,
              "the front's answer does not name the session, epoch 1 and the verifier that opened it",
              row="P1-FRONT-1/OPEN", expected=f"{{session, verifier: {ctx.verifiers[first.verifier].uri}, "
              "epoch: 1}", actual=str(body))


@router_case("RTR-6.1-OPEN-002", area="session-open", section="6.1, P1-FRONT-1, P1-MLC-2",
             quote=f"{SESSION_OPEN} ... {FRONT_OPEN}", level=Level.MUST, profile=("P1-FRONT-1", "P1-MLC-2"),
             rows=OPEN_ROWS)
async def prompt_given_as_a_cache_ref(ctx: RouterContext) -> None:
    """A prompt given as an MLC reference opens the session with that prompt (the reference or its tokens)."""
    uri = f"{ctx.target.cache}prompts/{ctx.new_session_id().hex()}"
    ctx.cache.put_tokens(uri, [4, 8, 15, 16, 23])
    await ctx.open_ok(prompt=uri)


@router_case("RTR-6.1-OPEN-003", area="session-open", section="6.1, P1-FRONT-1",
             level=Level.PROFILE, profile=("P1-FRONT-1",), rows=("P1-FRONT-1/OPEN", "R-6.1-SESSION-OPEN"))
async def router_chooses_the_session_id(ctx: RouterContext) -> None:
    """Without `session` the router chooses a 16-octet id, opens the session under it and names it."""
    front, answer = await ctx.open(give_id=False)
    ctx.require(front is not None and answer.ok, f"the front did not open the session: {answer.describe()}",
                expected="201 {session, verifier, epoch}", actual=answer.describe())
    assert front is not None
    ctx.check(len(front.id) == 16 and bool(ctx.accepted_opens(front)),
              "the session the front named was not opened at any verifier under that id",
              expected="a session-open with the named id", actual=front.id.hex())


@router_case("RTR-P1-FRONT-1-SESSION-ID-001", area="session-open", section="P1-FRONT-1, 6.1", quote=FRONT_OPEN,
             level=Level.PROFILE, profile=("P1-FRONT-1",), rows=("P1-FRONT-1/SESSION-ID", "R-6.1-SESSION-OPEN"))
async def client_chooses_the_session_id(ctx: RouterContext) -> None:
    """With `session` given, the router opens the session under that id and names it (the harness follows any
    other id it names, judging the difference on every case's open: D-JUDGE-R8)."""
    chosen = ctx.new_session_id()
    front, answer = await ctx.open(session=chosen)
    ctx.require(front is not None and answer.ok, f"the front did not open the session: {answer.describe()}",
                row="R-6.1-SESSION-OPEN", expected="201 {session, verifier, epoch}", actual=answer.describe())
    assert front is not None
    opened = await ctx.wait(lambda: bool(ctx.accepted_opens(front)))
    ctx.check(front.id == chosen and opened, "the session was not opened at a verifier under the id given",
              expected=f"a session-open for {chosen.hex()}", actual=front.id.hex() if opened else "none accepted")


@router_case("RTR-6.1-OPEN-004", area="session-open", section="6.1, P1-LOG-3", level=Level.MUST,
             profile=("P1-LOG-3",), rows=("R-6.1-SESSION-OPEN",))
async def each_session_has_its_own_commit_log(ctx: RouterContext) -> None:
    """Two sessions get two commit logs: one session's records can never be resumed as the other's."""
    first = await ctx.open_ok()
    second = await ctx.open_ok()
    logs = [seen.opening.commit_log for front in (first, second) for seen in ctx.accepted_opens(front)[:1]
            if seen.opening is not None]
    ctx.check(len(logs) == 2 and logs[0] != logs[1], "two sessions were opened with the same commit_log",
              expected="distinct commit logs", actual=str(logs))


@router_case("RTR-6.1-EXPIRED-001", area="session-open", section="6.1, P1-RTR-2", quote=f"{NOT_EXPIRED} ... {ELIGIBLE}",
             level=Level.MUST_NOT, profile=("P1-RTR-2",), requires=("verifiers:3",),
             rows=("R-6.1-NOT-EXPIRED", "P1-RTR-2/ELIGIBLE"))
async def never_open_at_an_expired_verifier(ctx: RouterContext) -> None:
    """With two verifiers' status expired, sessions open only at the third."""
    expired = {"verifier-1", "verifier-2"}
    for name in sorted(expired):
        await ctx.expire(ctx.verifiers[name])
    for _ in range(3):
        front = await ctx.open_ok()
        wrong = opens_at(ctx, front, expired)
        ctx.check(not wrong, f"a session-open went to {sorted({seen.verifier for seen in wrong})} after its status "
                  "had expired", expected="verifier-3 only", actual=str(sorted({s.verifier for s in wrong})))


@router_case("RTR-6.1-EXPIRED-002", area="session-open", section="6.1, P1-RTR-2", quote=f"{NOT_EXPIRED} ... {ELIGIBLE}",
             level=Level.MUST_NOT, profile=("P1-RTR-2", "P1-FRONT-1"), rows=("R-6.1-NOT-EXPIRED", "P1-RTR-2/ELIGIBLE"))
async def no_open_when_every_verifier_expired(ctx: RouterContext) -> None:
    """With every verifier's status expired, the front opens nothing and no verifier receives the session."""
    for played in ctx.verifiers.values():
        await ctx.expire(played)
    front, answer = await ctx.open()
    ctx.check(not answer.ok, f"the front answered {answer.describe()} with no eligible verifier",
              expected="a refusal (no session opened)", actual=answer.describe())
    if front is not None:
        reached = ctx.history.of(OpenSeen, front.id)
        ctx.check(not reached, f"the session-open reached {sorted({s.verifier for s in reached})}, whose status had "
                  "expired", expected="no session-open", actual=str(len(reached)))


@router_case("RTR-6.1-CANNOT-SERVE-001", area="session-open", section="P1-FRONT-1, 6.1",
             level=Level.PROFILE, profile=("P1-FRONT-1",), rows=("P1-FRONT-1/CANNOT-SERVE", "R-6.1-PERMITTED"))
async def no_permitted_drafter_is_refused(ctx: RouterContext) -> None:
    """A contract whose `drafters` names no configured drafter's model gets 422 sdcp-bad-contract at the front."""
    contract = ctx.contract(drafters=None)
    contract["drafters"] = [mock_model("ctx-draft-near").model_sha256]
    front, answer = await ctx.open(contract)
    ctx.expect_refusal(answer, "P1-FRONT-1/CANNOT-SERVE", what="a contract no configured drafter may serve")
    if front is not None:
        assigned = ctx.assignments(front)
        ctx.check(not assigned, "a drafter whose model the contract does not permit was assigned",
                  row="R-6.1-PERMITTED", expected="no assignment", actual=str([s.drafter for s in assigned]))


@router_case("RTR-6.1-CANNOT-SERVE-002", area="session-open", section="P1-FRONT-1, 6.1",
             level=Level.PROFILE, profile=("P1-FRONT-1",), rows=("P1-FRONT-1/CANNOT-SERVE",))
async def no_verifier_for_the_target_is_refused(ctx: RouterContext) -> None:
    """A contract for a target none of the verifiers serves (each refuses it, 422) gets 422 at the front."""
    other = mock_model("ctx")
    contract = ctx.contract(target=other.model_sha256, tokenizer=other.tokenizer_sha256)
    _, answer = await ctx.open(contract)
    ctx.expect_refusal(answer, "P1-FRONT-1/CANNOT-SERVE", what="a contract for a target no verifier serves")


@router_case("RTR-6.1-CANNOT-SERVE-003", area="session-open", section="4.1, P1-FRONT-1",
             quote="A contract that contains a key not defined by this document MUST be rejected with problem type "
                   "\"sdcp-bad-contract\" ... " + CANNOT_SERVE,
             level=Level.MUST, profile=("P1-FRONT-1",), rows=("R-4.1-UNKNOWN-KEY-ROUTER", "P1-FRONT-1/CANNOT-SERVE"))
async def invalid_contract_is_refused(ctx: RouterContext) -> None:
    """A contract with a key §4.1 does not define is rejected (§4.1, at whichever party gets it): 422
    sdcp-bad-contract."""
    contract = ctx.contract(priority=3)
    _, answer = await ctx.open(contract)
    ctx.expect_refusal(answer, "R-4.1-UNKNOWN-KEY-ROUTER", "P1-FRONT-1/CANNOT-SERVE",
                       what="a contract with an unknown key")


@router_case("RTR-6.1-CANNOT-SERVE-004", area="session-open", section="P1-FRONT-1, 6.1", quote=f"{FRONT_OPEN} ... "
             f"{CANNOT_SERVE}", level=Level.PROFILE, profile=("P1-FRONT-1",), requires=("verifiers:2",),
             rows=("P1-FRONT-1/OPEN",))
async def another_verifier_serves_the_target(ctx: RouterContext) -> None:
    """The least loaded verifier does not serve the contract's target (it answers the session-open 422), another
    does: the router opens the session there and the front answers 201 (P1-FRONT-1: 422 only when no verifier
    serves the target; found by a planted bug in an independent router)."""
    refusing, *others = ctx.verifiers.values()
    refusing.serves_target = False
    for other in others:
        other.status.load = 60
        await other.status.report(recorded=False)
    front, answer = await ctx.open()
    tried = front is not None and any(seen.verifier == refusing.name for seen in ctx.history.of(OpenSeen, front.id))
    if not tried:
        ctx.note(f"the router did not try {refusing.name} (the least loaded) first: what it does with a 422 from one "
                 "verifier was not seen")
    ctx.check(answer.ok, f"the front answered {answer.describe()} although {', '.join(o.name for o in others)} "
              "serve(s) the contract's target: P1-FRONT-1 refuses a contract only when no verifier serves it",
              row="P1-FRONT-1/OPEN", expected="201, the session opened at another verifier", actual=answer.describe())
    if answer.ok and front is not None:
        opened = {seen.verifier for seen in ctx.accepted_opens(front)}
        ctx.check(bool(opened - {refusing.name}), "the front answered 201 but no verifier serving the target "
                  "accepted the session-open", row="P1-FRONT-1/OPEN", expected=", ".join(o.name for o in others),
                  actual=", ".join(sorted(opened)) or "none")
