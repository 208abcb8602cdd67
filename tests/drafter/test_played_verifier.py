"""The played verifier's checks on single proposals, and the verdicts it builds, against hand-made expectations.

Digests are recomputed here with hashlib (§4.2), greedy tokens from the bigram tables directly, so a wrong
check in :mod:`sdcp_conformance.harness.roles.proposal_checks` cannot agree with itself.
"""

from __future__ import annotations

import asyncio
import hashlib
from typing import Any

import numpy as np
import pytest

from sdcp_conformance.harness.roles.played_cache import CacheEvent
from sdcp_conformance.harness.roles.played_session import Arrival, Outcome, PlayedSession
from sdcp_conformance.harness.roles.proposal_board import (
    Pace,
    VerifierBoard,
    answer_final,
    doubt_resolved,
    refusal_response,
    settle,
    supersede,
)
from sdcp_conformance.harness.roles.proposal_checks import DrafterFacts, review
from sdcp_conformance.harness.roles.verdicts import VerdictPlan, build_verdict
from sdcp_conformance.models.bigram import bigram_table
from sdcp_conformance.models.registry import mock_model
from sdcp_conformance.protocol.codec import encode
from sdcp_conformance.protocol.control import Action
from sdcp_conformance.protocol.messages import Proposal
from sdcp_conformance.protocol.problems import ProblemType
from sdcp_conformance.transport.types import Request, Response

ME = "https://127.0.0.1:9/drafter/"
DRAFT, TARGET = "bigram-draft-near", "bigram"
PROMPT = [5, 9, 14]
Q_URI = "https://127.0.0.1:9/cache/q/1"


def sha(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def contract(rule: int = 1, **changes: Any) -> dict[str, Any]:
    return {"target": mock_model(TARGET).model_sha256, "tokenizer": mock_model(TARGET).tokenizer_sha256,
            "drafters": [mock_model(DRAFT).model_sha256], "rule": rule, "m_max": 8, "max_new": 100, "stop": [],
            "low_rounds": 1000, "fallback": [1]} | changes


def chain(contract_obj: dict[str, Any], tokens: list[int]) -> bytes:
    contract_digest = sha(b"SDCP-CONTRACT-1\x00" + encode(contract_obj))
    digest = sha(b"SDCP-PREFIX-1\x00" + contract_digest + len(PROMPT).to_bytes(4, "big")
                 + b"".join(t.to_bytes(4, "big") for t in PROMPT))
    for token in tokens:
        digest = sha(digest + token.to_bytes(4, "big"))
    return digest


def greedy(model: str, last: int, count: int) -> list[int]:
    table, out = bigram_table(model), []
    for _ in range(count):
        last = int(np.flatnonzero(table[last] == table[last].max())[0])
        out.append(last)
    return out


def session(rule: int = 1, **changes: Any) -> PlayedSession:
    played = PlayedSession(bytes(range(16)), contract(rule, **changes), list(PROMPT))
    played.assigned(epoch=1, m_init=4, verifier="https://v/", sampling=None)
    return played


def proposal_body(played: PlayedSession, tokens: list[int], **changes: Any) -> dict[str, Any]:
    body = {"session": played.id, "epoch": 1, "round": played.round + 1, "drafter": ME, "base": len(played.output),
            "base_digest": chain(played.contract, played.output), "tokens": tokens,
            "status": {"instance": ME, "role": 1, "load": 0, "queue": 0, "ttl_ms": 3000}}
    body.update(changes)
    return {key: value for key, value in body.items() if value is not None}


class World:
    def __init__(self) -> None:
        self.events: list[CacheEvent] = []
        self.objects: dict[str, bytes] = {}
        self.sequence = 0

    def facts(self) -> DrafterFacts:
        return DrafterFacts(ME, 128, DRAFT, 2.0, lambda uri: [e for e in self.events if uri.endswith(e.path)],
                            self.objects.get)

    def put(self, uri: str, rows: np.ndarray, lease: int | None = 35000) -> None:
        self.sequence += 1
        self.objects[uri] = np.ascontiguousarray(rows, dtype="<f4").tobytes()
        self.events.append(CacheEvent(self.sequence, 0.0, "PUT", "/cache/q/1", 201, lease,
                                      None if lease is None else str(lease), 0, ME))

    def arrive(self, played: PlayedSession, body: dict[str, Any], *, raw: bytes | None = None,
               content_type: str = "application/sdcp+cbor", peer: str = ME) -> Arrival:
        self.sequence += 1
        data = raw if raw is not None else encode(body)
        arrival = Arrival(self.sequence, 0.0, "https://v/", peer, data, content_type, Proposal.from_cbor(data))
        arrival.observations = review(played, arrival, self.facts())
        played.arrivals.append(arrival)
        if played.open is None or arrival.key != played.open.key or played.open.outcome is not Outcome.PENDING:
            played.open = arrival
        return arrival


def rows_of(arrival: Arrival) -> set[str]:
    return {observation.row for observation in arrival.observations}


def test_a_correct_rule1_proposal_raises_nothing() -> None:
    played, world = session(), World()
    arrival = world.arrive(played, proposal_body(played, greedy(DRAFT, PROMPT[-1], 3)))
    assert arrival.observations == []


def test_round_base_digest_and_limit_are_what_the_drafter_was_told() -> None:
    played, world = session(), World()
    tokens = greedy(DRAFT, PROMPT[-1], 3)
    assert rows_of(world.arrive(played, proposal_body(played, tokens, round=2))) == {"R-6.2-ROUND"}
    played.open = None
    off_chain = rows_of(world.arrive(played, proposal_body(played, tokens, base_digest=bytes(32))))
    assert off_chain == {"R-6.2-BASE", "R-4.2-CHAIN"}
    played.open = None
    assert "R-6.2-M-BOUNDS" in rows_of(world.arrive(played, proposal_body(played, greedy(DRAFT, PROMPT[-1], 5))))


def test_members_status_identity_and_vocabulary() -> None:
    played, world = session(), World()
    tokens = greedy(DRAFT, PROMPT[-1], 2)
    wrong_status = {"instance": ME, "role": 2, "load": 0, "queue": 0, "ttl_ms": 3000}
    checks = {
        "R-5.2-STATUS-MEMBER": proposal_body(played, tokens, status=wrong_status),
        "R-5.2-PROPOSAL": proposal_body(played, tokens, epoch=2),
    }
    for row, body in checks.items():
        played.open = None
        assert row in rows_of(world.arrive(played, body)), row
    played.open = None
    assert "P1-ID-1/PROPOSAL" in rows_of(world.arrive(played, proposal_body(played, tokens), peer="https://x/"))
    played.open = None
    assert "R-5.1-MEDIA-TYPE" in rows_of(world.arrive(played, proposal_body(played, tokens),
                                                      content_type="application/cbor"))


def test_one_outstanding_identical_retries_and_other_proposals() -> None:
    played, world = session(), World()
    tokens = greedy(DRAFT, PROMPT[-1], 3)
    first = world.arrive(played, proposal_body(played, tokens))
    retry = world.arrive(played, proposal_body(played, tokens))
    assert retry.observations == []  # the same bytes: a retry after the drafter's own timeout
    other = world.arrive(played, proposal_body(played, tokens[:2]))
    assert "R-6.2-ONE-OUTSTANDING" in rows_of(other)
    played.open, first.outcome = first, Outcome.LOST
    assert "R-6.9-RETRY" in rows_of(world.arrive(played, proposal_body(played, tokens[:1])))
    played.open = first
    changed = proposal_body(played, tokens, status={"instance": ME, "role": 1, "load": 9, "queue": 0, "ttl_ms": 3000})
    assert rows_of(world.arrive(played, changed)) == {"P1-DRF-5/RETRY"}


def test_rule1_greedy_and_no_q_rows() -> None:
    played, world = session(), World()
    not_greedy = [(greedy(DRAFT, PROMPT[-1], 1)[0] + 1) % 128]
    assert rows_of(world.arrive(played, proposal_body(played, not_greedy))) == {"P1-DRF-4"}
    played.open = None
    with_rows = proposal_body(played, greedy(DRAFT, PROMPT[-1], 1), q_rows=Q_URI)
    assert rows_of(world.arrive(played, with_rows)) == {"P1-DRF-4"}


def test_rule2_rows_written_first_leased_sized_and_covering_their_tokens() -> None:
    played, world = session(rule=2), World()
    assert rows_of(world.arrive(played, proposal_body(played, [3]))) == {"R-6.4-CARRY-Q-ROWS"}
    played.open = None
    row = np.zeros((1, 128))
    row[0, 3] = 1.0
    assert "R-6.2-ARTIFACTS" in rows_of(world.arrive(played, proposal_body(played, [3], q_rows=Q_URI)))
    world.put(Q_URI, row)
    played.open = None
    good = world.arrive(played, proposal_body(played, [3], q_rows=Q_URI))
    assert good.observations == [] and good.rows is not None and good.rows[0, 3] == 1.0
    played.open = None
    assert rows_of(world.arrive(played, proposal_body(played, [4], q_rows=Q_URI))) == {"R-5.2-EXACT-ROW"}
    world.put(Q_URI, np.full((1, 128), 0.5))
    played.open = None
    assert rows_of(world.arrive(played, proposal_body(played, [3], q_rows=Q_URI))) == {"R-5.2-Q-ROWS"}
    world.put(Q_URI, np.full((2, 128), 1 / 128))
    played.open = None
    assert rows_of(world.arrive(played, proposal_body(played, [3], q_rows=Q_URI))) == {"R-5.2-Q-ROWS"}
    world.put(Q_URI, row, lease=None)
    played.open = None
    assert rows_of(world.arrive(played, proposal_body(played, [3], q_rows=Q_URI))) == {"P1-MLC-3/LEASE"}
    world.put(Q_URI, row, lease=500)
    played.open = None
    assert rows_of(world.arrive(played, proposal_body(played, [3], q_rows=Q_URI))) == {"P1-DRF-8/LEASE"}


def test_rule1_verdicts_follow_the_target_and_extend_the_chain() -> None:
    played = session()
    target_next = greedy(TARGET, PROMPT[-1], 3)
    tokens = [target_next[0], (target_next[1] + 1) % 128, 7]
    proposal = Proposal.from_obj(proposal_body(played, tokens))
    verdict = build_verdict(played, proposal, TARGET, VerdictPlan())
    bonus = greedy(TARGET, target_next[0], 1)[0]
    assert (verdict.accepted, list(verdict.emitted)) == (1, [target_next[0], bonus])
    assert verdict.digest == chain(played.contract, [target_next[0], bonus]) and verdict.committed == 2
    assert verdict.round == 1 and verdict.action is Action.CONTINUE and verdict.m_cap == 8


def test_verdicts_truncate_at_stop_tokens_and_max_new_and_then_finish() -> None:
    played = session(max_new=2)
    proposal = Proposal.from_obj(proposal_body(played, [3, 4, 5]))
    verdict = build_verdict(played, proposal, TARGET, VerdictPlan(accepted=3, bonus=6))
    assert list(verdict.emitted) == [3, 4] and verdict.action is Action.FINISH
    stopping = session(stop=[4])
    verdict = build_verdict(stopping, Proposal.from_obj(proposal_body(stopping, [3, 4, 5])), TARGET,
                            VerdictPlan(accepted=3, bonus=6))
    assert list(verdict.emitted) == [3, 4] and verdict.action is Action.FINISH
    unknown = build_verdict(stopping, Proposal.from_obj(proposal_body(stopping, [3])), TARGET,
                            VerdictPlan(accepted=1, bonus=9, action=9))
    assert int(unknown.action) == 9 and encode(unknown.to_obj())


def test_the_quiet_window_follows_the_drafters_pace() -> None:
    pace = Pace()
    assert pace.quiet_window() == 1.5
    for _ in range(20):
        pace.add(0.01)
    assert pace.quiet_window() == 0.6
    pace.paused = True
    pace.add(3.0)
    assert pace.quiet_window() == 0.6
    pace.paused = False
    for _ in range(20):
        pace.add(0.5)
    assert pace.quiet_window() == 2.0


def test_a_refused_assignment_is_undone() -> None:
    played = session()
    saved = played.snapshot()
    played.assigned(epoch=5, m_init=1, verifier="https://w/", sampling={"temperature_milli": 2}, now=1.0)
    played.restore(saved)
    assert played.epoch == 1 and played.limit == 4 and played.verifier == "https://v/" and played.sampling is None


def test_after_a_late_proposal_the_limit_may_be_the_assignments_until_the_next_verdict() -> None:
    """D-JUDGE-D-LATE-LIMIT: the harness answered a proposal the drafter had abandoned for its new assignment;
    the drafter, resynchronised, may still use m_init (§6.2), but never more, and the next verdict binds again."""
    played, world = session(), World()  # m_init 4, m_max 8
    played.decided(1, greedy(TARGET, PROMPT[-1], 2), m_cap=1)
    three = greedy(DRAFT, played.context()[-1], 3)
    assert "R-6.2-M-BOUNDS" in rows_of(world.arrive(played, proposal_body(played, three)))  # control: 3 > m_cap 1
    played.open = None
    played.may_not_have_learned_the_last_verdict()
    assert rows_of(world.arrive(played, proposal_body(played, three))) == set()
    played.open = None
    five = greedy(DRAFT, played.context()[-1], 5)
    assert "R-6.2-M-BOUNDS" in rows_of(world.arrive(played, proposal_body(played, five)))  # over m_init 4
    played.open = None
    played.decided(2, greedy(TARGET, played.context()[-1], 2), m_cap=2)
    three = greedy(DRAFT, played.context()[-1], 3)
    assert "R-6.2-M-BOUNDS" in rows_of(world.arrive(played, proposal_body(played, three)))


async def _proposal_during_a_lower_epoch_assignment(
        taken: bool) -> tuple[PlayedSession, Arrival, asyncio.Task[Response]]:
    """Holding epoch 2 after round 1, the harness sends an assignment with epoch 1; before its answer, the drafter's
    round-2 proposal under epoch 2 arrives. The answer then says refused (P1-DRF-7) or, for a wrong drafter, taken."""
    board = VerifierBoard(facts=World().facts)
    played = board.add(session())
    played.assigned(epoch=2, m_init=4, verifier="https://v/", sampling=None, now=0.0)
    played.decided(1, greedy(TARGET, PROMPT[-1], 2), m_cap=4)
    body = proposal_body(played, greedy(DRAFT, played.context()[-1], 3), epoch=2)
    saved = played.snapshot()
    played.assigned(epoch=1, m_init=4, verifier="https://v/", sampling=None, now=asyncio.get_running_loop().time())
    played.in_doubt = saved
    request = Request("POST", "/proposals", "", (("content-type", "application/sdcp+cbor"),), encode(body), ME)
    answered = asyncio.create_task(board.receive("https://v/", request))
    while not played.arrivals:  # until the played verifier has taken the request in (no timer: one loop pass each)
        await asyncio.sleep(0)
    arrival = played.arrivals[-1]
    assert not answered.done() and arrival.outcome is Outcome.PENDING, "answered before the assignment's answer"
    played.in_doubt = None
    if not taken:
        played.restore(saved)
    doubt_resolved(played, [arrival])
    await asyncio.sleep(0)
    return played, arrival, answered


def test_a_proposal_under_the_held_epoch_waits_while_a_lower_epoch_assignment_is_in_doubt() -> None:
    """D-JUDGE-D10 applies once an assignment is taken: before its answer the drafter may still refuse it, and a
    proposal under the assignment it holds is then the round the case goes on with (it was once refused 409
    sdcp-stale-epoch at once, which stopped a correct drafter: a false finding a slow answer, a GOAWAY, exposed)."""
    async def refused() -> None:
        played, arrival, answered = await _proposal_during_a_lower_epoch_assignment(taken=False)
        assert arrival.outcome is Outcome.PENDING and not arrival.late and played.open is arrival
        assert played.epoch == 2 and not answered.done()
        answered.cancel()

    async def taken() -> None:
        played, arrival, answered = await _proposal_during_a_lower_epoch_assignment(taken=True)
        assert arrival.late and arrival.outcome is Outcome.FINAL and played.open is None
        response = await answered
        assert response.status == ProblemType.STALE_EPOCH.status

    asyncio.run(refused())
    asyncio.run(taken())



async def _refused_then_retried(gave_up: bool, crossed: bool = False
                                ) -> tuple[PlayedSession, bool, Response, Arrival]:
    """A proposal is refused 409 sdcp-stale-base with state 4 (stop, P1-DRF-6); the drafter gave up on the request
    before that answer (its timeout: the request task cancelled) or not; if ``crossed``, the server then reports the
    answer lost (the drafter's reset crossed it); then the identical proposal arrives."""
    board = VerifierBoard(facts=World().facts)
    played = board.add(session())
    body = encode(proposal_body(played, greedy(DRAFT, PROMPT[-1], 3)))
    request = Request("POST", "/proposals", "", (("content-type", "application/sdcp+cbor"),), body, ME)
    first = asyncio.create_task(board.receive("https://v/", request))
    while not played.arrivals:  # until the played verifier has taken the request in (one loop pass each)
        await asyncio.sleep(0)
    if gave_up:
        first.cancel()
        await asyncio.gather(first, return_exceptions=True)
    stop = refusal_response(ProblemType.STALE_BASE, "stop", {"session": played.id, "state": 4})
    delivered = answer_final(played, played.arrivals[0], stop, "409 sdcp-stale-base")
    played.stop("P1-DRF-6/STOP", "sdcp-stale-base with state 4")
    if not gave_up:
        sent = await first
        assert (sent.status, sent.body) == (stop.status, stop.body) and sent.undelivered is not None
        if crossed:
            sent.undelivered()
    again = await board.receive("https://v/", request)
    return played, delivered, again, played.arrivals[-1]


def test_a_final_answer_that_reached_no_one_goes_to_the_identical_retry_unjudged() -> None:
    """D-JUDGE-D17: a drafter whose request timed out before the harness refused it never learned the refusal; its
    identical retry (P1-DRF-5) gets the refusal and is neither a resend after a 4xx nor a proposal after a stop
    (under load a correct drafter was found NON-STRICT at P1-DRF-6 and P1-DRF-5 so). A retry after a refusal that
    was received is still judged."""
    played, delivered, again, retry = asyncio.run(_refused_then_retried(gave_up=True))
    assert not delivered and again.status == ProblemType.STALE_BASE.status
    assert retry.twin and retry.judged and retry.observations == []
    assert played.finals and not played.undelivered  # final once it reached the drafter

    played, delivered, again, retry = asyncio.run(_refused_then_retried(gave_up=False, crossed=True))
    assert delivered and again.status == ProblemType.STALE_BASE.status  # the server said it never arrived
    assert retry.twin and retry.judged and retry.observations == []

    played, delivered, again, retry = asyncio.run(_refused_then_retried(gave_up=False))
    assert delivered and not retry.twin
    assert "P1-DRF-5/FINAL" in rows_of(retry)
    assert again.status == ProblemType.NOT_ASSIGNED.status  # after a stop the drafter is not assigned (D-JUDGE)


def test_a_resend_after_an_unlisted_4xx_is_judged_by_class_and_after_a_listed_one_by_the_profile() -> None:
    """§5.1 "clients handle unlisted status codes by class": the resend of a proposal refused with a bare 418 is
    a deviation from R-5.1-BY-CLASS (MUST) whenever it comes, within the case's quiet window or after it (under
    load a resend after the window was once filed under P1-DRF-5 alone, NON-STRICT); after 403
    sdcp-not-assigned it is P1-DRF-5's."""
    async def refused_then_resent(status: int, problem: ProblemType | None) -> Arrival:
        world, played = World(), session()
        body = proposal_body(played, greedy(DRAFT, PROMPT[-1], 2))
        first = world.arrive(played, body)
        first.future = asyncio.get_running_loop().create_future()  # the drafter is listening
        response = refusal_response(problem, "no") if problem is not None else Response(status, b"")
        assert answer_final(played, first, response,
                            f"{status} {problem.suffix}" if problem is not None else str(status))
        return world.arrive(played, body)

    for status, problem, row in ((418, None, "R-5.1-BY-CLASS"),
                                 (403, ProblemType.NOT_ASSIGNED, "P1-DRF-5/FINAL")):
        resend = asyncio.run(refused_then_resent(status, problem))
        assert row in rows_of(resend), (status, rows_of(resend))
        other = {"R-5.1-BY-CLASS", "P1-DRF-5/FINAL"} - {row}
        assert not rows_of(resend) & other, (status, rows_of(resend))


async def _proposal_over_a_new_limit(dropped: bool) -> tuple[PlayedSession, Arrival]:
    """After round 1 under m_init 4 the harness sends an assignment with m_init 2 (same epoch); before its answer a
    proposal of 3 tokens under the old one arrives, which the drafter drops on taking the assignment (P1-DRF-7:
    its handler cancelled, ABANDONED) or has not dropped yet when the answer arrives."""
    board = VerifierBoard(facts=World().facts)
    played = board.add(session())
    played.decided(1, greedy(TARGET, PROMPT[-1], 2), m_cap=4)
    body = proposal_body(played, greedy(DRAFT, played.context()[-1], 3))
    saved = played.snapshot()
    played.assigned(epoch=played.epoch, m_init=2, verifier="https://v/", sampling=None,
                    now=asyncio.get_running_loop().time())
    played.in_doubt = saved
    request = Request("POST", "/proposals", "", (("content-type", "application/sdcp+cbor"),), encode(body), ME)
    answered = asyncio.create_task(board.receive("https://v/", request))
    while not played.arrivals:  # until the played verifier has taken the request in (one loop pass each)
        await asyncio.sleep(0)
    arrival = played.arrivals[-1]
    if dropped:
        answered.cancel()
        await asyncio.gather(answered, return_exceptions=True)
    played.in_doubt = None
    doubt_resolved(played, [arrival])
    await asyncio.gather(answered, return_exceptions=True)
    return played, arrival


@pytest.mark.parametrize("dropped", [True, False], ids=["dropped", "still-waiting"])
def test_a_proposal_under_the_replaced_limit_is_late_even_if_the_drafter_dropped_it(dropped: bool) -> None:
    """D-JUDGE-D10: the 3-token proposal follows the replaced assignment and is late, not the drafter's next
    proposal. Dropped before the answer came, it was once left for the next case step to take: a fuzz step refused
    it with a stop (an answer that reached no one) and then judged the 2-token proposal that replaced it as a
    proposal after the stop (P1-DRF-6/STOP against the reference, under load)."""
    played, arrival = asyncio.run(_proposal_over_a_new_limit(dropped))
    assert arrival.outcome is (Outcome.ABANDONED if dropped else Outcome.FINAL)
    assert arrival.late and arrival.judged and played.open is None


def test_a_new_assignment_supersedes_the_unanswered_proposals_even_those_already_dropped() -> None:
    """P1-DRF-7: a proposal still waiting, and one the drafter already dropped (reset on taking the assignment,
    before the assignment's answer came), are superseded, so no case takes either for the next proposal; answered
    ones keep their answers."""
    async def go() -> list[Arrival]:
        board = VerifierBoard(facts=World().facts)
        played = board.add(session())
        body = encode(proposal_body(played, greedy(DRAFT, PROMPT[-1], 3)))
        request = Request("POST", "/proposals", "", (("content-type", "application/sdcp+cbor"),), body, ME)
        tasks = [asyncio.create_task(board.receive("https://v/", request)) for _ in range(3)]
        while len(played.arrivals) < 3:
            await asyncio.sleep(0)
        waiting, dropped, answered = played.arrivals
        tasks[1].cancel()
        settle(answered, refusal_response(ProblemType.BAD_PROPOSAL, "no"), Outcome.FINAL, "422")
        await asyncio.gather(tasks[1], tasks[2], return_exceptions=True)
        assert dropped.outcome is Outcome.ABANDONED and not dropped.superseded
        supersede(played.arrivals)
        tasks[0].cancel()
        await asyncio.gather(tasks[0], return_exceptions=True)
        return [waiting, dropped, answered]

    waiting, dropped, answered = asyncio.run(go())
    assert waiting.superseded and dropped.superseded and not answered.superseded
    assert (waiting.outcome, dropped.outcome, answered.outcome) == (Outcome.ABANDONED, Outcome.ABANDONED, Outcome.FINAL)
