"""The router's sans-I/O session: the messages it builds, events, policies and the replay of a commit log.

Digests are computed here from the tokens with the §4.2 chain (pinned by
vectors in tests/protocol), never by asking the machine.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from sdcp_conformance.cache.commit_log import CommitRecord, FenceRecord, LogRecord, encode_record
from sdcp_conformance.protocol.chain import extend_digest, prefix_digest
from sdcp_conformance.protocol.codec import encode
from sdcp_conformance.protocol.contract import digest_of
from sdcp_conformance.protocol.errors import ProtocolError
from sdcp_conformance.protocol.messages import Contract, Event, Sampling, SessionState
from sdcp_conformance.protocol.problems import ProblemType
from sdcp_conformance.reference.router.session import (
    LogMismatch,
    Phase,
    RouterSession,
    StateMismatch,
    Wants,
    m_init_for,
)
from tests.reference.parties import DA, SESSION, V1, V2, party

PROMPT = [5, 6, 7]
LOG = party("mlc") + "log"


def contract(**changes: Any) -> Contract:
    base = {"target": bytes(32), "tokenizer": bytes(32), "rule": 1, "m_max": 4, "max_new": 50, "stop": [],
            "low_rounds": 1, "fallback": [2]}
    return Contract.from_obj(base | changes)


D0 = prefix_digest(digest_of(contract()), PROMPT)


def machine(m_init: int = 4, **changes: Any) -> RouterSession:
    return RouterSession(SESSION, contract(**changes), PROMPT, LOG, m_init=m_init)


def state(epoch: int = 1, round_: int = 0, output: Sequence[int] = (), **changes: Any) -> SessionState:
    obj = {"session": SESSION, "epoch": epoch, "round": round_, "committed": len(output),
           "digest": extend_digest(D0, output)}
    return SessionState.from_obj(obj | changes)


def opened(m_init: int = 4, **changes: Any) -> RouterSession:
    session = machine(m_init, **changes)
    d0 = prefix_digest(digest_of(session.contract), PROMPT)
    session.opened(V1, SessionState(session=SESSION, epoch=1, round=0, committed=0, digest=d0))
    return session


def event(kind: int, output: Sequence[int] = (), epoch: int = 1) -> Event:
    return Event.from_cbor(encode({"session": SESSION, "epoch": epoch, "kind": kind, "committed": len(output),
                                   "digest": extend_digest(D0, output)}))


def commit(epoch: int, round_: int, before: Sequence[int], emitted: Sequence[int]) -> CommitRecord:
    total = [*before, *emitted]
    return CommitRecord(epoch, round_, tuple(emitted), len(total), extend_digest(D0, total))


def phase_of(session: RouterSession) -> Phase:
    """Read afresh (mypy would keep an earlier narrowing of ``session.phase``)."""
    return session.phase


def log_bytes(records: Sequence[LogRecord]) -> bytes:
    return b"".join(encode_record(record) for record in records)


# ---------------------------------------------------------------------- opening and assignment


def test_session_open_has_epoch_1_and_the_commit_log() -> None:
    opening = machine().opening()
    assert opening.epoch == 1 and opening.commit_log == LOG and opening.resume is None
    assert opening.prompt == tuple(PROMPT) and opening.session == SESSION


def test_opened_refuses_a_state_that_is_not_d0() -> None:
    session = machine()
    with pytest.raises(StateMismatch):
        session.opened(V1, state(digest=bytes(32)))
    assert session.verifier is None and session.phase is Phase.OPENING


@pytest.mark.parametrize(("m_max", "configured", "sent"), [(4, 8, 4), (4, 0, 1), (4, 2, 2), (1, 1, 1)])
def test_m_init_is_clamped_to_one_and_m_max(m_max: int, configured: int, sent: int) -> None:
    # P1-DRF-2: "the router sends max(1, min(m_max, m_init))".
    assert m_init_for(contract(m_max=m_max), configured) == sent
    session = opened(configured, m_max=m_max)
    assert session.drafter_put(DA, None).m_init == sent


def test_put_carries_known_values_and_the_assignment_the_put_state() -> None:
    session = opened()
    session.on_event(event(2, [1, 2, 3]), V1)  # the router learns committed 3 from the event
    put = session.drafter_put(DA, "ref-3")
    assert (put.round, put.committed, put.digest) == (0, 3, extend_digest(D0, [1, 2, 3]))
    assert put.committed_tokens == "ref-3" and put.verifier == V1 and put.drafter == DA
    newer = state(round_=5, output=[1, 2, 3, 4])
    assignment = session.assignment(DA, newer, "ref-4")
    # P1-RTR-3: "the assignment sent to the drafter carries the values of the session-state that PUT returned".
    assert (assignment.round, assignment.committed, assignment.digest) == (5, 4, extend_digest(D0, [1, 2, 3, 4]))
    assert assignment.committed_tokens == "ref-4" and assignment.epoch == 1
    assert assignment.contract == contract()


def test_committed_tokens_only_when_committed_is_positive() -> None:
    session = opened()
    assert session.assignment(DA, state(), "unused").committed_tokens is None


def test_assigned_is_void_after_a_drop_during_the_assignment() -> None:
    session = opened()
    drops = session.drops
    session.on_event(event(2), V1)
    assert not session.assigned(DA, drops)
    assert session.drafter is None
    assert session.assigned(DA, session.drops) and session.drafter == DA


# ---------------------------------------------------------------------- events


def test_events_only_from_the_current_verifier() -> None:
    session = opened()
    with pytest.raises(ProtocolError) as caught:
        session.on_event(event(2), V2)
    assert caught.value.problem is ProblemType.NOT_ASSIGNED


def test_events_with_another_epoch_are_stale() -> None:
    session = opened()
    with pytest.raises(ProtocolError) as caught:
        session.on_event(event(2, epoch=2), V1)
    assert caught.value.problem is ProblemType.STALE_EPOCH


def test_switch_asks_for_another_drafter() -> None:
    session = opened()
    session.assigned(DA, session.drops)
    assert session.on_event(event(2, [9]), V1) is Wants.ANOTHER_DRAFTER
    assert session.drafter is None and session.previous_drafter == DA
    assert (session.committed, session.digest) == (1, extend_digest(D0, [9]))


def test_self_decoding_needs_no_drafter_until_kind_0() -> None:
    session = opened()
    session.assigned(DA, session.drops)
    assert session.on_event(event(3), V1) is Wants.NOTHING
    assert session.phase is Phase.SELF_DECODING and not session.needs_drafter
    assert session.on_event(event(0, [4, 4]), V1) is Wants.A_DRAFTER
    assert phase_of(session) is Phase.ACTIVE and session.needs_drafter


@pytest.mark.parametrize(("kind", "phase"), [(4, Phase.FINISHED), (5, Phase.FAILED), (42, Phase.FAILED)])
def test_finish_fail_and_unknown_kinds_end_the_session(kind: int, phase: Phase) -> None:
    session = opened()
    session.assigned(DA, session.drops)
    assert session.on_event(event(kind), V1) is Wants.NOTHING
    assert session.phase is phase and session.ended and session.drafter is None
    assert session.on_event(event(0), V1) is Wants.NOTHING  # D-RTR-7: ignored once ended


def test_reduce_is_no_event() -> None:
    session = opened()
    session.assigned(DA, session.drops)
    assert session.on_event(event(1), V1) is Wants.NOTHING
    assert session.drafter == DA and session.phase is Phase.ACTIVE


def test_knowledge_never_moves_backwards() -> None:
    session = opened()
    session.observe(state(round_=4, output=[1, 2]))
    session.observe(state(round_=3, output=[1]))
    assert (session.round, session.committed) == (4, 2)


# ---------------------------------------------------------------------- policy


def test_policy_from_round_and_retry() -> None:
    session = opened()
    session.observe(state(round_=4, output=[1]))
    profile = Sampling(temperature_milli=700, seed=3)
    policy = session.policy(profile)
    assert policy.from_round == 5 and policy.sampling == profile  # P1-RTR-4
    retry = session.policy_retry(policy, state(round_=9, output=[1, 2]))
    assert retry.from_round == 10 and retry.sampling == profile
    assert session.sampling != profile
    session.policy_accepted(retry, state(round_=9, output=[1, 2]))
    assert session.sampling == profile
    assert session.assignment(DA, state(round_=9), None).sampling == profile


# ---------------------------------------------------------------------- failover


def test_replay_of_an_empty_log_resumes_at_d0() -> None:
    session = opened()
    assert session.begin_failover() == 2
    replay = session.replay(b"")
    assert (replay.round, replay.committed, replay.digest, replay.tokens) == (0, 0, D0, ())


def test_replay_ignores_records_after_a_higher_fence() -> None:
    session = opened()
    records: list[LogRecord] = [
        commit(1, 1, [], [10, 11]),
        commit(1, 2, [10, 11], [12]),
        FenceRecord(2),
        commit(1, 3, [10, 11, 12], [99, 98]),  # the partitioned old verifier, on a non-enforcing MLC
        commit(2, 3, [10, 11, 12], [13]),
        FenceRecord(3),
    ]
    replay = session.replay(log_bytes(records))
    assert replay.tokens == (10, 11, 12, 13)
    assert (replay.round, replay.committed) == (3, 4)
    assert replay.digest == extend_digest(D0, [10, 11, 12, 13])


def test_replay_refuses_tokens_that_do_not_reproduce_the_digest() -> None:
    session = opened()
    bad = CommitRecord(1, 2, (12,), 3, extend_digest(D0, [10, 11, 77]))
    with pytest.raises(LogMismatch):
        session.replay(log_bytes([commit(1, 1, [], [10, 11]), bad]))


def test_replay_refuses_a_wrong_committed_count() -> None:
    session = opened()
    record = CommitRecord(1, 1, (10, 11), 3, extend_digest(D0, [10, 11]))
    with pytest.raises(LogMismatch):
        session.replay(log_bytes([record]))


def test_replay_refuses_a_log_that_is_not_records() -> None:
    with pytest.raises(LogMismatch):
        opened().replay(encode([1, 2, 3]))


def test_each_failover_attempt_takes_a_new_epoch() -> None:
    session = opened()
    session.assigned(DA, session.drops)
    assert session.begin_failover() == 2
    assert session.verifier is None and session.failed_verifier == V1
    assert session.previous_drafter == DA and session.needs_verifier
    assert session.begin_failover() == 3
    assert session.failed_verifier == V1


def test_resume_opening_fields() -> None:
    session = opened()
    session.begin_failover()
    replay = session.replay(log_bytes([commit(1, 1, [], [3, 4]), commit(1, 2, [3, 4], [5])]))
    session.target_kv = (3, "kv-3")
    opening = session.resume_opening(replay, "tokens-ref")
    assert opening.epoch == 2 and opening.commit_log == LOG and opening.contract == contract()
    resume = opening.resume
    assert resume is not None
    assert (resume.round, resume.committed, resume.digest) == (2, 3, extend_digest(D0, [3, 4, 5]))
    assert resume.committed_tokens == "tokens-ref" and resume.target_kv == "kv-3"
    session.target_kv = (2, "kv-2")  # D-RTR-17: only for exactly the resumed length
    assert session.resume_opening(replay, "tokens-ref").resume.target_kv is None  # type: ignore[union-attr]


def test_resumed_checks_the_state_and_adopts_the_new_verifier() -> None:
    session = opened()
    session.begin_failover()
    replay = session.replay(log_bytes([commit(1, 1, [], [3])]))
    with pytest.raises(StateMismatch):
        session.resumed(V2, replay, state(epoch=2, round_=0), "ref")
    session.resumed(V2, replay, state(epoch=2, round_=1, output=[3]), "ref")
    assert session.verifier == V2 and session.epoch == 2 and session.needs_drafter
    assert session.tokens_ref == (1, extend_digest(D0, [3]), "ref")


def test_tokens_at_checks_the_prefix_digest() -> None:
    session = opened()
    records: list[LogRecord] = [commit(1, 1, [], [3, 4]), commit(1, 2, [3, 4], [5])]
    assert session.tokens_at(records, 2, extend_digest(D0, [3, 4])) == (3, 4)
    with pytest.raises(LogMismatch):
        session.tokens_at(records, 2, extend_digest(D0, [3, 5]))
    with pytest.raises(LogMismatch):
        session.tokens_at(records, 4, extend_digest(D0, [3, 4, 5]))
