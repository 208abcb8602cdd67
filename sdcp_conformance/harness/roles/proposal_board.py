"""The verifier the harness plays for a drafter under test: ``POST proposals`` and ``GET …/output``.

Every assignment the harness sends names one of its played verifiers (§5.2
``verifier: tstr``), so the drafter's proposals come here. Each proposal
becomes an :class:`~.played_session.Arrival`, is checked at once against
the session's state (:func:`~.proposal_checks.review`), and waits in the
session's queue until the case answers it — with a verdict the harness
computed, a refusal, a lost answer (503, 429, a reset stream, a dropped
connection, or no answer at all) — so holding a verdict back is simply not
answering yet. A retry of a round already decided gets the stored verdict
(§6.3 Idempotency), a proposal after the harness told the drafter to stop
gets the refusal a verifier would send, and a proposal for a session of an
earlier case gets 410 ``sdcp-session-closed`` so the drafter lets it go.
``GET sessions/{id}/output?from=n`` serves the session's committed tokens
(or, in a forged-resync case, what the case put there).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import parse_qs

from sdcp_conformance.harness.patience import upper_decile
from sdcp_conformance.harness.roles.played_session import Arrival, Outcome, PlayedSession
from sdcp_conformance.harness.roles.proposal_checks import DrafterFacts, review
from sdcp_conformance.harness.transcript import CaseTranscript, next_sequence
from sdcp_conformance.protocol.errors import MalformedMessage, ProtocolError
from sdcp_conformance.protocol.messages import Output, Proposal
from sdcp_conformance.protocol.problems import SDCP_MEDIA_TYPE, ProblemType
from sdcp_conformance.transport.problem import problem_response, status_problem_response
from sdcp_conformance.transport.types import Request, Response

HOLD_LIMIT_S = 60.0
"""A proposal no case answers is answered 503 after this long (a case that forgot, or died)."""
LATE_S = 1.0
"""D-JUDGE-D10: a proposal that follows the replaced assignment exactly and arrives within this long after the
new one was accepted was on its way before the drafter received it (P1-DRF-7 abandons it "first", but the bytes
may already be on the wire): it is refused as a verifier would refuse it and not judged."""


def sdcp_response(body: bytes, status: int = 200) -> Response:
    return Response(status, body, [("content-type", SDCP_MEDIA_TYPE)])


def refusal_response(problem: ProblemType, detail: str, state: dict[str, object] | None = None) -> Response:
    return problem_response(ProtocolError(problem, detail, state=state))


QUIET_MIN_S = 0.6
QUIET_MAX_S = 5.0
QUIET_DEFAULT_S = 1.5


@dataclass
class Pace:
    """How fast the drafter proposes after a verdict: sets how long "it stopped proposing" is waited for.

    D-JUDGE-D5: the quiet window is four times the 90th percentile of the verdict-to-next-proposal times seen
    in this certification (the last 200), within 0.6 s and 5 s (1.5 s before any was seen). A drafter that goes
    on proposing does so at its usual pace, so it shows up inside the window; a slow one widens the window
    itself. Times measured while a case slows the drafter down on purpose (``paused``) are not its pace.
    """

    samples: list[float] = field(default_factory=list)
    paused: bool = False

    def add(self, seconds: float) -> None:
        if not self.paused:
            self.samples = [*self.samples[-199:], seconds]

    def quiet_window(self) -> float:
        if not self.samples:
            return QUIET_DEFAULT_S
        return min(QUIET_MAX_S, max(QUIET_MIN_S, 4 * upper_decile(self.samples)))


@dataclass
class VerifierBoard:
    """The sessions the played verifiers serve, shared by every played verifier URI."""

    facts: Callable[[], DrafterFacts]
    pace: Pace = field(default_factory=Pace)
    transcript: Callable[[], CaseTranscript | None] = lambda: None
    sessions: dict[bytes, PlayedSession] = field(default_factory=dict)
    closed: set[bytes] = field(default_factory=set)
    strays: list[Arrival] = field(default_factory=list)
    """Arrivals that name no session of the current case (malformed bodies among them)."""

    def add(self, session: PlayedSession) -> PlayedSession:
        self.sessions[session.id] = session
        return session

    def close_all(self) -> None:
        """End of a case: its sessions are closed; whatever still waits is answered 410 (the drafter stops).

        D-JUDGE-D13: a proposal for a session of an earlier case gets 410 ``sdcp-session-closed`` (the session is
        over for the harness), one for a session it never played 403 ``sdcp-not-assigned`` (§6.3 step 1): both are
        final for the drafter, so no case inherits another's traffic."""
        for session in self.sessions.values():
            self.closed.add(session.id)
            for arrival in session.arrivals:
                _settle(arrival, refusal_response(ProblemType.SESSION_CLOSED, "the case that played this session "
                                                  "has ended"), Outcome.FINAL, "410 (case over)")
        self.sessions.clear()
        self.strays.clear()

    # ------------------------------------------------------------------ POST proposals

    async def receive(self, verifier: str, request: Request, sequence: int | None = None) -> Response:
        loop = asyncio.get_running_loop()
        proposal, error = None, ""
        try:
            proposal = Proposal.from_cbor(request.body)
        except (MalformedMessage, ProtocolError) as exc:
            error = str(exc)
        arrival = Arrival(sequence or next_sequence(), loop.time(), verifier, request.peer_identity, request.body,
                          request.header("content-type"), proposal, error)
        session = self.sessions.get(proposal.session) if proposal is not None else None
        if session is None or proposal is None:
            return self._stray(arrival, proposal)
        retried = self._retry_of_decided(session, arrival) or self._retry_of_undelivered(session, arrival)
        if retried is not None:
            return retried
        # While an assignment is on its way the drafter may refuse it (P1-DRF-7: a lower epoch), so a proposal under
        # the assignment it holds is not late yet: it waits, and :func:`doubt_resolved` decides once the answer is in.
        if session.in_doubt is None and _late(session, arrival):
            session.arrivals.append(arrival)
            session.queue.put_nowait(arrival)
            return _refuse_late(session, arrival)
        arrival.observations = review(session, arrival, self.facts())
        doubt = session.in_doubt is not None
        if doubt:  # an assignment is on its way: keep only what is wrong under both the old and the new one
            old = {observation.row for observation in review(session.before(), arrival, self.facts())}
            arrival.observations = [observation for observation in arrival.observations if observation.row in old]
        session.arrivals.append(arrival)
        if session.answered_at is not None:
            self.pace.add(arrival.at - session.answered_at)
            session.answered_at = None
        early = self._immediate(session, arrival)
        if early is not None:
            session.queue.put_nowait(arrival)
            return early
        if not doubt:
            session.open = arrival
        arrival.future = loop.create_future()
        session.queue.put_nowait(arrival)
        try:
            return await asyncio.wait_for(asyncio.shield(arrival.future), HOLD_LIMIT_S)
        except TimeoutError:
            _settle(arrival, status_problem_response(503, "no case answered the proposal"), Outcome.LOST,
                    "503 (no case answered)")
            return status_problem_response(503, "no case answered the proposal")
        except asyncio.CancelledError:
            if arrival.outcome is Outcome.PENDING:
                arrival.outcome = Outcome.ABANDONED  # the drafter's request went away (its timeout, a reset)
                arrival.answer = "abandoned by the drafter"
            raise

    def _stray(self, arrival: Arrival, proposal: Proposal | None) -> Response:
        if proposal is None:
            self.strays.append(arrival)
            return refusal_response(ProblemType.BAD_MESSAGE, arrival.error)
        if proposal.session in self.closed:
            return refusal_response(ProblemType.SESSION_CLOSED, "the session is over")
        self.strays.append(arrival)
        return refusal_response(ProblemType.NOT_ASSIGNED, "no such session at this verifier")

    def _retry_of_decided(self, session: PlayedSession, arrival: Arrival) -> Response | None:
        """§6.9, §6.3 Idempotency: the very proposal a verdict was sent for, sent again, gets that verdict — the
        drafter did not receive it (its request had timed out, or a new assignment had made it abandon it)."""
        proposal = arrival.proposal
        assert proposal is not None
        round_ = proposal.round
        if proposal.epoch != session.epoch or session.decided_keys.get(round_) != arrival.key:
            return None
        return _answer_retry(session, arrival, session.verdicts[round_], Outcome.VERDICT,
                             f"the stored verdict of round {round_} (a retry)")

    @staticmethod
    def _retry_of_undelivered(session: PlayedSession, arrival: Arrival) -> Response | None:
        """D-JUDGE-D17: the identical retry of a proposal whose final answer reached no one (the drafter had given
        up on the request) gets that answer, which only now is final; the retry is not judged (it is what P1-DRF-5
        has a drafter do when no answer came)."""
        stored = session.undelivered.pop(arrival.key, None)
        if stored is None:
            return None
        response, text = stored
        session.finals[arrival.key] = text
        return _answer_retry(session, arrival, response, Outcome.FINAL, f"{text} (the answer that had reached no one)")

    def _immediate(self, session: PlayedSession, arrival: Arrival) -> Response | None:
        """Answers that need no case: a decided round's stored verdict, the refusal after a stop."""
        proposal = arrival.proposal
        assert proposal is not None
        if proposal.epoch == session.epoch and proposal.round in session.verdicts:
            stored = session.verdicts[proposal.round]
            _settle(arrival, stored, Outcome.VERDICT, f"the stored verdict of round {proposal.round}")
            arrival.twin = True
            return stored
        if session.stopped is not None:
            ended = session.stopped[0] in ("R-6.5.2-STOP-ON-END", "P1-DRF-9", "R-5.2-UNKNOWN-ACTION")
            problem = ProblemType.SESSION_CLOSED if ended else ProblemType.NOT_ASSIGNED
            response = refusal_response(problem, f"the drafter was told to stop: {session.stopped[1]}")
            _settle(arrival, response, Outcome.FINAL, f"{problem.status} {problem.suffix} (after the stop)")
            return response
        return None

    # ------------------------------------------------------------------ GET sessions/{id}/output

    def output(self, request: Request) -> Response:
        parts = request.path.rstrip("/").split("/")
        try:
            raw = parts[parts.index("sessions") + 1]
            session_id = base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4))
            start = int(parse_qs(request.query).get("from", ["0"])[0])
        except (ValueError, IndexError, binascii.Error):
            return refusal_response(ProblemType.BAD_MESSAGE, "bad output request")
        session = self.sessions.get(session_id)
        if session is None or start < 0:
            return status_problem_response(404, "no such session")
        session.output_reads.append((start, request.peer_identity))
        session.output_paths.append(raw)
        session.read.set()
        tokens = session.served_output()[start:]
        body = Output(session=session.id, epoch=session.epoch, tokens=tuple(tokens), final=False, from_=start)
        return sdcp_response(body.to_cbor())


def doubt_resolved(session: PlayedSession, during: list[Arrival]) -> None:
    """The answer to an assignment in doubt is in (the session holds what it says); ``during``: the proposals that
    arrived meanwhile. If the assignment was taken, one that follows the replaced assignment was on its way before
    the drafter received it (D-JUDGE-D10) and is refused as late; what is still pending is the open proposal."""
    unanswered = (Outcome.PENDING, Outcome.ABANDONED)
    pending = [arrival for arrival in during if arrival.outcome in unanswered and not arrival.late]
    for arrival in pending:
        # One the drafter has already dropped counts too: the new assignment is why (P1-DRF-7), and a case that took
        # it for the drafter's next proposal would stop the session on it, then judge the proposal that replaced it.
        if _follows_replaced(session, arrival):
            _refuse_late(session, arrival)
    still = [arrival for arrival in pending if not arrival.late and arrival.outcome is Outcome.PENDING]
    if still:
        session.open = still[-1]


def supersede(before: list[Arrival]) -> None:
    """A new assignment was taken: the proposals that arrived before it and have no answer were abandoned by the
    drafter (P1-DRF-7), and no answer reaches it any more. One it has already dropped (it reset the request on taking
    the assignment, and the reset came before the assignment's answer) is superseded too: no case may take it for
    the next proposal, answer it (no one listens) and then judge the proposal that replaced it (under load a fuzz
    step stopped the session so, and found the reference NON-STRICT at P1-DRF-6/STOP)."""
    for arrival in before:
        if arrival.outcome in (Outcome.PENDING, Outcome.ABANDONED):
            arrival.outcome, arrival.answer, arrival.superseded = Outcome.ABANDONED, "abandoned", True


def _refuse_late(session: PlayedSession, arrival: Arrival) -> Response:
    """Refuse a late proposal as a verifier would (its epoch or base is stale), without judging it."""
    proposal = arrival.proposal
    assert proposal is not None
    arrival.late, arrival.judged = True, True
    problem = ProblemType.STALE_EPOCH if proposal.epoch != session.epoch else ProblemType.STALE_BASE
    state = {"session": session.id, "epoch": session.epoch, "round": session.round,
             "committed": len(session.output), "digest": session.digest}
    response = refusal_response(problem, "the assignment this proposal follows has been replaced", state)
    _settle(arrival, response, Outcome.FINAL, f"{problem.status} {problem.suffix} (late)")
    session.may_not_have_learned_the_last_verdict()
    return response


def _late(session: PlayedSession, arrival: Arrival) -> bool:
    """D-JUDGE-D10: within :data:`LATE_S` of the new assignment's answer, a proposal that follows the replaced one."""
    if session.superseded is None or arrival.at - session.superseded_at > LATE_S:
        return False
    return _follows_replaced(session, arrival)


def _follows_replaced(session: PlayedSession, arrival: Arrival) -> bool:
    proposal = arrival.proposal
    if session.superseded is None or proposal is None:
        return False
    now = session.learned
    fits = now is not None and len(proposal.tokens) <= session.limit and (
        proposal.epoch, proposal.round, proposal.base, proposal.base_digest) == (
        session.epoch, now.round + 1, now.committed, now.digest)
    if fits:
        return False  # whatever it was sent under, it is a valid proposal under the new assignment
    if arrival.key in session.abandoned:
        return True  # a retry of a proposal the new assignment abandoned, sent before the drafter received it
    epoch, learned, limit = session.superseded
    old = (epoch, learned.round + 1, learned.committed, learned.digest)
    if (proposal.epoch, proposal.round, proposal.base, proposal.base_digest) != old:
        return False
    now = session.learned
    if now is None or old != (session.epoch, now.round + 1, now.committed, now.digest):
        return True  # it follows the replaced assignment, not the new one
    # The new assignment implies the same position; only its limit may differ (m_init).
    return session.limit < len(proposal.tokens) <= limit


def _answer_retry(session: PlayedSession, arrival: Arrival, response: Response, outcome: Outcome,
                  answer: str) -> Response:
    """A retry answered as its original was, not judged (the case sees it as a twin)."""
    arrival.twin, arrival.judged = True, True
    session.arrivals.append(arrival)
    session.queue.put_nowait(arrival)
    _settle(arrival, response, outcome, answer)
    return response


def _settle(arrival: Arrival, response: Response, outcome: Outcome, answer: str) -> None:
    if arrival.future is not None and not arrival.future.done():
        arrival.future.set_result(response)
    if arrival.outcome is Outcome.PENDING:
        arrival.outcome, arrival.answer = outcome, answer


def settle(arrival: Arrival, response: Response, outcome: Outcome, answer: str) -> None:
    """Answer a held proposal (the case's side of the board)."""
    _settle(arrival, response, outcome, answer)


def _waiting_twins(session: PlayedSession, arrival: Arrival) -> list[Arrival]:
    """Copies of ``arrival`` still waiting: retries sent after the drafter's own timeout, before it was answered."""
    return [other for other in session.arrivals
            if other is not arrival and other.key == arrival.key and other.outcome is Outcome.PENDING]


def answer_twins(session: PlayedSession, arrival: Arrival, response: Response, outcome: Outcome) -> int:
    """The waiting copies of ``arrival`` get the same answer: the drafter may be listening on any of them.
    Returns how many there were."""
    twins = _waiting_twins(session, arrival)
    for other in twins:
        _settle(other, response, outcome, f"the answer of its twin #{arrival.sequence}")
        other.twin = True
    return len(twins)


def answer_final(session: PlayedSession, arrival: Arrival, response: Response, text: str) -> bool:
    """A final answer (a 4xx, P1-DRF-5) to ``arrival`` and its waiting twins; False when it reached no one.

    D-JUDGE-D17: an answer the drafter never received is not final: it had given up on the request (its own
    timeout, a reset stream) before the answer was given, with no retry of it waiting, or the server reports the
    answer lost on every request it went to (``Response.undelivered``: the drafter's reset crossed it). The identical
    retry gets it (:meth:`VerifierBoard.receive`), and that retry is not judged as a resend after a 4xx (P1-DRF-5) or
    as a proposal after a stop: it is what P1-DRF-5 has a drafter do when no answer came."""
    key = arrival.key
    reached: set[int] = set()
    """The requests the answer went to whose drafter may still be listening."""

    def lost(sequence: int) -> None:
        reached.discard(sequence)
        if not reached and session.finals.get(key) == text:  # not if a new assignment cleared the finals since
            del session.finals[key]
            session.undelivered[key] = (response, text)

    def sent_to(target: Arrival) -> Response:
        reached.add(target.sequence)
        return dataclasses.replace(response, undelivered=functools.partial(lost, target.sequence))

    listening = arrival.outcome is not Outcome.ABANDONED and arrival.future is not None and not arrival.future.done()
    _settle(arrival, sent_to(arrival) if listening else response, Outcome.FINAL, text)
    for other in _waiting_twins(session, arrival):
        _settle(other, sent_to(other), Outcome.FINAL, f"the answer of its twin #{arrival.sequence}")
        other.twin = True
    session.open = None
    if not reached:
        session.undelivered[key] = (response, text)
        return False
    session.finals[key] = text
    return True


__all__ = ["HOLD_LIMIT_S", "LATE_S", "Pace", "VerifierBoard", "answer_final", "answer_twins",
           "doubt_resolved", "refusal_response", "sdcp_response", "settle", "supersede"]
