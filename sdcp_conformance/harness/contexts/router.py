"""What a router case works with: the played verifiers, drafters and MLC, the front client, and the judge.

A case drives a scenario — open a session at the router's front, let a played
verifier commit, make instances expire or fail, send events, state a policy —
and waits, with deadlines, for the router to act. Judging happens on the
history: at the end of every case (:meth:`RouterContext.conclude`) the
checker of :mod:`~.roles.router_checks` runs over the sessions the case
started and each violation becomes a finding against the row it breaks,
when the case declares that row; a case adds the checks that only its
scenario can make (a failover that must happen, a drafter that must not be
assigned).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Protocol

from sdcp_conformance.harness.case import Case
from sdcp_conformance.harness.environment import PlayedParts, RoleContext
from sdcp_conformance.harness.iut import Answer
from sdcp_conformance.harness.judging import session_id_for
from sdcp_conformance.harness.roles.played_drafters import PlayedDrafter
from sdcp_conformance.harness.roles.played_front import FrontClient
from sdcp_conformance.harness.roles.played_verifier import FINISHED, Fault, PlayedVerifier
from sdcp_conformance.harness.roles.router_checks import check_session
from sdcp_conformance.harness.roles.router_history import AssignSeen, History, OpenSeen, PutSeen
from sdcp_conformance.harness.roles.router_truth import Facts, FrontSession, counted
from sdcp_conformance.harness.roles.router_violations import Violation
from sdcp_conformance.judge import TABLE
from sdcp_conformance.models.registry import mock_model
from sdcp_conformance.protocol.codec import decode
from sdcp_conformance.protocol.errors import MalformedMessage
from sdcp_conformance.protocol.messages import Output

DEFAULT_PROMPT = (5, 9, 14)
ACT_S = 10.0
EMBEDDED_ACT_S = 2.0
"""D-JUDGE-R5: how long the harness waits for a router to act (open, assign, fail over) before it judges that
it did not: 10 s for a router elsewhere, generous against a slow IUT; 2 s for the embedded reference (and its
mutants), which acts within a few hundred milliseconds, so that a mutant that never acts costs little."""
SHORT_TTL_MS = 150
"""The TTL of the last status an instance sends before its status is made to expire."""


TARGET_MODEL = "bigram"
"""The target the played verifiers serve (its SHA-256 is the contract's ``target``)."""

class RouterParts(PlayedParts, Protocol):
    """What a router case takes from its environment (:class:`~..specs.router.RouterEnvironment`)."""

    front: FrontClient
    fronts: dict[bytes, FrontSession]
    verifiers: dict[str, PlayedVerifier]
    drafters: dict[str, PlayedDrafter]
    history: History
    session_nonce: bytes

    @property
    def facts(self) -> Facts: ...

    async def prepare(self) -> None: ...


class RouterContext(RoleContext[RouterParts]):
    """One router case's view of the harness."""

    def __init__(self, env: RouterParts, case: Case, seed: int, run: str = "main") -> None:
        super().__init__(env, case, seed, run)
        self.history = env.history
        self.sessions: list[FrontSession] = []
        self.act_s = EMBEDDED_ACT_S if env.config.embedded else ACT_S
        self.verifiers: dict[str, PlayedVerifier] = env.verifiers
        """The played verifiers, by party name (``verifier-1``, …)."""
        self.drafters: dict[str, PlayedDrafter] = env.drafters
        """The played drafters, by party name (``drafter-1``, …)."""
        self.front: FrontClient = env.front
        """The played front: the router's clients' side (§6.7)."""

    def helper_row(self, row: str) -> str:
        """The row a shared helper judges against: ``row`` where the case declares it (or it is ambient), else
        the case's own sentence — a session a case cannot even get served fails the case it is in."""
        return row if row in self.case.rows or TABLE[row].ambient else self.case.primary_row

    # ------------------------------------------------------------------ contracts and tokens

    def contract(self, drafters: Sequence[str] | None = ("drafter-1", "drafter-2", "drafter-3"),
                 **overrides: Any) -> dict[str, Any]:
        """A contract for the played verifiers' target, permitting the models of the named drafters."""
        target = mock_model(TARGET_MODEL)
        contract: dict[str, Any] = {
            "target": target.model_sha256, "tokenizer": target.tokenizer_sha256, "rule": 1, "m_max": 8,
            "max_new": 64, "stop": [], "low_rounds": 1000, "fallback": [1],
        }
        if drafters is not None:
            contract["drafters"] = sorted({self.env.drafters[name].digest for name in drafters})
        contract.update(overrides)
        return {key: value for key, value in contract.items() if value is not None}

    def tokens(self, count: int) -> list[int]:
        return [self.rng.randrange(128) for _ in range(count)]

    def new_session_id(self) -> bytes:
        return session_id_for(self.rng, getattr(self.env, "session_nonce", bytes(16)))

    # ------------------------------------------------------------------ the front (P1-FRONT-1)

    async def open(self, contract: Mapping[str, Any] | None = None, prompt: Sequence[int] | str = DEFAULT_PROMPT,
                   *, session: bytes | None = None, give_id: bool = True) -> tuple[FrontSession | None, Answer]:
        """Ask the front to open a session; the session is tracked once the router names it."""
        chosen = session if session is not None else (self.new_session_id() if give_id else None)
        sent = dict(contract or self.contract())
        asked = self.history.mark()
        answer = await self.env.front.open(sent, prompt, chosen)
        session_id = chosen
        if answer.ok:
            try:
                body = decode(answer.body)
                named = body.get("session") if isinstance(body, dict) else None
                session_id = named if isinstance(named, bytes) and chosen is None else chosen
                if isinstance(named, bytes) and chosen is not None and named != chosen:
                    # P1-FRONT-1 opens the session given; one opened under another id is followed under that id,
                    # so that the rest of the case judges the router's work, not a session nobody opened.
                    self.deviate("P1-FRONT-1/SESSION-ID", "the front opened the session under another "
                                 "id than the one given", expected=[chosen.hex()], actual=named.hex())
                    session_id = named
            except MalformedMessage:
                pass
        if session_id is None:
            return None, answer
        tokens = tuple(prompt) if not isinstance(prompt, str) else tuple(self.env.cache.tokens(prompt) or ())
        front = FrontSession(session_id, sent, prompt if isinstance(prompt, str) else tuple(prompt), tokens, asked)
        self.sessions.append(front)
        self.env.fronts[session_id] = front
        return front, answer

    async def open_ok(self, contract: Mapping[str, Any] | None = None, prompt: Sequence[int] | str = DEFAULT_PROMPT,
                      *, assigned: bool = True) -> FrontSession:
        """Open a session; the front must answer 2xx and, by default, a drafter must be assigned.

        D-JUDGE-R7: any 2xx opens the session here (P1-MSG-4: "A client treats any 2xx as success"); the exact
        201 and the members of its answer that P1-FRONT-1 names are judged by RTR-6.1-OPEN-001 alone."""
        front, answer = await self.open(contract, prompt)
        self.require(front is not None and answer.ok, f"the front did not open the session: {answer.describe()}",
                     row=self.helper_row("P1-FRONT-1/OPEN"), expected="201 {session, verifier, epoch}",
                     actual=answer.describe())
        assert front is not None
        # The 2xx says the router opened the session (P1-FRONT-1: it answers "once the verifier has answered the
        # session-open"); a router that answered without opening it anywhere is judged for that first, not for
        # the assignment that then never comes (a front answering garbage with 200 was failed on the assignment).
        opened = await self.wait(lambda: bool(self.accepted_opens(front)))
        self.require(opened, f"the front answered {answer.describe()}{_body_note(answer)}, yet none of the "
                     f"harness's verifiers accepted a session-open for the session within {self.act_s:.0f} s",
                     row=self.helper_row("R-6.1-SESSION-OPEN"), expected="session-open at a verifier (§6.1) "
                     "before the front's 201 (P1-FRONT-1)", actual="no session-open accepted")
        followed = self._follow_opened_prompt(front)
        if assigned:
            self.require(await self.assigned(followed) is not None, "no drafter was assigned to the opened session "
                         f"within {self.act_s:.0f} s{self._refused_puts(followed)}",
                         row=self.helper_row("R-6.1-ASSIGN-ORDER"))
        return followed

    def _refused_puts(self, front: FrontSession) -> str:
        """Why the assignment never came, where the harness's verifier refused the router's PUT …/drafter (§6.1:
        the router informs the verifier first): a router judged for the assignment it never sent is told why."""
        refused = [seen for seen in self.puts(front) if seen.status >= 300]
        if not refused:
            return ""
        seen = refused[0]
        assert seen.assignment is not None
        reason = (f"m_init {seen.assignment.m_init}, which P1-DRF-2 has a verifier refuse with 400 (a drafter too)"
                  if seen.assignment.m_init < 1 else "see the transcript")
        return (f"; the router's PUT …/drafter to {seen.verifier} was answered {seen.status} "
                f"({len(refused)} such): {reason}")

    def _follow_opened_prompt(self, front: FrontSession) -> FrontSession:
        """D-JUDGE-R10: a session the router opened with other prompt tokens than the front's is followed with
        the router's (the difference is judged on the open, P1-FRONT-1/OPEN)."""
        opens = self.accepted_opens(front)
        opening = opens[0].opening if opens else None
        if opening is None or isinstance(opening.prompt, str) or front.same_prompt(opening.prompt):
            return front
        followed = replace(front, opened_prompt=tuple(opening.prompt))
        self.sessions[self.sessions.index(front)] = followed
        self.env.fronts[front.id] = followed
        return followed

    # ------------------------------------------------------------------ what the router did

    def accepted_opens(self, front: FrontSession) -> list[OpenSeen]:
        return [seen for seen in self.history.of(OpenSeen, front.id) if seen.accepted and seen.opening is not None]

    def epoch(self, front: FrontSession) -> int:
        return max((seen.opening.epoch for seen in self.accepted_opens(front) if seen.opening), default=0)

    def serving(self, front: FrontSession) -> PlayedVerifier:
        """The played verifier holding the session at its highest epoch."""
        epoch = self.epoch(front)
        opens = [seen for seen in self.accepted_opens(front) if seen.opening and seen.opening.epoch == epoch]
        self.require(bool(opens), "the session is open at none of the harness's verifiers",
                     row=self.helper_row("R-6.1-SESSION-OPEN"))
        return self.env.verifiers[opens[-1].verifier]

    def assignments(self, front: FrontSession, *, since: int = 0) -> list[AssignSeen]:
        return [seen for seen in self.history.of(AssignSeen, front.id, since=since)
                if seen.assignment is not None and 200 <= seen.status < 300]

    def drafter_of(self, front: FrontSession) -> PlayedDrafter | None:
        """The drafter of the latest assignment the router sent."""
        found = self.assignments(front)
        return self.env.drafters[found[-1].drafter] if found else None

    def puts(self, front: FrontSession, *, since: int = 0) -> list[PutSeen]:
        return [seen for seen in self.history.of(PutSeen, front.id, since=since) if seen.assignment is not None]

    async def wait(self, predicate: Callable[[], bool], timeout_s: float | None = None) -> bool:
        return await self.history.wait_for(predicate, self.act_s if timeout_s is None else timeout_s)

    async def assigned(self, front: FrontSession, *, since: int = 0, epoch: int | None = None,
                       timeout_s: float | None = None) -> AssignSeen | None:
        """The first assignment for the session after ``since`` (at ``epoch``, if given), waiting for it."""
        def found() -> AssignSeen | None:
            return next((seen for seen in self.assignments(front, since=since) if seen.assignment is not None
                         and (epoch is None or seen.assignment.epoch == epoch)), None)

        await self.wait(lambda: found() is not None, timeout_s)
        return found()

    async def resumed(self, front: FrontSession, *, epoch: int, timeout_s: float | None = None) -> OpenSeen | None:
        """The accepted session-open of a failover at ``epoch`` or higher, waiting for it."""
        def found() -> OpenSeen | None:
            return next((seen for seen in self.accepted_opens(front) if seen.opening
                         and seen.opening.epoch >= epoch), None)

        await self.wait(lambda: found() is not None, timeout_s)
        return found()

    # ------------------------------------------------------------------ what the harness makes happen

    def commit(self, front: FrontSession, count: int = 2, *, verifier: PlayedVerifier | None = None) -> list[int]:
        """A round at the serving verifier: its commit record appended, its tokens released (§6.3)."""
        tokens = self.tokens(count)
        played = verifier or self.serving(front)
        seen = played.commit(front.id, tokens)
        self.require(seen.released or verifier is not None, f"{played.name} could not commit: its append was "
                     "fenced although no failover was asked for", row=self.helper_row("R-6.9-FENCE-FIRST"))
        return tokens

    async def expire(self, reporter_owner: PlayedVerifier | PlayedDrafter, ttl_ms: int = SHORT_TTL_MS, *,
                     must_fire: bool = True) -> None:
        """Let the instance's status expire: one last report with a short TTL, silence, then the TTL passes.

        An injected fault (:mod:`~..self_check`): it took effect if no report was sent from the silencing until the
        expiry passed (:meth:`~..roles.status_reports.StatusReporter.expiry_fault`)."""
        reporter = reporter_owner.status
        await reporter.silence(ttl_ms)
        self.transcript.self_check.register(reporter.expiry_fault(
            f"status of {reporter_owner.name} let expire ({ttl_ms} ms TTL)", must_fire=must_fire))
        await reporter.wait_expired()

    async def fail_verifier(self, played: PlayedVerifier, how: str) -> None:
        """Make a verifier fail as the draft and profile name it (§6.9, P1-RTR-5). The failure is an injected fault
        the case relies on: its status expiry (``expire``, ``partition``) or its failed answers (``errors``,
        ``transport``: :meth:`~..roles.played_verifier.PlayedVerifier.inject`) must take effect
        (:mod:`~..self_check`)."""
        if how == "expire":
            await self.expire(played)
        elif how == "errors":
            played.fault = Fault.ERRORS
        elif how == "transport":
            played.fault = Fault.TRANSPORT
        elif how == "partition":  # its status no longer arrives, but it keeps serving its old epoch
            played.zombie = True
            await self.expire(played)
        else:
            raise ValueError(f"unknown failure {how!r}")

    async def read_front(self, front: FrontSession, *, count: int | None = None, final: bool = False,
                         start: int = 0, timeout_s: float | None = None) -> tuple[list[int], Output | None]:
        """Read the front's output from ``start`` until ``count`` tokens (or the final output) arrived."""
        def done(tokens: list[int], last: Output | None) -> bool:
            if final:
                return last is not None and last.final
            return count is not None and len(tokens) >= count

        return await self.env.front.read(front.id, until=done, timeout_s=self.act_s if timeout_s is None else timeout_s,
                                         start=start)

    def truth(self, front: FrontSession) -> tuple[int, ...]:
        """The committed output by the commit log (records no higher fence precedes)."""
        return counted(self.log(front)).tokens

    def log(self, front: FrontSession) -> tuple[Any, ...]:
        opens = [seen for seen in self.history.of(OpenSeen, front.id) if seen.opening is not None]
        return self.env.cache.log(opens[0].opening.commit_log) if opens and opens[0].opening else ()

    # ------------------------------------------------------------------ judging (the history checker)

    def violations(self, front: FrontSession) -> list[Violation]:
        return check_session(self.history, self.env.facts, front, self.log(front))

    def judge_sessions(self) -> None:
        """Every violation in the case's sessions, as a finding against its row when the case declares it."""
        seen: set[tuple[str, str]] = set()
        for front in self.sessions:
            for violation in self.violations(front):
                key = (violation.row, violation.message)
                if key in seen:
                    continue
                seen.add(key)
                if violation.row in self.case.rows or TABLE[violation.row].ambient:
                    self.deviate(violation.row, violation.message,
                                 expected=[violation.expected] if violation.expected else [],
                                 actual=violation.actual)
                else:
                    self.note(f"also seen ({violation.row}, judged by other cases): {violation.message}")

    async def prepare(self) -> None:
        """Before the case's body: every played instance reports afresh, unloaded (the environment's
        :meth:`~..specs.router.RouterEnvironment.prepare`), so every case starts from the same state."""
        await self.env.prepare()

    async def conclude(self) -> None:
        """Judge the case's sessions, then end them at their verifiers so later cases do not meet them."""
        self.judge_sessions()
        for front in self.sessions:
            opens = self.accepted_opens(front)
            if not opens:
                continue
            epoch = self.epoch(front)
            holder = next(s.verifier for s in reversed(opens) if s.opening and s.opening.epoch == epoch)
            played = self.env.verifiers[holder]
            served = played.serving(front.id)
            if served is None or served.ended or served.fenced or served.epoch != epoch:
                continue
            played.fault, played.zombie = Fault.NONE, False
            played.end(front.id, FINISHED)
            await played.send_event(front.id, FINISHED)



def _body_note(answer: Answer) -> str:
    """For a 2xx front answer whose body is not the map P1-FRONT-1 names: what it is instead (evidence)."""
    if not answer.ok or not answer.body:
        return ""
    try:
        body = decode(answer.body)
    except MalformedMessage as exc:
        return f" with a body that is not well-formed CBOR ({exc})"
    return "" if isinstance(body, dict) else f" with a body that is a CBOR {type(body).__name__}, not a map"

__all__ = ["ACT_S", "DEFAULT_PROMPT", "EMBEDDED_ACT_S", "SHORT_TTL_MS", "RouterContext", "RouterParts"]
