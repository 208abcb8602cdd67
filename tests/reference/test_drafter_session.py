"""The reference drafter's sans-I/O session machine (§6.2, §6.3 "After the verdict", §6.9; P1-DRF-*).

Expected digests are recomputed here with SHA-256 over the prompt and tokens
(§4.2), never taken from the machine.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.protocol.errors import ProtocolError
from sdcp_conformance.protocol.messages import Assignment, Output, SessionState, Status, Verdict
from sdcp_conformance.protocol.problems import ProblemType
from sdcp_conformance.reference.drafter.ports import Problem
from sdcp_conformance.reference.drafter.session import (
    DrafterIdentity,
    DrafterSession,
    Estimates,
    Next,
    check_epoch,
)
from tests.reference.digests import chain, prefix_digest
from tests.reference.parties import SESSION, TOKENIZER, party

V = 8
ME = party("drafter")
MODEL = bytes([7]) * 32
PROMPT = [1, 2, 3]
IDENTITY = DrafterIdentity(ME, MODEL, TOKENIZER, V)
STATUS = Status(instance=ME, role=1, load=0, queue=0, ttl_ms=1000)


def contract(**changes: Any) -> dict[str, Any]:
    return {
        "target": bytes([1]) * 32, "tokenizer": TOKENIZER, "rule": 1, "m_max": 6, "max_new": 40, "stop": [],
        "low_rounds": 2, "fallback": [1, 2],
    } | changes


def d0(contract_obj: dict[str, Any], prompt: Sequence[int] = PROMPT) -> bytes:
    return prefix_digest(contract_obj, prompt)


def assignment(committed: Sequence[int] = (), **changes: Any) -> Assignment:
    contract_obj = changes.pop("contract", contract())
    obj = {
        "session": SESSION, "epoch": 1, "contract": contract_obj, "verifier": "https://127.0.0.1:1/v/",
        "drafter": ME, "prompt": PROMPT, "round": 0, "committed": len(committed),
        "digest": chain(d0(contract_obj), committed), "m_init": 4,
    }
    return Assignment.from_obj(obj | changes)


def machine(committed: Sequence[int] | None = (), alpha: float = 0.5, **changes: Any) -> DrafterSession:
    held = assignment(committed or (), **changes)
    return DrafterSession(held, PROMPT, committed, identity=IDENTITY, estimates=Estimates(alpha), max_setbacks=2)


def verdict(session: DrafterSession, emitted: Sequence[int], accepted: int, **changes: Any) -> Verdict:
    obj = {
        "session": SESSION, "epoch": session.epoch, "round": session.round + 1, "accepted": accepted,
        "emitted": list(emitted), "committed": len(session.output) + len(emitted),
        "digest": chain(chain(d0(contract()), session.output), emitted), "action": 0, "m_cap": 4, "low": 0,
        "load": 0,
    }
    return Verdict.from_obj(obj | changes)


def refusal(call: Any) -> ProtocolError:
    with pytest.raises(ProtocolError) as info:
        call()
    return info.value


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"m_init": 0}, ProblemType.BAD_MESSAGE),  # P1-DRF-2
        ({"contract": contract(drafters=[bytes(32)])}, ProblemType.BAD_CONTRACT),  # P1-DRF-3
        ({"contract": contract(tokenizer=bytes(32))}, ProblemType.BAD_CONTRACT),  # P1-DRF-3
        ({"contract": contract(rule=9)}, ProblemType.BAD_CONTRACT),
        ({"drafter": "https://127.0.0.1:1/other/"}, ProblemType.BAD_MESSAGE),  # D-DRF-2
        ({"prompt": [1, V]}, ProblemType.BAD_MESSAGE),  # D-DRF-3
    ],
)
def test_assignment_refusals(changes: dict[str, Any], problem: ProblemType) -> None:
    prompt = changes.get("prompt", PROMPT)
    held = assignment(**changes)
    error = refusal(lambda: DrafterSession(held, prompt, (), identity=IDENTITY, estimates=Estimates(0.5)))
    assert error.problem is problem


def test_contract_listing_this_model_is_accepted() -> None:
    session = machine(contract=contract(drafters=[bytes(32), MODEL]))
    assert session.limit() == 4 and not session.needs_resync


def test_committed_tokens_must_reproduce_the_digest() -> None:
    held = assignment([4, 5])
    forged = refusal(lambda: DrafterSession(held, PROMPT, [4, 6], identity=IDENTITY, estimates=Estimates(0.5)))
    assert forged.problem is ProblemType.BAD_MESSAGE  # D-DRF-4
    short = refusal(lambda: DrafterSession(held, PROMPT, [4], identity=IDENTITY, estimates=Estimates(0.5)))
    assert short.problem is ProblemType.BAD_MESSAGE


def test_lower_epoch_is_stale_and_equal_or_higher_replaces() -> None:
    held = machine(epoch=3)
    assert refusal(lambda: check_epoch(held, assignment(epoch=2))).problem is ProblemType.STALE_EPOCH
    check_epoch(held, assignment(epoch=3))
    check_epoch(held, assignment(epoch=4))
    check_epoch(None, assignment(epoch=1))


def test_first_proposal_extends_the_assignment_prefix() -> None:
    committed = [4, 5]
    session = machine(committed, round=7)
    proposal = session.next_proposal([1, 2, 3], None, STATUS)
    assert proposal.round == 8 and proposal.base == 2 and proposal.epoch == 1
    assert proposal.base_digest == chain(d0(contract()), committed)
    assert proposal.drafter == ME and proposal.q_rows is None and proposal.tokens == (1, 2, 3)
    assert session.context == (*PROMPT, *committed)


def test_at_most_one_outstanding_proposal_and_the_limit() -> None:
    session = machine()
    with pytest.raises(InvalidArgument):
        session.next_proposal([1] * 5, None, STATUS)  # m_init 4
    session.next_proposal([1], None, STATUS)
    with pytest.raises(InvalidArgument):
        session.next_proposal([1], None, STATUS)  # §6.2: one outstanding proposal per session


def test_rule2_needs_q_rows_and_rule1_publishes_none() -> None:
    with pytest.raises(InvalidArgument):
        machine(contract=contract(rule=2)).next_proposal([1], None, STATUS)
    with pytest.raises(InvalidArgument):
        machine().next_proposal([1], "https://127.0.0.1:1/c/q", STATUS)  # P1-DRF-4
    assert machine(contract=contract(rule=2)).next_proposal([1], "https://c/q", STATUS).q_rows == "https://c/q"


def test_limit_follows_m_init_then_m_cap_within_m_max() -> None:
    session = machine(m_init=9)
    assert session.limit() == 6  # min(m_max 6, m_init 9)
    session.next_proposal([1, 2], None, STATUS)
    assert session.on_verdict(verdict(session, [1, 2, 3], 2, m_cap=2)) is Next.PROPOSE
    assert session.limit() == 2
    session.next_proposal([1], None, STATUS)
    session.on_verdict(verdict(session, [4], 0, m_cap=64))
    assert session.limit() == 6


def test_verdict_advances_prefix_round_and_per_token_alpha() -> None:
    session = machine(alpha=0.5)
    session.next_proposal([1, 2, 3], None, STATUS)
    assert session.on_verdict(verdict(session, [1, 2, 5], 2)) is Next.PROPOSE
    assert session.output == [1, 2, 5] and session.round == 1
    assert session.digest == chain(d0(contract()), [1, 2, 5])
    # P1-DRF-8: two accepted positions count 1, the first rejected one 0 (weight 0.1).
    expected = 0.5
    for seen in (1.0, 1.0, 0.0):
        expected += 0.1 * (seen - expected)
    assert session.estimates.alpha == pytest.approx(expected)
    assert session.estimates.accept_milli == 667 and session.last_observed == (2, 3)
    following = session.next_proposal([3], None, STATUS)
    assert following.round == 2 and following.base == 3 and following.base_digest == session.digest


def test_verdict_whose_digest_does_not_extend_d_n_stops() -> None:
    session = machine()
    session.next_proposal([1, 2], None, STATUS)
    assert session.on_verdict(verdict(session, [1, 2, 3], 2, digest=bytes(32))) is Next.STOP
    assert session.stopped is not None and session.output == []
    with pytest.raises(InvalidArgument):
        session.next_proposal([1], None, STATUS)


def test_verdict_for_another_round_or_epoch_stops() -> None:
    for changes in ({"round": 2}, {"epoch": 2}):
        session = machine()
        session.next_proposal([1], None, STATUS)
        assert session.on_verdict(verdict(session, [1, 2], 1, **changes)) is Next.STOP


def test_stored_verdict_of_another_proposal_commits_without_estimates() -> None:
    session = machine(alpha=0.5)
    session.next_proposal([6, 6], None, STATUS)
    # P1-IDEM-1: the round already had a verdict for an abandoned proposal [1, 2, 3].
    assert session.on_verdict(verdict(session, [1, 2, 3, 4], 3)) is Next.PROPOSE
    assert session.output == [1, 2, 3, 4] and session.estimates.alpha == 0.5 and session.last_observed is None


@pytest.mark.parametrize("action", [2, 3, 4, 5, 17])
def test_switch_self_decode_finish_fail_and_unknown_actions_stop(action: int) -> None:
    session = machine()
    session.next_proposal([1], None, STATUS)
    assert session.on_verdict(verdict(session, [1, 2], 1, action=action)) is Next.STOP
    assert session.stopped is not None and session.output == [1, 2]


def test_reduce_continues() -> None:
    session = machine()
    session.next_proposal([1], None, STATUS)
    assert session.on_verdict(verdict(session, [3], 0, action=1, m_cap=2)) is Next.PROPOSE


def test_q_unavailable_allows_a_different_proposal_for_the_same_round() -> None:
    session = machine(contract=contract(rule=2))
    session.next_proposal([1], "https://c/q1", STATUS)
    problem = Problem(ProblemType.Q_UNAVAILABLE, 409)
    assert session.on_problem(problem) is Next.PROPOSE and session.setbacks == 1
    again = session.next_proposal([2], "https://c/q2", STATUS)
    assert again.round == 1 and again.base == 0
    session.on_problem(problem)
    session.next_proposal([2], "https://c/q3", STATUS)
    assert session.on_problem(problem) is Next.STOP  # D-DRF-12: max_setbacks = 2


@pytest.mark.parametrize("problem", [ProblemType.STALE_EPOCH, ProblemType.NOT_ASSIGNED, ProblemType.SESSION_CLOSED,
                                     ProblemType.LIMIT, ProblemType.BAD_PROPOSAL, None])
def test_other_final_problems_stop(problem: ProblemType | None) -> None:
    session = machine()
    session.next_proposal([1], None, STATUS)
    assert session.on_problem(Problem(problem, problem.status if problem else 400)) is Next.STOP


def state(committed: Sequence[int], **changes: Any) -> SessionState:
    obj = {"session": SESSION, "epoch": 1, "round": 3, "committed": len(committed),
           "digest": chain(d0(contract()), committed), "state": 0}
    return SessionState.from_obj(obj | changes)


def output(tokens: Sequence[int], start: int, **changes: Any) -> Output:
    return Output.from_obj({"session": SESSION, "epoch": 1, "from": start, "tokens": list(tokens),
                            "final": False} | changes)


def test_stale_base_resyncs_from_output_and_checks_the_digest() -> None:
    session = machine([4])
    session.next_proposal([1], None, STATUS)
    stale = Problem(ProblemType.STALE_BASE, 409, state([4, 5, 6, 7]))
    assert session.on_problem(stale) is Next.RESYNC and session.resync_start() == 1
    assert session.on_output(output([5], 1)) is Next.RESYNC and session.resync_start() == 2
    # Tokens beyond the state's committed length are ignored.
    assert session.on_output(output([6, 7, 0], 2)) is Next.PROPOSE
    assert session.output == [4, 5, 6, 7] and session.round == 3
    proposal = session.next_proposal([1], None, STATUS)
    assert (proposal.round, proposal.base) == (4, 4)
    assert proposal.base_digest == chain(d0(contract()), [4, 5, 6, 7])


def test_resync_refuses_a_forged_output() -> None:
    session = machine()
    session.next_proposal([1], None, STATUS)
    session.on_problem(Problem(ProblemType.STALE_BASE, 409, state([4, 5])))
    assert session.on_output(output([4, 6], 0)) is Next.STOP
    assert session.output == [] and session.stopped is not None


@pytest.mark.parametrize(
    "answer",
    [{"epoch": 2}, {"from": 1}, {"session": bytes(16)}, {"final": True}],
)
def test_resync_refuses_output_of_another_epoch_offset_or_an_early_end(answer: dict[str, Any]) -> None:
    session = machine()
    session.next_proposal([1], None, STATUS)
    session.on_problem(Problem(ProblemType.STALE_BASE, 409, state([4, 5])))
    assert session.on_output(output([4], 0, **answer)) is Next.STOP


@pytest.mark.parametrize("closed", [3, 4, 5])
def test_stale_base_with_a_closed_or_self_decoding_state_stops(closed: int) -> None:
    session = machine()
    session.next_proposal([1], None, STATUS)
    assert session.on_problem(Problem(ProblemType.STALE_BASE, 409, state([4], state=closed))) is Next.STOP


def test_stale_base_without_state_or_behind_the_drafter_stops() -> None:
    for stale_state in (None, state([]), state([9, 9]), state([4, 5], epoch=2)):
        session = machine([4, 5], round=3)
        session.next_proposal([1], None, STATUS)
        assert session.on_problem(Problem(ProblemType.STALE_BASE, 409, stale_state)) is Next.STOP, stale_state


def test_stale_base_naming_the_same_prefix_is_a_setback() -> None:
    session = machine([4], round=1)
    session.next_proposal([1], None, STATUS)
    assert session.on_problem(Problem(ProblemType.STALE_BASE, 409, state([4], round=2))) is Next.PROPOSE
    assert session.setbacks == 1 and session.next_proposal([1], None, STATUS).round == 3


def test_assignment_without_committed_tokens_starts_with_a_resync() -> None:
    held = assignment([4, 5], round=2)
    session = DrafterSession(held, PROMPT, None, identity=IDENTITY, estimates=Estimates(0.5))
    assert session.needs_resync and session.resync_start() == 0
    with pytest.raises(InvalidArgument):
        session.next_proposal([1], None, STATUS)
    assert session.on_output(output([4, 5], 0)) is Next.PROPOSE
    assert session.next_proposal([1], None, STATUS).round == 3


def test_choose_m_uses_the_limit_and_the_max_new_budget() -> None:
    session = machine(alpha=0.9)
    assert session.choose_m(0.0, 1.0) == 4  # free drafting: the whole limit
    assert machine(alpha=0.0).choose_m(0.001, 1.0) == 1  # alpha 0: one token is all a round yields
    short = machine([1, 2, 3], contract=contract(max_new=5))
    assert short.choose_m(0.0, 1.0) == 1  # D-DRF-7: max(1, 5 - 3 - 1)
    # §6.2: maximise E/(M t_d + t_v); alpha 0.5, t_d = t_v = 1 → E(M)/(M+1) peaks at M = 1 or 2.
    rates = {m: (1 - 0.5 ** (m + 1)) / 0.5 / (m + 1) for m in range(1, 5)}
    best = max(rates, key=lambda m: (rates[m], -m))
    assert machine(alpha=0.5).choose_m(1.0, 1.0) == best
