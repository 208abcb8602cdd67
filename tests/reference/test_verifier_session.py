"""The reference verifier's sans-I/O session machine, step by step (§6.1, §6.3–§6.7).

Expectations are computed here from the rows the test chooses (which token is
the argmax) and from the digest chain over the tokens (pinned by vectors in
tests/protocol), never by asking the machine what it would do.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from sdcp_conformance.protocol.chain import extend_digest, prefix_digest
from sdcp_conformance.protocol.contract import digest_of
from sdcp_conformance.protocol.control import Action
from sdcp_conformance.protocol.errors import ProtocolError
from sdcp_conformance.protocol.messages import Assignment, Policy, Proposal, Sampling, SessionOpen
from sdcp_conformance.protocol.problems import ProblemType
from sdcp_conformance.protocol.rng import SeededUniforms
from sdcp_conformance.reference.verifier.session import (
    Phase,
    StoredVerdict,
    Ticket,
    VerifierSession,
    WaitForRound,
)
from tests.reference.parties import DA, DB, SESSION

V = 8
DRAFTER, OTHER = DA, DB
PROMPT = [1, 2, 3]


def contract(**changes: Any) -> dict[str, Any]:
    base = {
        "target": bytes(32), "tokenizer": bytes(32), "rule": 1, "m_max": 4, "max_new": 20,
        "stop": [7], "low_rounds": 2, "fallback": [1, 2],
    }
    return base | changes


def open_session(**changes: Any) -> VerifierSession:
    opening = SessionOpen.from_obj({
        "session": SESSION, "epoch": 1, "contract": contract(**changes), "prompt": PROMPT,
        "commit_log": "https://127.0.0.1:1/log",
    })
    return VerifierSession(opening, PROMPT, vocab_size=V)


def assign(session: VerifierSession, drafter: str = DRAFTER, m_init: int = 4) -> None:
    state = session.state()
    session.assign(Assignment.from_obj({
        "session": SESSION, "epoch": session.epoch, "contract": session.contract.to_obj(),
        "verifier": "https://127.0.0.1:1/v/", "drafter": drafter, "prompt": PROMPT,
        "round": state.round, "committed": state.committed, "digest": state.digest, "m_init": m_init,
    }))


def proposal(session: VerifierSession, tokens: Sequence[int], **changes: Any) -> Proposal:
    obj = {
        "session": SESSION, "epoch": session.epoch, "round": session.round + 1, "drafter": DRAFTER,
        "base": len(session.output), "base_digest": session.digest, "tokens": list(tokens),
        "status": {"instance": DRAFTER, "role": 1, "load": 0, "queue": 0, "ttl_ms": 1000},
    }
    return Proposal.from_obj(obj | changes)


def rows_with_argmax(argmaxes: Sequence[int]) -> np.ndarray:
    logits = np.zeros((len(argmaxes), V))
    for row, token in enumerate(argmaxes):
        logits[row, token] = 5.0
    return logits


def play(session: VerifierSession, tokens: Sequence[int], argmaxes: Sequence[int], load: int = 0) -> Any:
    ticket = session.admit(proposal(session, tokens), DRAFTER)
    assert isinstance(ticket, Ticket)
    pending = session.decide(ticket, rows_with_argmax(argmaxes), SeededUniforms(1, SESSION, 1), load)
    return session.commit(pending)


def problem_of(call: Any) -> ProtocolError:
    with pytest.raises(ProtocolError) as info:
        call()
    return info.value


def test_open_computes_d0_from_the_contract_and_prompt() -> None:
    session = open_session()
    state = session.state()
    assert (state.round, state.committed, state.state) == (0, 0, 0)
    assert state.digest == prefix_digest(digest_of(session.contract), PROMPT)


def test_empty_prompt_is_refused() -> None:
    opening = SessionOpen.from_obj({
        "session": SESSION, "epoch": 1, "contract": contract(), "prompt": [], "commit_log": "x",
    })
    assert problem_of(lambda: VerifierSession(opening, [], vocab_size=V)).problem is ProblemType.BAD_MESSAGE


def test_only_the_latest_assigned_drafter_may_propose() -> None:
    session = open_session()
    assert problem_of(lambda: session.admit(proposal(session, [1]), DRAFTER)).problem is ProblemType.NOT_ASSIGNED
    assign(session)
    assert problem_of(lambda: session.admit(proposal(session, [1]), OTHER)).status == 403
    forged = proposal(session, [1], drafter=OTHER)
    assert problem_of(lambda: session.admit(forged, DRAFTER)).problem is ProblemType.NOT_ASSIGNED
    assign(session, OTHER)
    assert problem_of(lambda: session.admit(proposal(session, [1]), DRAFTER)).status == 403


def test_rule1_round_commits_the_greedy_prefix_and_extends_the_digest() -> None:
    session = open_session()
    assign(session)
    d0 = session.digest
    # Proposed 4, 5, 6; the target's argmaxes are 4, 5, 0, 3: a = 2, extra = 0.
    committed = play(session, [4, 5, 6], [4, 5, 0, 3])
    verdict = committed.verdict
    assert (verdict.accepted, verdict.emitted, verdict.round) == (2, (4, 5, 0), 1)
    assert verdict.committed == 3 and session.output == [4, 5, 0]
    assert verdict.digest == extend_digest(d0, [4, 5, 0]) == session.state().digest


def test_fencing_idempotency_and_stale_base_in_order() -> None:
    session = open_session()
    assign(session)
    first = proposal(session, [4])
    ticket = session.admit(first, DRAFTER)
    assert isinstance(ticket, Ticket)
    # While in flight: an identical retry waits, a different one is refused (P1-IDEM-1).
    assert session.admit(first.replace(status=first.status.replace(load=50)), DRAFTER) == WaitForRound(1)
    assert problem_of(lambda: session.admit(first.replace(tokens=(5,)), DRAFTER)).problem is ProblemType.STALE_BASE
    verdict = session.commit(session.decide(ticket, rows_with_argmax([4, 2]), SeededUniforms(1, SESSION, 1), 0)).verdict
    # After the verdict: any proposal for round 1 gets it unchanged, even a stale one.
    assert session.admit(first, DRAFTER) == StoredVerdict(verdict)
    assert session.admit(first.replace(tokens=(6, 6)), DRAFTER) == StoredVerdict(verdict)
    # Wrong epoch comes before idempotency.
    assert problem_of(lambda: session.admit(first.replace(epoch=2), DRAFTER)).problem is ProblemType.STALE_EPOCH
    # Stale base and wrong round carry the state (P1-ERR-2).
    stale = proposal(session, [1], base=0, base_digest=prefix_digest(digest_of(session.contract), PROMPT))
    error = problem_of(lambda: session.admit(stale, DRAFTER))
    assert error.problem is ProblemType.STALE_BASE and error.state == session.state().to_obj()
    skipped = proposal(session, [1], round=3)
    assert problem_of(lambda: session.admit(skipped, DRAFTER)).problem is ProblemType.STALE_BASE


def test_limits_follow_m_init_then_m_cap() -> None:
    session = open_session(m_max=4)
    assign(session, m_init=2)
    error = problem_of(lambda: session.admit(proposal(session, [1, 2, 3]), DRAFTER))
    assert error.problem is ProblemType.LIMIT and error.status == 422
    assert isinstance(session.admit(proposal(session, [1, 2]), DRAFTER), Ticket)
    outside = open_session()
    assign(outside)
    assert problem_of(lambda: outside.admit(proposal(outside, [V]), DRAFTER)).problem is ProblemType.BAD_PROPOSAL


def test_rule2_needs_rows_and_checks_them_before_drawing() -> None:
    session = open_session(rule=2, sampling={"seed": 9})
    assign(session)
    error = problem_of(lambda: session.admit(proposal(session, [1]), DRAFTER))
    assert error.problem is ProblemType.Q_UNAVAILABLE
    ticket = session.admit(proposal(session, [1, 2], q_rows="https://127.0.0.1:1/q"), DRAFTER)
    assert isinstance(ticket, Ticket) and ticket.needs_q
    q = np.full((2, V), 1 / V, dtype="<f4")
    q[1, 2] = 0.0
    assert problem_of(lambda: session.check_q(ticket, q.tobytes())).problem is ProblemType.BAD_PROPOSAL
    assert problem_of(lambda: session.check_q(ticket, q.tobytes()[:-4])).problem is ProblemType.BAD_PROPOSAL
    session.abandon(ticket)
    # The round has no verdict: a new proposal for round 1 is admitted (P1-DRF-5).
    assert isinstance(session.admit(proposal(session, [1], q_rows="https://127.0.0.1:1/q2"), DRAFTER), Ticket)


def test_fenced_session_stops_serving() -> None:
    session = open_session()
    assign(session)
    ticket = session.admit(proposal(session, [4]), DRAFTER)
    assert isinstance(ticket, Ticket)
    session.decide(ticket, rows_with_argmax([4, 4]), SeededUniforms(1, SESSION, 1), 0)
    session.fence()
    assert session.output == [] and session.round == 0
    assert problem_of(lambda: session.admit(proposal(session, [4]), DRAFTER)).problem is ProblemType.STALE_EPOCH
    assert problem_of(lambda: session.output_from(0)).problem is ProblemType.STALE_EPOCH


def test_switch_after_r_low_rounds_sends_an_event_and_unassigns() -> None:
    session = open_session(fallback=[2], low_rounds=2)
    assign(session)
    first = play(session, [4], [0, 1])
    assert first.verdict.action is Action.CONTINUE and first.verdict.low == 1
    second = play(session, [4], [0, 1])
    assert second.verdict.action is Action.SWITCH and second.verdict.low == 0
    assert [event.kind for event in second.events] == [Action.SWITCH]
    assert problem_of(lambda: session.admit(proposal(session, [1]), DRAFTER)).problem is ProblemType.NOT_ASSIGNED


def test_reduce_halves_m_cap_and_good_rounds_restore_it() -> None:
    session = open_session(fallback=[1, 1], low_rounds=1, m_max=4)
    assign(session, m_init=4)
    assert play(session, [4], [0, 1]).verdict.m_cap == 2
    assert play(session, [4], [0, 1]).verdict.m_cap == 1
    assert play(session, [4], [4, 1]).verdict.m_cap == 2


def test_self_decoding_commits_one_token_per_round_until_self_max() -> None:
    session = open_session(fallback=[3, 5], low_rounds=1, self_load=50, self_max=2)
    assign(session)
    committed = play(session, [4], [0, 1], load=10)
    assert committed.verdict.action is Action.SELF_DECODE
    assert [event.kind for event in committed.events] == [Action.SELF_DECODE]
    assert session.phase is Phase.SELF_DECODING and session.state().state == 3
    for expected_round, argmax in ((2, 6), (3, 5)):
        assert not session.self_decoding_should_stop(load=10)
        pending = session.self_decode(rows_with_argmax([argmax])[0], SeededUniforms(1, SESSION, expected_round))
        assert pending.record.round == expected_round and pending.verdict is None
        session.commit(pending)
    assert session.output == [0, 6, 5]
    assert session.self_decoding_should_stop(load=10)
    assert session.end_self_decoding().kind is Action.CONTINUE


def test_self_decode_is_skipped_when_load_exceeds_self_load() -> None:
    session = open_session(fallback=[3, 2], low_rounds=1, self_load=50)
    assign(session)
    assert play(session, [4], [0, 1], load=51).verdict.action is Action.SWITCH


def test_stop_token_finishes_and_closes_the_session() -> None:
    session = open_session(stop=[7])
    assign(session)
    committed = play(session, [4, 7, 4], [4, 7, 4, 4])
    verdict = committed.verdict
    assert verdict.accepted == 3 and verdict.emitted == (4, 7) and verdict.action is Action.FINISH
    assert [event.kind for event in committed.events] == [Action.FINISH]
    assert problem_of(lambda: session.admit(proposal(session, [1]), DRAFTER)).status == 410
    retry = proposal(session, [4, 7, 4], round=1, base=0, base_digest=session.digest_at(0))
    assert session.admit(retry, DRAFTER) == StoredVerdict(verdict)
    output = session.output_from(0)
    assert output is not None and output.final and output.tokens == (4, 7) and output.finish is Action.FINISH


def test_max_new_truncates_exactly() -> None:
    session = open_session(max_new=2, stop=[])
    assign(session)
    verdict = play(session, [4, 5, 6], [4, 5, 6, 1]).verdict
    assert verdict.emitted == (4, 5) and verdict.committed == 2 and verdict.action is Action.FINISH


def test_output_waits_then_delivers_from_stable_indices() -> None:
    session = open_session()
    assign(session)
    assert session.output_from(0) is None
    play(session, [4, 5], [4, 5, 6])
    output = session.output_from(1)
    assert output is not None and output.tokens == (5, 6) and output.from_ == 1 and not output.final
    assert output.epoch == 1
    assert session.output_from(3) is None


def test_policy_applies_from_its_round_and_refuses_the_past() -> None:
    session = open_session()
    assign(session)
    play(session, [4], [4, 4])
    error = problem_of(lambda: session.set_policy(Policy(SESSION, 1, Sampling(temperature_milli=0))))
    assert error.problem is ProblemType.STALE_BASE and error.state is not None
    session.set_policy(Policy(SESSION, 3, Sampling(temperature_milli=500)))
    session.set_policy(Policy(SESSION, 5, Sampling(top_k=3)))
    assert session.sampling_for(2) is None
    assert session.sampling_for(3) == Sampling(temperature_milli=500)
    assert session.sampling_for(9) == Sampling(top_k=3)


def test_resume_checks_the_committed_prefix() -> None:
    obj = {
        "session": SESSION, "epoch": 2, "contract": contract(), "prompt": PROMPT, "commit_log": "x",
        "resume": {"round": 4, "committed": 2, "digest": bytes(32), "committed_tokens": "y"},
    }
    opening = SessionOpen.from_obj(obj)
    error = problem_of(lambda: VerifierSession(opening, PROMPT, vocab_size=V, committed_output=[4, 5]))
    assert error.problem is ProblemType.BAD_MESSAGE
    d0 = prefix_digest(digest_of(SessionOpen.from_obj(obj).contract), PROMPT)
    obj["resume"]["digest"] = extend_digest(d0, [4, 5])
    session = VerifierSession(SessionOpen.from_obj(obj), PROMPT, vocab_size=V, committed_output=[4, 5])
    assert (session.round, len(session.output), session.epoch) == (4, 2, 2)
