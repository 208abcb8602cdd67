"""What a drafter case works with: the router, verifier and cache the harness plays, and the judgements.

The case is the router (it sends assignments with the router identity) and
the verifier (each proposal waits in the session's queue until the case
answers it). Everything the played verifier observed on a proposal is
routed to the judge when the case takes it: ambient rows always, other rows
when the case declares them; an observation on a row the case does not
judge is kept as a note (the case that judges it will find it), so no case
blames a row it is not about. Arrivals the case never took are judged when
it ends (:meth:`DrafterContext.settle`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.harness.case import Case
from sdcp_conformance.harness.environment import PlayedParts, RoleContext
from sdcp_conformance.harness.iut import Answer
from sdcp_conformance.harness.roles.played_router import PlayedRouter
from sdcp_conformance.harness.roles.played_session import Arrival, Outcome, PlayedSession
from sdcp_conformance.harness.roles.proposal_board import (
    Pace,
    VerifierBoard,
    answer_final,
    answer_twins,
    doubt_resolved,
    refusal_response,
    sdcp_response,
    settle,
    supersede,
)
from sdcp_conformance.harness.roles.verdicts import VerdictPlan, build_verdict
from sdcp_conformance.harness.self_check import Deliberate, InjectedFault, as_sent, refuse_message
from sdcp_conformance.judge import TABLE
from sdcp_conformance.models.registry import mock_model
from sdcp_conformance.oracle.drafter_kept import context_dependent
from sdcp_conformance.oracle.greedy import greedy_any_tie, greedy_continuation, top_tokens
from sdcp_conformance.protocol.codec import encode
from sdcp_conformance.protocol.control import Action
from sdcp_conformance.protocol.messages import Proposal, Verdict
from sdcp_conformance.protocol.problems import ProblemType
from sdcp_conformance.transport.problem import status_problem_response
from sdcp_conformance.transport.types import Response, TransportFault

DEFAULT_PROMPT = (5, 9, 14)
FIRST_PROPOSAL_S = 10.0
"""How long the harness waits for a proposal the drafter must send (a model may be warming up)."""

LOSSES = ("503", "429", "502", "reset", "goaway", "close", "hold")
"""How a verdict can be lost: a status the drafter must treat as lost (P1-DRF-5: "5xx, 429"), a transport
fault, or no answer at all (the drafter's own timeout)."""

STOP_ROWS = {
    int(Action.SWITCH): "R-6.5.2-STOP-ON-SWITCH",
    int(Action.SELF_DECODE): "R-6.5.2-STOP-ON-SELF-DECODE",
    int(Action.FINISH): "R-6.5.2-STOP-ON-END",
    int(Action.FAIL): "R-6.5.2-STOP-ON-END",
}


class DrafterParts(PlayedParts, Protocol):
    """What a drafter case takes from its environment (:class:`~..specs.drafter.DrafterEnvironment`)."""

    router: PlayedRouter
    board: VerifierBoard
    draft_model: str
    target_model: str
    proposal_timeout_s: float | None
    """The drafter's proposal timeout, where the target states it (P1-DRF-5 "timeout")."""


class DrafterContext(RoleContext[DrafterParts]):
    """One drafter case's view of the harness."""

    def __init__(self, env: DrafterParts, case: Case, seed: int, run: str = "main") -> None:
        super().__init__(env, case, seed, run)
        self.sessions: list[PlayedSession] = []
        self.router: PlayedRouter = env.router
        """The played router: where the drafter reports its status (P1-RTR-1)."""
        self.pace: Pace = env.board.pace
        """How fast the drafter proposes after a verdict, as the played verifiers measured it (D-JUDGE-D5)."""

    # ------------------------------------------------------------------ models and contracts

    @property
    def proposal_timeout_s(self) -> float | None:
        """The drafter's proposal timeout where the target states it (P1-DRF-5 "timeout")."""
        return self.env.proposal_timeout_s

    @property
    def draft_model(self) -> str:
        """The case's draft model: the one its ``requires`` names (``model:ctx-draft-near``), else the suite's."""
        named = [need.removeprefix("model:") for need in self.case.requires if need.startswith("model:")]
        return named[0] if named else self.env.draft_model

    @property
    def target_model(self) -> str:
        return mock_model(self.draft_model).drafts_for or self.env.target_model

    @property
    def context_dependent(self) -> bool:
        """Whether the draft model's next token depends on more than the last token (no closed bigram form)."""
        return context_dependent(self.draft_model)

    def contract(self, rule: int = 1, **overrides: Any) -> dict[str, Any]:
        """A valid contract whose ``drafters`` name the drafter's model; ``None`` values remove a member."""
        target, draft = mock_model(self.target_model), mock_model(self.draft_model)
        contract: dict[str, Any] = {
            "target": target.model_sha256, "tokenizer": target.tokenizer_sha256, "drafters": [draft.model_sha256],
            "rule": rule, "m_max": 8, "max_new": 4096, "stop": [], "low_rounds": 1000, "fallback": [1],
        }
        contract.update(overrides)
        return {key: value for key, value in contract.items() if value is not None}

    def draft_greedy(self, context: Sequence[int], count: int) -> list[int]:
        return greedy_continuation(self.draft_model, context, count)

    def draft_tops(self, context: Sequence[int]) -> set[int]:
        """The tokens with the draft model's largest logit after ``context``: greedy under any tie-break, and for a
        model without a closed form within :func:`~sdcp_conformance.oracle.greedy.greedy_tolerance` of it."""
        return top_tokens(self.draft_model, context)

    def draft_greedy_any_tie(self, context: Sequence[int], tokens: Sequence[int]) -> bool:
        """Whether ``tokens`` continue ``context`` greedily under some tie-break (P1-DRF-4 alone picks the
        smallest id among equal logits): each is a largest logit of the draft row after those before it."""
        return greedy_any_tie(self.draft_model, context, tokens)

    def drafted_from(self, context: Sequence[int], tokens: Sequence[int]) -> bool:
        """Whether ``tokens`` are the draft model's greedy tokens after ``context``: exactly (P1-DRF-4's smallest
        id among equal logits) for a closed-form model; for another, each within the numeric tolerance of the
        largest logit after those before it (a drafter's runtime, in bfloat16 say, is not the harness's)."""
        if self.context_dependent:
            return greedy_any_tie(self.draft_model, context, tokens)
        return list(tokens) == self.draft_greedy(context, len(tokens))

    def target_greedy(self, context: Sequence[int], count: int) -> list[int]:
        return greedy_continuation(self.target_model, context, count)

    # ------------------------------------------------------------------ sessions and the cache

    def track(self, rule: int = 1, contract: Mapping[str, Any] | None = None,
              prompt: Sequence[int] = DEFAULT_PROMPT) -> PlayedSession:
        """A session the harness is about to assign (nothing is sent yet)."""
        session = PlayedSession(self.rng.randbytes(16), dict(contract or self.contract(rule)), list(prompt))
        self.sessions.append(session)
        return self.env.board.add(session)

    def put_tokens(self, name: str, tokens: Sequence[int]) -> str:
        """P1-MLC-2: "a token list (prompt, committed_tokens) is a CBOR array of uint"."""
        return self.put_object(name, encode(list(tokens)))

    # ------------------------------------------------------------------ the router's side

    def assignment(self, session: PlayedSession, *, verifier: int = 0, m_init: int = 4,
                   **overrides: Any) -> dict[str, Any]:
        body: dict[str, Any] = {
            "session": session.id, "epoch": session.epoch, "contract": session.contract,
            "verifier": self.env.config.verifiers[verifier], "drafter": self.env.config.base_uri,
            "prompt": session.prompt, "round": session.round, "committed": len(session.output),
            "digest": session.digest, "m_init": m_init,
        }
        if session.output:  # P1-RTR-3: "The router always sends committed_tokens when committed > 0."
            body["committed_tokens"] = self.put_tokens(f"committed-{session.id.hex()}-{len(session.output)}",
                                                       session.output)
        body.update(overrides)
        return {key: value for key, value in body.items() if value is not None}

    async def assign(self, session: PlayedSession, *, party: str = "router", verifier: int = 0, m_init: int = 4,
                     body: Mapping[str, Any] | bytes | None = None, deliberate: bool = False,
                     **overrides: Any) -> Answer:
        """POST assignments; on success the session holds what was assigned (P1-DRF-7 replaces the old).
        ``deliberate``: the case means the assignment to break ``sdcp.cddl`` (a contract with a key §4.1 does not
        define): it is sent unchecked (:mod:`~..self_check`)."""
        sent = body if body is not None else self.assignment(session, verifier=verifier, m_init=m_init,
                                                             **overrides)
        saved = session.snapshot()
        before = list(session.arrivals)
        if body is None:
            # Before sending: the drafter may propose under the new assignment before its 204 is back here.
            assigned = self.assignment_view(sent)
            session.assigned(epoch=assigned["epoch"], m_init=assigned["m_init"], verifier=assigned["verifier"],
                             sampling=assigned.get("sampling"), now=self.env.now())
            session.in_doubt = saved  # until the answer, a proposal may follow either assignment
        try:
            kept = sent if isinstance(sent, (bytes, Deliberate)) else dict(sent)  # a deliberate() map stays marked
            answer = await self.env.iut.send(party, "POST", "assignments", as_sent(kept, deliberate))
        finally:
            session.in_doubt = None
        known = {id(arrival) for arrival in before}
        during = [arrival for arrival in session.arrivals if id(arrival) not in known]
        if not answer.ok:
            session.restore(saved)  # refused: the drafter holds what it held
        elif body is None:
            session.superseded_at = self.env.now()  # D-JUDGE-D10 counts from the answer
            supersede(before)
        if body is None:
            doubt_resolved(session, during)
        return answer

    @staticmethod
    def assignment_view(sent: Mapping[str, Any] | bytes) -> dict[str, Any]:
        if isinstance(sent, bytes):
            raise InvalidArgument("harness error: a raw assignment body is not tracked")
        return dict(sent)

    async def assign_ok(self, session: PlayedSession, **kwargs: Any) -> None:
        """Assign; a refusal of this valid assignment stops the case (the draft's resource, §5.1)."""
        await self._assigned(session, "R-5.1-RESOURCES", kwargs)

    async def reassign_ok(self, session: PlayedSession, **kwargs: Any) -> None:
        """Assign the session again at the epoch the drafter holds: only the profile makes that valid (P1-DRF-7:
        "an equal or higher epoch replaces the current assignment"), so a refusal is judged on its row."""
        await self._assigned(session, "P1-DRF-7/REPLACE", kwargs)

    async def _assigned(self, session: PlayedSession, refused_row: str, options: dict[str, Any]) -> None:
        answer = await self.assign(session, **options)
        if not answer.ok:
            self.fail(f"POST assignments: a valid assignment {answer.refused()}",
                      row=refused_row, expected=["2xx (P1-MSG-4: 204)"], actual=answer.describe())

    async def start(self, rule: int = 1, contract: Mapping[str, Any] | None = None,
                    prompt: Sequence[int] = DEFAULT_PROMPT, **kwargs: Any) -> PlayedSession:
        session = self.track(rule, contract, prompt)
        await self.assign_ok(session, **kwargs)
        return session

    # ------------------------------------------------------------------ the verifier's side: receiving

    async def next_arrival(self, session: PlayedSession, timeout_s: float) -> Arrival | None:
        """The next proposal for ``session`` (judged), or None if none came within ``timeout_s``.

        A wait the harness itself stalled through is moved on by that stall (D-JUDGE-TIME-2): a proposal the
        harness was too busy to read is read, not missed."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        deadline = started + timeout_s
        while True:
            try:
                arrival = await asyncio.wait_for(session.queue.get(), max(0.0, deadline - loop.time()))
            except TimeoutError:
                moved = started + timeout_s + self.env.patience.extension(started)
                if moved - deadline > 0.05:
                    deadline = moved
                    continue
                return None
            self.observe(arrival)
            if not (arrival.twin or arrival.late or arrival.superseded):
                return arrival

    async def take(self, session: PlayedSession, what: str = "the next proposal", *,
                   timeout_s: float | None = None, row: str = "R-6.5.2-CONTINUE") -> Arrival:
        """The next proposal; none within ``timeout_s`` is a deviation from ``row`` that ends the case.

        By default the first proposal of a session gets :data:`FIRST_PROPOSAL_S` (a model may be warming up),
        later ones five quiet windows of the drafter's pace, at least 2 s (D-JUDGE-D5); a case running again alone
        waits that times the rerun's scale. None in time is a missed deadline (P1-JUDGE-5): the case runs again
        alone before its finding counts (D-JUDGE-TIME-3)."""
        if timeout_s is None:
            timeout_s = FIRST_PROPOSAL_S if not session.arrivals else max(2.0, 5 * self.pace.quiet_window())
        timeout_s = self.env.patience.wait(timeout_s)
        arrival = await self.next_arrival(session, timeout_s)
        if arrival is None:
            missed = f"{what}: no proposal arrived within {timeout_s:g} s"
            if not self.attributed(row, missed)[2]:  # a refused handshake is not slowness (D-JUDGE-REFUSED-CLIENT)
                self.missed_deadline(missed, timeout_s, "no proposal from the drafter")
            self.fail(missed, row=row, expected=["a proposal"], actual="none")
        if arrival.proposal is None:
            self.fail(f"{what}: the drafter sent something that is not a proposal", row="R-5.2-PROPOSAL",
                      actual=arrival.error)
        return arrival

    async def quiet(self, session: PlayedSession, row: str, why: str, *, window_s: float | None = None) -> bool:
        """The drafter must not propose for ``session`` (it was told to stop): wait the quiet window."""
        window = window_s if window_s is not None else self.pace.quiet_window()
        arrival = await self.next_arrival(session, window)
        if arrival is None:
            return True
        if session.stopped is None or session.stopped[0] != row:  # the review has not said it already
            self.deviate(row, f"a proposal ({arrival.describe()}) arrived {arrival.at - self.env.now():+.2f} s "
                         f"after {why}", expected=["no proposal"], actual=arrival.describe())
        return False

    def observe(self, arrival: Arrival) -> None:
        """Route what the played verifier saw on ``arrival`` to the judge (once)."""
        if arrival.judged:
            return
        arrival.judged = True
        for observation in arrival.observations:
            row = TABLE[observation.row]
            if row.ambient or observation.row in self.case.rows:
                self.deviate(observation.row, observation.message,
                             expected=[observation.expected] if observation.expected else [],
                             actual=observation.actual)
            else:
                self.note(f"seen, judged by other cases ({observation.row}): {observation.message}")

    def settle(self) -> None:
        """End of the case: judge every arrival it did not take (a second proposal it never looked at, say)."""
        for session in self.sessions:
            while not session.queue.empty():
                self.observe(session.queue.get_nowait())
        for arrival in self.env.board.strays:
            if arrival.proposal is None:
                self.deviate("R-5.2-PROPOSAL", f"the drafter sent a body that is not a proposal: {arrival.error}",
                             actual=arrival.error)

    # ------------------------------------------------------------------ the verifier's side: answering

    def verdict(self, session: PlayedSession, arrival: Arrival, **plan: Any) -> Verdict:
        proposal = self._proposal(arrival)
        return build_verdict(session, proposal, self.target_model, VerdictPlan(**plan))

    def answer(self, session: PlayedSession, arrival: Arrival, verdict: Verdict, *,
               extra: Mapping[str, Any] | None = None) -> Verdict:
        """Send ``verdict`` for ``arrival``; the session's prefix, round and limit follow it."""
        obj = verdict.to_obj()
        obj.update(extra or {})
        # The harness's verdict must match sdcp.cddl (§6.3) before the drafter sees it: a malformed one is its own bug.
        refuse_message(self.transcript, "verdict", obj, f"the verdict the harness answered #{arrival.sequence} with")
        response = sdcp_response(encode(obj))
        settle(arrival, response, Outcome.VERDICT, f"verdict round {verdict.round}")
        answer_twins(session, arrival, response, Outcome.VERDICT)
        session.verdicts[verdict.round] = response
        session.decided_keys[verdict.round] = arrival.key
        session.decided(verdict.round, list(verdict.emitted), verdict.m_cap)
        session.open = None
        session.answered_at = self.env.now()
        action = int(verdict.action)
        if action in STOP_ROWS:
            session.stop(STOP_ROWS[action], f"a verdict with action {Action(action).name.lower()}")
        elif action not in {int(a) for a in Action}:
            session.stop("P1-DRF-9", f"a verdict with the unknown action {action}")
        return verdict

    async def decide(self, session: PlayedSession, what: str = "the next proposal", *,
                     timeout_s: float | None = None, row: str = "R-6.5.2-CONTINUE",
                     **plan: Any) -> tuple[Arrival, Verdict]:
        """Take the next proposal and answer it with the verdict ``plan`` describes."""
        arrival = await self.take(session, what, timeout_s=timeout_s, row=row)
        return arrival, self.answer(session, arrival, self.verdict(session, arrival, **plan))

    def refuse(self, session: PlayedSession, arrival: Arrival, problem: ProblemType, *, with_state: bool = False,
               state: Mapping[str, Any] | None = None, status: int | None = None) -> None:
        """A final 4xx (P1-DRF-5); ``with_state`` attaches the current session-state (P1-ERR-2)."""
        members = dict(state) if state is not None else None
        if with_state and members is None:
            members = {"session": session.id, "epoch": session.epoch, "round": session.round,
                       "committed": len(session.output), "digest": session.digest}
        response = refusal_response(problem, f"refused by the harness ({self.case_id})", members)
        if status is not None:
            response.status = status
        self._final(session, arrival, response, f"{response.status} {problem.suffix}")
        if problem is ProblemType.STALE_BASE and members is not None:
            session.told_state()  # what the state says is what the drafter learns (P1-DRF-6)

    def refuse_plain(self, session: PlayedSession, arrival: Arrival, status: int) -> None:
        """A 4xx with no SDCP problem type (an unlisted status, handled by class, §5.1)."""
        response = status_problem_response(status, "refused by the harness")
        self._final(session, arrival, response, str(status))

    def _final(self, session: PlayedSession, arrival: Arrival, response: Response, text: str) -> None:
        if not answer_final(session, arrival, response, text):
            self.note(f"the answer {text} to #{arrival.sequence} reached no one: the drafter had given up on the "
                      "request; its identical retry gets it (D-JUDGE-D17)")

    def lose(self, arrival: Arrival, how: str, *, must_fire: bool = True) -> None:
        """Answer so that the drafter gets no verdict (``hold``: do not answer at all).

        An injected fault (:mod:`~..self_check`): it takes effect when the drafter's request is still unanswered
        (the loss, or the silence, is all it gets), not when it was answered already; ``must_fire=False`` where the
        case does not rely on it."""
        if how not in LOSSES:
            raise InvalidArgument(f"harness error: no loss {how!r} (known: {LOSSES})")
        fault = self.transcript.self_check.register(InjectedFault(
            f"lost verdict ({how}) of proposal #{arrival.sequence}", must_fire, met=1))
        if arrival.future is not None and not arrival.future.done():
            fault.fired += 1
        arrival.outcome, arrival.answer = Outcome.LOST, f"lost ({how})"
        if how == "hold":
            return
        faults = {"reset": TransportFault.RESET_STREAM, "goaway": TransportFault.GOAWAY,
                  "close": TransportFault.CLOSE_CONNECTION}
        if how in faults:
            response = Response(503, fault=faults[how])
        else:
            response = status_problem_response(int(how), "lost on purpose by the harness")
        if arrival.future is not None and not arrival.future.done():
            arrival.future.set_result(response)

    # ------------------------------------------------------------------ helpers

    def _proposal(self, arrival: Arrival) -> Proposal:
        if arrival.proposal is None:
            raise InvalidArgument("harness error: answering a body that is not a proposal")
        return arrival.proposal


__all__ = ["DEFAULT_PROMPT", "FIRST_PROPOSAL_S", "LOSSES", "STOP_ROWS", "DrafterContext", "DrafterParts"]
