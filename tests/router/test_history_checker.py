"""The router suite's history checker on hand-made histories: each rule flags the history that breaks it and
passes the one that keeps it. Digests are the §4.2 chain computed here with hashlib, independently of the
protocol package; the contract digest comes from the protocol's deterministic encoding (pinned by its vectors)."""

from __future__ import annotations

import hashlib
from typing import Any

from sdcp_conformance.cache.commit_log import CommitRecord, FenceRecord, encode_record
from sdcp_conformance.harness.roles.played_cache import PlayedCache
from sdcp_conformance.harness.roles.router_assignment_checks import check_assignments, check_policies
from sdcp_conformance.harness.roles.router_checks import check_fences, check_front, check_opens, rows_of
from sdcp_conformance.harness.roles.router_history import (
    AssignSeen,
    CacheSeen,
    FrontSeen,
    History,
    OpenSeen,
    PolicySeen,
    PutSeen,
)
from sdcp_conformance.harness.roles.router_truth import Facts, FrontSession, counted
from sdcp_conformance.protocol.chain import contract_digest
from sdcp_conformance.protocol.messages import (
    Assignment,
    Contract,
    Output,
    Policy,
    Resume,
    Sampling,
    SessionOpen,
    SessionState,
)

CACHE = "https://127.0.0.1:9/cache/"
ROUTER = "https://127.0.0.1:9/router/"
V1, V2 = "https://127.0.0.1:9/verifier-1/", "https://127.0.0.1:9/verifier-2/"
D1, D2 = "https://127.0.0.1:9/drafter-1/", "https://127.0.0.1:9/drafter-2/"
NEAR, FAR = b"\x01" * 32, b"\x02" * 32
SESSION = bytes(range(16))
PROMPT = (5, 9)
LOG = CACHE + "sdcp/s/commit-log"
CONTRACT: dict[str, Any] = {"target": bytes(32), "tokenizer": bytes(32), "rule": 1, "m_max": 4, "max_new": 50,
                            "stop": [], "low_rounds": 1, "fallback": [2], "drafters": [NEAR]}
FACTS = Facts(ROUTER, CACHE, {"verifier-1": V1, "verifier-2": V2}, {"drafter-1": D1, "drafter-2": D2},
              {"drafter-1": NEAR, "drafter-2": FAR})
FRONT = FrontSession(SESSION, CONTRACT, PROMPT, PROMPT, 0)


def uint32(value: int) -> bytes:
    return value.to_bytes(4, "big")


def d(tokens: list[int]) -> bytes:
    """§4.2, step by step."""
    digest = hashlib.sha256(b"SDCP-PREFIX-1\x00" + contract_digest(CONTRACT) + uint32(len(PROMPT))
                            + b"".join(uint32(t) for t in PROMPT)).digest()
    for token in tokens:
        digest = hashlib.sha256(digest + uint32(token)).digest()
    return digest


def record(epoch: int, round_: int, before: list[int], emitted: list[int]) -> CommitRecord:
    return CommitRecord(epoch, round_, tuple(emitted), len(before) + len(emitted), d(before + emitted))


def opening(epoch: int = 1, resume: Resume | None = None, **changes: Any) -> SessionOpen:
    contract = Contract.from_obj(changes.pop("contract", CONTRACT))
    return SessionOpen(session=SESSION, epoch=epoch, contract=contract, prompt=PROMPT, commit_log=LOG,
                       resume=resume).replace(**changes)


def open_seen(seq: int, verifier: str, opened: SessionOpen, log: tuple[Any, ...] = (), tokens: Any = None,
              **changes: Any) -> OpenSeen:
    fields: dict[str, Any] = {"status": 201, **changes}
    return OpenSeen(seq=seq, verifier=verifier, peer=ROUTER, media_type="application/sdcp+cbor", opening=opened,
                    log=log, tokens_object=tokens, **fields)


R1 = record(1, 1, [], [3, 4])
R2 = record(1, 2, [3, 4], [5])


def test_counted_records_skip_those_a_higher_fence_precedes() -> None:
    late = record(1, 3, [3, 4, 5], [66])
    new = record(2, 3, [3, 4, 5], [7])
    truth = counted([R1, R2, FenceRecord(2), late, new])
    assert truth.records == (R1, R2, new) and truth.tokens == (3, 4, 5, 7)


def test_a_resume_opened_before_its_fence_is_flagged() -> None:
    history = History()
    history.add(open_seen(1, "verifier-1", opening()))
    resume = Resume(round=2, committed=3, digest=d([3, 4, 5]), committed_tokens=CACHE + "t")
    history.add(open_seen(2, "verifier-2", opening(2, resume), log=(R1, R2), tokens=(3, 4, 5)))
    assert "R-6.9-FENCE-FIRST" in rows_of(check_opens(history, FACTS, FRONT))


def test_a_resume_from_the_last_counted_record_passes_and_others_are_flagged() -> None:
    log = (R1, R2, FenceRecord(2))
    good = Resume(round=2, committed=3, digest=d([3, 4, 5]), committed_tokens=CACHE + "t")
    history = History()
    history.add(open_seen(1, "verifier-1", opening()))
    history.add(open_seen(2, "verifier-2", opening(2, good), log=log, tokens=(3, 4, 5)))
    assert not check_opens(history, FACTS, FRONT)
    previous = Resume(round=1, committed=2, digest=d([3, 4]), committed_tokens=CACHE + "t")
    history = History()
    history.add(open_seen(1, "verifier-1", opening()))
    history.add(open_seen(2, "verifier-2", opening(2, previous), log=log, tokens=(3, 4, 5)))
    assert rows_of(check_opens(history, FACTS, FRONT)) == {"R-6.9-ROUTER-RESUME"}
    history = History()
    history.add(open_seen(1, "verifier-1", opening()))
    history.add(open_seen(2, "verifier-2", opening(2, good), log=log, tokens=(3, 4)))
    assert rows_of(check_opens(history, FACTS, FRONT)) == {"R-5.2-COMMITTED-TOKENS"}


def test_a_refused_failover_open_leaves_its_epoch_to_the_next_candidate() -> None:
    """D-JUDGE-R9: the fence's epoch offered again after a refusal is no reuse; after an acceptance it is."""
    log = (R1, R2, FenceRecord(2))
    good = Resume(round=2, committed=3, digest=d([3, 4, 5]), committed_tokens=CACHE + "t")
    for first_answer, rows in ((503, set()), (201, {"R-6.9-FENCE-FIRST"})):
        history = History()
        history.add(open_seen(1, "verifier-1", opening()))
        history.add(open_seen(2, "verifier-1", opening(2, good), log=log, tokens=(3, 4, 5), status=first_answer))
        history.add(open_seen(3, "verifier-2", opening(2, good), log=log, tokens=(3, 4, 5)))
        assert rows_of(check_opens(history, FACTS, FRONT)) == rows, first_answer


def test_a_zombie_record_after_the_fence_is_not_the_resume() -> None:
    zombie = record(1, 3, [3, 4, 5], [66])
    log = (R1, R2, FenceRecord(2), zombie, FenceRecord(3))
    wrong = Resume(round=3, committed=4, digest=zombie.digest, committed_tokens=CACHE + "t")
    history = History()
    history.add(open_seen(1, "verifier-1", opening()))
    history.add(open_seen(2, "verifier-2", opening(2, Resume(round=2, committed=3, digest=d([3, 4, 5]),
                                                             committed_tokens=CACHE + "t")),
                          log=(R1, R2, FenceRecord(2)), tokens=(3, 4, 5)))
    history.add(open_seen(3, "verifier-1", opening(3, wrong), log=log, tokens=(3, 4, 5, 66)))
    assert {"R-6.9-ROUTER-RESUME", "R-5.2-COMMITTED-TOKENS"} <= rows_of(check_opens(history, FACTS, FRONT))


def test_another_contract_an_expired_verifier_and_a_second_epoch_1_open_are_flagged() -> None:
    history = History()
    other = CONTRACT | {"low_ratio": 0}
    history.add(open_seen(1, "verifier-1", opening(contract=other), expired_for=2.0))
    history.add(open_seen(2, "verifier-2", opening()))
    rows = rows_of(check_opens(history, FACTS, FRONT))
    assert {"R-4.1-CONTRACT-UNCHANGED", "R-6.1-NOT-EXPIRED", "R-6.1-SESSION-OPEN"} <= rows


def cache_put(before: bytes | None, body: bytes, *, if_match: str | None = '"g1"',
              if_none_match: str | None = None) -> CacheSeen:
    return CacheSeen(seq=5, method="PUT", path="/cache/sdcp/s/commit-log", peer=ROUTER, if_match=if_match,
                     if_none_match=if_none_match, status=204, before=before, after=body, body=body)


def test_fence_appends_must_be_conditional_appends_of_a_fence_only() -> None:
    old = encode_record(R1)
    fence = encode_record(FenceRecord(2))
    cases = {
        "R-6.8-CONDITIONAL": [cache_put(old, old + fence, if_match=None), cache_put(old, fence)],
        "R-6.8-FENCE-RECORD": [cache_put(old, old + encode_record(R2))],
        "P1-LOG-3/ROUTER": [cache_put(None, fence)],
    }
    for row, puts in cases.items():
        for put in puts:
            history = History()
            history.add(open_seen(1, "verifier-1", opening()))
            history.add(put)
            assert row in rows_of(check_fences(history, FACTS, FRONT)), (row, put)
    history = History()
    history.add(open_seen(1, "verifier-1", opening()))
    history.add(cache_put(old, old + fence))
    history.add(cache_put(None, fence, if_match=None, if_none_match="*"))
    assert not check_fences(history, FACTS, FRONT)


def front_read(seq: int, start: int, tokens: tuple[int, ...], epoch: int, *, final: bool = False,
               asked: int = 0) -> FrontSeen:
    output = Output(session=SESSION, epoch=epoch, tokens=tokens, final=final, from_=start,
                    finish=4 if final else None)  # type: ignore[arg-type]
    return FrontSeen(seq=seq, session_id=SESSION, asked=asked or seq - 1, start=start, status=200, output=output,
                     described="200")


def test_front_output_against_the_commit_log() -> None:
    log = (R1, R2, FenceRecord(2), record(1, 3, [3, 4, 5], [66]))
    history = History()
    history.add(front_read(2, 0, (3, 4), 1))
    history.add(front_read(3, 2, (5,), 1, final=True))
    assert not check_front(history, FRONT, log)
    for bad, row in ((front_read(2, 3, (66,), 1), "R-6.7-FRONT-END"),
                     (front_read(2, 0, (3,), 1, final=True), "R-6.7-FRONT-END")):
        history = History()
        history.add(bad)
        assert row in rows_of(check_front(history, FRONT, log))
    history = History()
    history.add(open_seen(1, "verifier-2", opening(2, Resume(round=2, committed=3, digest=d([3, 4, 5]),
                                                             committed_tokens=CACHE + "t"))))
    history.add(front_read(5, 0, (3, 4), 1, asked=4))
    # the right tokens under a stale label: only the front's message (P1-FRONT-2) is wrong (D-JUDGE-R13)
    assert rows_of(check_front(history, FRONT, log)) == {"P1-FRONT-2/OUTPUT"}
    history.add(front_read(6, 2, (66,), 1, asked=4))  # the fenced verifier's token, under its epoch
    assert {"R-6.9-OLD-EPOCH", "R-6.7-FRONT-END"} <= rows_of(check_front(history, FRONT, log))
    history = History()
    history.add(front_read(2, 0, (3,), 2))
    history.add(front_read(3, 1, (4,), 1))  # lower than the epoch the front already sent, the tokens right
    assert rows_of(check_front(history, FRONT, log)) == {"P1-FRONT-2/OUTPUT"}


def put_seen(seq: int, verifier: str, drafter: str, state: SessionState, **changes: Any) -> PutSeen:
    return PutSeen(seq=seq, verifier=verifier, peer=ROUTER, media_type="application/sdcp+cbor",
                   assignment=assignment(drafter, verifier=FACTS.verifiers[verifier], **changes),
                   path_session=SESSION, status=200, state=state)


def assignment(drafter: str, **changes: Any) -> Assignment:
    body: dict[str, Any] = {"session": SESSION, "epoch": 1, "contract": CONTRACT, "verifier": V1, "drafter": drafter,
                            "prompt": list(PROMPT), "round": 0, "committed": 0, "digest": d([]), "m_init": 4}
    body.update(changes)
    return Assignment.from_obj({key: value for key, value in body.items() if value is not None})


def test_assignments_need_the_verifier_told_first_with_the_state_it_returned() -> None:
    state = SessionState(session=SESSION, epoch=1, round=2, committed=2, digest=d([3, 4]))
    put = put_seen(2, "verifier-1", D1, state)
    good = assignment(D1, round=2, committed=2, digest=d([3, 4]), committed_tokens=CACHE + "t")
    stale = assignment(D1, round=0, committed=2, digest=d([3, 4]), committed_tokens=CACHE + "t")
    log = (R1,)
    for seen, rows in (
        (AssignSeen(seq=3, drafter="drafter-1", peer=ROUTER, media_type="application/sdcp+cbor", assignment=good,
                    status=204, verifier_put=put, tokens_object=(3, 4)), set()),
        (AssignSeen(seq=3, drafter="drafter-1", peer=ROUTER, media_type="application/sdcp+cbor", assignment=good,
                    status=204, verifier_put=None, tokens_object=(3, 4)), {"R-6.1-ASSIGN-ORDER"}),
        (AssignSeen(seq=3, drafter="drafter-1", peer=ROUTER, media_type="application/sdcp+cbor", assignment=stale,
                    status=204, verifier_put=put, tokens_object=(3, 4)),
         {"P1-RTR-3/ASSIGNMENT-STATE", "R-6.1-ASSIGN-ORDER"}),
    ):
        history = History()
        history.add(open_seen(1, "verifier-1", opening()))
        history.add(put)
        history.add(seen)
        assert rows_of(check_assignments(history, FACTS, FRONT, log)) == rows, seen


def test_a_session_opened_with_another_prompt_is_followed_with_it() -> None:
    """D-JUDGE-R10: the open is judged against the front's prompt (P1-FRONT-1/OPEN); its digests and later
    assignments against the prompt the router opened the session with."""
    opened = (5,)
    followed = FrontSession(SESSION, CONTRACT, PROMPT, PROMPT, 0, opened_prompt=opened)
    d0 = hashlib.sha256(b"SDCP-PREFIX-1\x00" + contract_digest(CONTRACT) + uint32(1) + uint32(5)).digest()
    assert followed.d0 == d0 != FRONT.d0
    state = SessionState(session=SESSION, epoch=1, round=0, committed=0, digest=d0)
    history = History()
    history.add(open_seen(1, "verifier-1", opening(prompt=list(opened))))
    assert rows_of(check_opens(history, FACTS, followed)) == {"P1-FRONT-1/OPEN"}
    put = put_seen(2, "verifier-1", D1, state, prompt=list(opened), digest=d0)
    history.add(put)
    for prompt, rows in ((list(opened), set()), (list(PROMPT), {"R-5.2-ASSIGNMENT"})):
        sent = assignment(D1, prompt=prompt, digest=d0)
        seen = AssignSeen(seq=3, drafter="drafter-1", peer=ROUTER, media_type="application/sdcp+cbor",
                          assignment=sent, status=204, verifier_put=put, tokens_object=None)
        checked = History()
        for item in (*history.items, seen):
            checked.add(item)
        assert rows_of(check_assignments(checked, FACTS, followed, ())) == rows, prompt


def test_assignment_members_permission_tokens_and_m_init() -> None:
    state = SessionState(session=SESSION, epoch=1, round=1, committed=2, digest=d([3, 4]))
    bad = assignment(D2, round=1, committed=2, digest=d([3, 4]), m_init=9, committed_tokens=None,
                     contract=CONTRACT | {"m_max": 4})
    history = History()
    history.add(open_seen(1, "verifier-1", opening()))
    history.add(put_seen(2, "verifier-1", D2, state))
    history.add(AssignSeen(seq=3, drafter="drafter-2", peer=ROUTER, media_type="application/sdcp+cbor",
                           assignment=bad, status=204, verifier_put=history.items[-1], tokens_object=None))  # type: ignore[arg-type]
    rows = rows_of(check_assignments(history, FACTS, FRONT, (R1,)))
    assert {"R-6.1-PERMITTED", "P1-DRF-2/ROUTER-M-INIT", "P1-RTR-3/ALWAYS-TOKENS"} <= rows


def test_later_assignments_carry_the_accepted_sampling() -> None:
    sampling = Sampling(temperature_milli=600)
    state = SessionState(session=SESSION, epoch=1, round=0, committed=0, digest=d([]))
    history = History()
    history.add(open_seen(1, "verifier-1", opening()))
    history.add(PolicySeen(seq=2, verifier="verifier-1", peer=ROUTER,
                           policy=Policy(session=SESSION, from_round=1, sampling=sampling), round_then=0, status=200,
                           state=state))
    put = put_seen(3, "verifier-1", D1, state)
    history.add(put)
    history.add(AssignSeen(seq=4, drafter="drafter-1", peer=ROUTER, media_type="application/sdcp+cbor",
                           assignment=assignment(D1), status=204, verifier_put=put))
    assert rows_of(check_assignments(history, FACTS, FRONT, ())) == {"R-6.6-LATER-ASSIGNMENTS"}


def test_policies_start_after_the_known_round() -> None:
    state = SessionState(session=SESSION, epoch=1, round=3, committed=0, digest=d([]))
    history = History()
    history.add(open_seen(1, "verifier-1", opening()))
    history.add(put_seen(2, "verifier-1", D1, state))
    history.add(PolicySeen(seq=3, verifier="verifier-1", peer=ROUTER,
                           policy=Policy(session=SESSION, from_round=3, sampling=Sampling(top_k=2)), round_then=3,
                           status=409, state=None))
    history.add(PolicySeen(seq=4, verifier="verifier-1", peer=ROUTER,
                           policy=Policy(session=SESSION, from_round=4, sampling=Sampling(top_k=2)), round_then=3,
                           status=200, state=state))
    assert rows_of(check_policies(history, FRONT)) == {"R-6.6-FROM-ROUND"}


def test_played_verifier_appends_fenced_or_not() -> None:
    mlc = PlayedCache(CACHE)
    app = mlc.app
    first = record(1, 1, [], [3, 4])
    assert mlc.append(LOG, first).stored
    assert mlc.append(LOG, FenceRecord(2)).stored
    late = record(1, 2, [3, 4], [5])
    enforced = mlc.append(LOG, late)
    assert not enforced.stored and enforced.fenced
    app.enforce_fences = False
    read_back = mlc.append(LOG, late)
    assert read_back.stored and read_back.fenced  # stored past the fence, but a correct verifier looks
    zombie = mlc.append(LOG, record(1, 3, [3, 4, 5], [6]), read_back=False)
    assert zombie.stored and not zombie.fenced
    assert counted(mlc.log(LOG)).tokens == (3, 4)
    assert mlc.path_of("https://elsewhere:1/cache/x") is None
