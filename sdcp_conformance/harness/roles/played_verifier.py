"""The verifier the harness plays, for an IUT of any role: one class, its resources by the part it plays.

§5.1 Table 1 lists what a verifier serves. Around a **drafter** under test a
played verifier serves ``POST proposals`` and the drafter's ``GET …/output``
through its :class:`~.proposal_board.VerifierBoard` (the ``board`` option):
each proposal waits there until the case answers it. Around a **router** under
test it serves ``POST sessions`` (§6.1, and the resume of §6.9), ``PUT
sessions/{id}/drafter``, ``POST sessions/{id}/policy`` (§6.6) and ``GET
sessions/{id}/output`` (§6.7) as a correct verifier of the profile would (the
router options: its MLC, history, status reporter and event sender), and
records each request in the :class:`~.router_history.History` with what it saw
then: the commit log when a session-open arrived (was the fence already
there?), the ``committed_tokens`` object of a resume, its own expiry.
The verifier commits only when the case or the campaign tells it to
(:meth:`PlayedVerifier.commit`): it appends a commit record to the session's
log in the harness's MLC and only then releases the tokens as output (§6.3);
a fenced append makes it stop serving the session (§6.8), unless it plays a
zombie — a partitioned verifier that does not read the log back and keeps
serving its old epoch, which the router's front must discard (§6.9). Every
way a verifier can fail is a switch: status expiry (:class:`StatusReporter`),
5xx answers, transport errors.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

from sdcp_conformance.cache.commit_log import CommitRecord
from sdcp_conformance.cache.transcript import render_body
from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.harness.iut import Answer
from sdcp_conformance.harness.roles.played_cache import PlayedCache
from sdcp_conformance.harness.roles.proposal_board import VerifierBoard
from sdcp_conformance.harness.roles.router_history import (
    CommitSeen,
    EventSent,
    History,
    OpenSeen,
    OutputServed,
    PolicySeen,
    PutSeen,
    deterministic,
)
from sdcp_conformance.harness.roles.status_reports import StatusReporter
from sdcp_conformance.harness.self_check import InjectedFault, injected, record_response
from sdcp_conformance.harness.transcript import CaseTranscript, Entry, next_sequence
from sdcp_conformance.protocol.chain import extend_digest, prefix_digest
from sdcp_conformance.protocol.codec import encode
from sdcp_conformance.protocol.contract import digest_of
from sdcp_conformance.protocol.control import Action, Phase
from sdcp_conformance.protocol.errors import MalformedMessage, ProtocolError
from sdcp_conformance.protocol.messages import Assignment, Contract, Output, Policy, SessionOpen, SessionState
from sdcp_conformance.protocol.problems import SDCP_MEDIA_TYPE, ProblemType
from sdcp_conformance.transport.problem import b64url_decode, problem_response, status_problem_response
from sdcp_conformance.transport.types import Request, Response, TransportFault, media_type

OUTPUT_WAIT_S = 1.0
"""D-JUDGE-R3: the played verifiers' output long poll waits up to 1 s (P1-OUT-1 leaves the time to the server),
so a router's front that waits "like the verifier's output" answers a case within about a second."""

ACTIVE, SELF_DECODING, FINISHED, FAILED = Phase.ACTIVE, Phase.SELF_DECODING, Phase.FINISHED, Phase.FAILED
"""P1-STATE-1: session-state.state."""

SendEvent = Callable[[str, dict[str, Any]], Awaitable[Answer]]
"""``send(identity, event body)``: POST events at the router under test."""


class Fault(enum.Enum):
    NONE = "none"
    ERRORS = "errors"
    """Every request is answered with ``error_status`` (a 5xx by default)."""
    TRANSPORT = "transport"
    """No request is answered: the stream is reset."""
    INTERMITTENT = "intermittent"
    """Two requests of every three are answered with ``error_status``, the third as usual: never three failures in
    a row (P1-RTR-5), so the verifier has not failed."""
    BURST = "burst"
    """The next :attr:`PlayedVerifier.burst_left` requests are answered with ``error_status`` at once, later ones
    as usual: failures in a row that span less than P1-RTR-5's 0.5 s when the router asks quickly."""


@dataclass
class ServedSession:
    """What a played verifier holds for one session."""

    id: bytes
    epoch: int
    contract: Contract
    prompt: tuple[int, ...]
    commit_log: str
    tokens: list[int] = field(default_factory=list)
    round: int = 0
    drafter: str | None = None
    state: int = ACTIVE
    fenced: bool = False
    last_put: PutSeen | None = None
    policies: list[Policy] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    polled: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when an output long poll starts waiting for tokens (a case commits once a read is waiting)."""

    @property
    def d0(self) -> bytes:
        return prefix_digest(digest_of(self.contract), self.prompt)

    @property
    def digest(self) -> bytes:
        return extend_digest(self.d0, self.tokens)

    @property
    def ended(self) -> bool:
        return self.state in (FINISHED, FAILED)

    def state_message(self) -> SessionState:
        return SessionState(session=self.id, epoch=self.epoch, round=self.round, committed=len(self.tokens),
                            digest=self.digest, state=self.state)

    def notify(self) -> None:
        self.changed.set()
        self.changed = asyncio.Event()


@dataclass(frozen=True)
class RouterLinks:
    """What a played verifier needs to serve a router under test: the target model it serves, the played MLC its
    commit logs live in, the history it records into, its status reporter and how it sends events."""

    target: bytes
    mlc: PlayedCache
    history: History
    status: StatusReporter
    send_event: SendEvent


class PlayedVerifier:
    """One verifier the harness plays: an SDCP handler plus the actions a case takes through it.

    ``board``: it serves a drafter under test (proposals and their output). ``links``: it serves a router under
    test. A resource of a part it does not play is 404, as on a server that has no such resource."""

    target: bytes
    mlc: PlayedCache
    history: History
    status: StatusReporter

    def __init__(self, name: str, uri: str, *, board: VerifierBoard | None = None,
                 links: RouterLinks | None = None) -> None:
        self.name = name
        self.uri = uri
        self.board = board
        self.links = links
        if links is not None:  # what serving a router uses (a played verifier of a drafter suite has none)
            self.target, self.mlc, self.history, self.status = links.target, links.mlc, links.history, links.status
        self._base = urlsplit(uri).path.rstrip("/")
        self.sessions: dict[bytes, ServedSession] = {}
        self._fault = Fault.NONE
        self._fault_evidence: InjectedFault | None = None
        self.intermittent_count = 0
        """Requests met while :attr:`Fault.INTERMITTENT` (every third is served)."""
        self.error_status = 503
        self.zombie = False
        self.serves_target = True
        """False: it refuses every session-open as a verifier of another model would (422 sdcp-bad-contract)."""
        self.success_status: dict[str, int] = {}
        """Override the 2xx a resource answers with (``open``, ``put``, ``policy``, ``output``): P1-MSG-4."""
        self.extra_members: dict[str, Any] = {}
        """Unknown members added to every session-state it answers (§5.2: they MUST be ignored)."""
        self.output_wait_s = OUTPUT_WAIT_S
        """How long its output long poll waits for tokens (a case may keep a read in flight longer, as P1-OUT-1's
        30 s allow)."""
        self.burst_left = 0
        """Requests still to fail under :attr:`Fault.BURST`."""
        self.error_delay_s = 0.0
        """How long a faulted output read takes to be answered with ``error_status``: slow failures, so that two
        failures in a row span more than P1-RTR-5's 0.5 s at any pace of retries."""

    def reset(self) -> None:
        self.fault, self.error_status, self.zombie = Fault.NONE, 503, False
        self.serves_target = True
        self.intermittent_count = self.burst_left = 0
        self.error_delay_s = 0.0
        self.output_wait_s = OUTPUT_WAIT_S
        self.success_status.clear()
        self.extra_members.clear()

    @property
    def fault(self) -> Fault:
        """How it fails now. Setting a fault injects it (:meth:`inject`): the case relies on it taking effect."""
        return self._fault

    @fault.setter
    def fault(self, fault: Fault) -> None:
        self.inject(fault)

    def inject(self, fault: Fault, *, must_fire: bool = True) -> None:
        """Fail as ``fault`` says from now on. A fault other than NONE is registered with the case running now,
        which turns ERROR if no request it met was failed (``must_fire=False``: the case does not rely on it)."""
        self._fault = fault
        self._fault_evidence = None if fault is Fault.NONE else injected(f"{self.name} failing ({fault.value})",
                                                                           must_fire=must_fire)

    def now(self) -> float:
        return asyncio.get_running_loop().time()

    def _router_links(self) -> RouterLinks:
        if self.links is None:
            raise InvalidArgument(f"harness error: the played verifier {self.name} serves no router (no links)")
        return self.links

    # ------------------------------------------------------------------ HTTP

    async def __call__(self, request: Request) -> Response:
        if self.board is not None:
            return await self._drafters_call(self.board, request)
        parts = request.path[len(self._base):].strip("/").split("/") if request.path.startswith(self._base) else []
        if self.links is None:
            parts = []
        try:
            if request.method == "POST" and parts == ["sessions"]:
                return self._open(request)
            if len(parts) == 3 and parts[0] == "sessions":
                session = _path_session(parts[1])
                if request.method == "PUT" and parts[2] == "drafter":
                    return self._put_drafter(request, session)
                if request.method == "POST" and parts[2] == "policy":
                    return self._policy(request, session)
                if request.method == "GET" and parts[2] == "output":
                    return await self._output(request, session)
        except ProtocolError as error:
            return problem_response(error)
        return status_problem_response(404, f"no verifier resource at {request.method} {request.path}")

    async def _drafters_call(self, board: VerifierBoard, request: Request) -> Response:
        """A drafter under test's request: its proposals wait on the board for the case (§6.2, §6.3)."""
        # The exchange is recorded in the transcript of the case during which it arrived, at the sequence
        # number of its arrival: a held proposal may be answered (or abandoned) much later.
        transcript, sequence = board.transcript(), next_sequence()
        path = request.path.rstrip("/")
        response: Response | None = None
        try:
            if request.method == "POST" and path == f"{self._base}/proposals":
                response = await board.receive(self.uri, request, sequence)
            elif request.method == "GET" and path.startswith(f"{self._base}/sessions/") and path.endswith("/output"):
                response = board.output(request)
            else:
                response = status_problem_response(404, f"the played verifier serves no {request.method} "
                                                   f"{request.path}")
            return response
        finally:
            if transcript is not None:
                record_response([transcript], self.name, request, response)  # a malformed answer: a harness bug
                _record(transcript, sequence, request, response)

    def _faulted(self) -> Response | None:
        """The answer the injected fault gives this request instead of serving it (None: serve it), with the evidence:
        the request met the fault, and the fault fired on it or not."""
        evidence = self._fault_evidence
        if evidence is not None:
            evidence.met += 1
        response = self._fault_response()
        if response is not None and evidence is not None:
            evidence.fired += 1
        return response

    def _fault_response(self) -> Response | None:
        if self.fault is Fault.INTERMITTENT:
            self.intermittent_count += 1
            if self.intermittent_count % 3 == 0:
                return None
        if self.fault is Fault.BURST:
            if self.burst_left <= 0:
                return None
            self.burst_left -= 1
            return status_problem_response(self.error_status, f"{self.name} fails as the case asked")
        if self.fault in (Fault.ERRORS, Fault.INTERMITTENT):
            return status_problem_response(self.error_status, f"{self.name} fails as the case asked")
        if self.fault is Fault.TRANSPORT:
            return Response(503, fault=TransportFault.RESET_STREAM)
        return None

    def _ok(self, resource: str, default: int, body: dict[str, Any]) -> Response:
        return Response(self.success_status.get(resource, default), encode(body),
                        [("content-type", SDCP_MEDIA_TYPE)])

    def _state_body(self, served: ServedSession) -> dict[str, Any]:
        return served.state_message().to_obj() | self.extra_members

    def _open(self, request: Request) -> Response:
        opening: SessionOpen | None = None
        try:
            opening = SessionOpen.from_cbor(request.body)
            response = self._faulted() or self._opened(opening)
        except ProtocolError as error:
            response = problem_response(error)
        log = self.mlc.log(opening.commit_log) if opening is not None else ()
        resume = opening.resume if opening is not None else None
        tokens = self.mlc.tokens(resume.committed_tokens) if resume is not None else None
        self.history.add(OpenSeen(
            at=self.now(), verifier=self.name, peer=request.peer_identity, media_type=_media(request),
            opening=opening, status=response.status, log=log, tokens_object=tokens,
            expired_for=self.status.expired_for(self.now()), deterministic=deterministic(request.body)))
        return response

    def _opened(self, opening: SessionOpen) -> Response:
        if opening.contract.target != self.target or not self.serves_target:
            raise ProtocolError(ProblemType.BAD_CONTRACT, "this verifier does not serve the contract's target")
        prompt = self.mlc.tokens(opening.prompt) if isinstance(opening.prompt, str) else tuple(opening.prompt)
        if not prompt:
            raise MalformedMessage("the prompt is empty or its object is not a token list (P1-SES-1)")
        if self.mlc.path_of(opening.commit_log) is None:
            raise MalformedMessage("the commit_log is not an object of this verifier's MLC (P1-MLC-1)")
        known = self.sessions.get(opening.session)
        if known is not None and known.epoch == opening.epoch:
            if digest_of(known.contract) != digest_of(opening.contract):
                raise ProtocolError(ProblemType.BAD_CONTRACT, "another contract for an open session (P1-MSG-5)")
            return self._ok("open", 200, self._state_body(known))
        if known is not None and opening.epoch < known.epoch:
            raise ProtocolError(ProblemType.STALE_EPOCH, f"the session is at epoch {known.epoch}")
        if opening.resume is None and opening.epoch != 1:
            raise ProtocolError(ProblemType.STALE_EPOCH, "a higher epoch without resume (P1-SES-1)")
        served = ServedSession(opening.session, opening.epoch, opening.contract, prompt, opening.commit_log)
        resume = opening.resume
        if resume is not None:
            tokens = self.mlc.tokens(resume.committed_tokens)
            if (tokens is None or len(tokens) != resume.committed
                    or extend_digest(served.d0, tokens) != resume.digest):
                # D-VER-3's answer: the verifier cannot resume from an inconsistent prefix.
                raise MalformedMessage("resume does not match its committed_tokens object over d[0]")
            served.tokens, served.round = list(tokens), resume.round
        if known is not None:
            known.notify()
        self.sessions[opening.session] = served
        return self._ok("open", 201, self._state_body(served))

    def _put_drafter(self, request: Request, session: bytes) -> Response:
        assignment: Assignment | None = None
        served = self.sessions.get(session)
        try:
            assignment = Assignment.from_cbor(request.body)
        except MalformedMessage as error:
            response = problem_response(error)
        else:
            try:
                response = self._faulted() or self._assigned(served, assignment)
            except ProtocolError as error:
                response = problem_response(error)
        tokens = None
        if assignment is not None and assignment.committed_tokens is not None:
            tokens = self.mlc.tokens(assignment.committed_tokens)
        state = served.state_message() if served is not None and 200 <= response.status < 300 else None
        seen = PutSeen(at=self.now(), verifier=self.name, peer=request.peer_identity, media_type=_media(request),
                       assignment=assignment, path_session=session, status=response.status, state=state,
                       tokens_object=tokens, deterministic=deterministic(request.body))
        self.history.add(seen)
        if served is not None and state is not None:
            served.last_put = seen
        return response

    def _assigned(self, served: ServedSession | None, assignment: Assignment) -> Response:
        if served is None or served.id != assignment.session:
            return status_problem_response(404, "no such session at this verifier")
        _serving(served)
        if assignment.epoch != served.epoch:
            raise ProtocolError(ProblemType.STALE_EPOCH, f"the session is at epoch {served.epoch}")
        if served.ended:
            raise ProtocolError(ProblemType.SESSION_CLOSED, "the session has ended (P1-CTL-3)")
        if assignment.m_init < 1:
            raise MalformedMessage("m_init 0 (P1-DRF-2)")
        served.drafter = assignment.drafter
        served.state = ACTIVE  # D-VER-6: an assignment ends a self-decoding period
        return self._ok("put", 200, self._state_body(served))

    def _policy(self, request: Request, session: bytes) -> Response:
        policy: Policy | None = None
        served = self.sessions.get(session)
        round_then = served.round if served is not None else None
        try:
            policy = Policy.from_cbor(request.body)
            response = self._faulted() or self._apply_policy(served, policy)
        except ProtocolError as error:
            response = problem_response(error)
        state = served.state_message() if served is not None and 200 <= response.status < 300 else None
        self.history.add(PolicySeen(at=self.now(), verifier=self.name, peer=request.peer_identity, policy=policy,
                                    round_then=round_then, status=response.status, state=state,
                                    deterministic=deterministic(request.body)))
        return response

    def _apply_policy(self, served: ServedSession | None, policy: Policy) -> Response:
        if served is None or served.id != policy.session:
            return status_problem_response(404, "no such session at this verifier")
        _serving(served)
        if served.ended:
            raise ProtocolError(ProblemType.SESSION_CLOSED, "the session has ended (P1-CTL-3)")
        if policy.from_round <= served.round:  # P1-POL-1
            raise ProtocolError(ProblemType.STALE_BASE, f"from_round {policy.from_round} is not after round "
                                f"{served.round}", state=served.state_message().to_obj())
        served.policies.append(policy)
        return self._ok("policy", 200, self._state_body(served))

    async def _output(self, request: Request, session: bytes) -> Response:
        start_values = parse_qs(request.query).get("from", ["0"])
        if not start_values[0].isdigit():
            raise MalformedMessage("from is not an output index")
        start = int(start_values[0])
        faulted = self._faulted()
        served = self.sessions.get(session)
        output = None
        if faulted is not None:
            if self.error_delay_s > 0 and faulted.fault is None:
                await asyncio.sleep(self.error_delay_s)  # a slow failure (the case's pace, not a synchronisation)
            response = faulted
        elif served is None:
            response = status_problem_response(404, "no such session at this verifier")
        elif served.fenced:
            response = problem_response(ProtocolError(ProblemType.STALE_EPOCH, "fenced: no longer serving"))
        else:
            output = await self._wait_output(served, start)
            response = self._ok("output", 200, output.to_obj())
        self.history.add(OutputServed(at=self.now(), verifier=self.name, peer=request.peer_identity,
                                      path_session=session, start=start, output=output, status=response.status))
        return response

    async def _wait_output(self, served: ServedSession, start: int) -> Output:
        """P1-OUT-1: tokens from ``start`` on, waiting up to :attr:`output_wait_s` for some."""
        deadline = self.now() + self.output_wait_s
        while len(served.tokens) <= start and not served.ended and self.sessions.get(served.id) is served:
            remaining = deadline - self.now()
            if remaining <= 0:
                break
            served.polled.set()
            try:
                await asyncio.wait_for(served.changed.wait(), remaining)
            except TimeoutError:
                break
        final = served.ended
        return Output(session=served.id, epoch=served.epoch, tokens=tuple(served.tokens[start:]), final=final,
                      from_=start, finish=Action(served.state) if final else None)

    # ------------------------------------------------------------------ what a case makes it do

    def serving(self, session: bytes) -> ServedSession | None:
        return self.sessions.get(session)

    def latest_put(self, session: bytes) -> PutSeen | None:
        served = self.sessions.get(session)
        return served.last_put if served is not None else None

    def commit(self, session: bytes, tokens: Sequence[int]) -> CommitSeen:
        """One round: append its commit record, and only then release the tokens (§6.3 Commit)."""
        served = self.sessions[session]
        emitted = tuple(tokens)
        record = CommitRecord(served.epoch, served.round + 1, emitted, len(served.tokens) + len(emitted),
                              extend_digest(served.digest, emitted))
        released = False
        appended = False
        if not served.fenced and not served.ended:
            outcome = self.mlc.append(served.commit_log, record, read_back=not self.zombie)
            appended = outcome.stored
            released = outcome.stored and not outcome.fenced
            if released:
                served.tokens.extend(emitted)
                served.round += 1
                served.notify()
            else:
                served.fenced = True  # §6.8: "stop serving the session"
                served.notify()
        seen = CommitSeen(at=self.now(), verifier=self.name, session_id=session, record=record, appended=appended,
                          released=released)
        self.history.add(seen)
        return seen

    def end(self, session: bytes, state: int) -> None:
        """The session finishes (4) or fails (5) here; its output becomes final."""
        served = self.sessions[session]
        served.state = state
        served.drafter = None
        served.notify()

    def set_state(self, session: bytes, state: int) -> None:
        served = self.sessions[session]
        served.state = state
        if state == SELF_DECODING:
            served.drafter = None
        served.notify()

    def event_body(self, session: bytes, kind: int, **changes: Any) -> dict[str, Any]:
        served = self.sessions[session]
        body: dict[str, Any] = {"session": session, "epoch": served.epoch, "kind": kind,
                                "committed": len(served.tokens), "digest": served.digest}
        body.update(changes)
        return body

    async def send_event(self, session: bytes, kind: int, *, identity: str | None = None,
                         **changes: Any) -> Answer:
        """POST events at the router, as this verifier (or as ``identity``)."""
        body = self.event_body(session, kind, **changes)
        who = identity or self.name
        answer = await self._router_links().send_event(who, body)
        self.history.add(EventSent(at=self.now(), sender=who, session_id=session, kind=kind,
                                   epoch=int(body["epoch"]), status=answer.status))
        return answer


def _serving(served: ServedSession) -> None:
    if served.fenced:  # D-VER-7: a fenced session is no longer served
        raise ProtocolError(ProblemType.STALE_EPOCH, "fenced: no longer serving the session")


def _path_session(encoded: str) -> bytes:
    session = b64url_decode(encoded)
    if len(session) != 16:
        raise MalformedMessage("the path {id} is not a 16-octet session id (P1-MSG-3)")
    return session


def _media(request: Request) -> str:
    return media_type(request.header("content-type"))


def _record(transcript: CaseTranscript, sequence: int, request: Request, response: Response | None) -> None:
    target = request.path + (f"?{request.query}" if request.query else "")
    if response is None:
        note = "abandoned by the drafter before the harness answered"
        status, body, content_type = None, b"", None
    else:
        note = f"fault: {response.fault.value}" if response.fault is not None else ""
        status, body, content_type = response.status, response.body, response.header("content-type")
    transcript.add(Entry(sequence, "from-iut", "verifier", request.method, target, render_body(request.body),
                         None if response is not None and response.fault is not None else status,
                         render_body(body, content_type), note))


__all__ = ["ACTIVE", "FAILED", "FINISHED", "OUTPUT_WAIT_S", "SELF_DECODING", "Fault", "PlayedVerifier",
           "RouterLinks", "ServedSession"]
