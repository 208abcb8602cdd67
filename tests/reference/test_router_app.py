"""The reference router's I/O layer against in-memory fakes of verifiers, drafters and the MLC.

Every fake writes what it was asked into one shared journal, so the tests
check the order of the router's calls (the fence first, PUT before the
assignment). The clock is a number the test moves; the watchdog runs one
pass at a time (``check_once``); events' background work is awaited with
``settle``. Digests are computed here with the §4.2 chain.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from sdcp_conformance.cache.commit_log import CommitRecord, FenceRecord, encode_record, parse_log
from sdcp_conformance.protocol.chain import extend_digest, prefix_digest
from sdcp_conformance.protocol.codec import decode, encode
from sdcp_conformance.protocol.contract import digest_of
from sdcp_conformance.protocol.messages import (
    Assignment,
    Contract,
    Policy,
    Sampling,
    SessionOpen,
    SessionState,
)
from sdcp_conformance.protocol.problems import ProblemType
from sdcp_conformance.reference.router.app import NoEligibleInstance, RouterApp, RouterConfig, instance_id
from sdcp_conformance.reference.router.ports import Answer, CacheUnavailable, LinkFailure, Refused
from sdcp_conformance.reference.router.session import Phase, RouterSession
from sdcp_conformance.transport.types import Request
from tests.reference.async_tests import async_test
from tests.reference.parties import DA, DB, DC, MODEL_1, MODEL_2, SESSION, SESSION_ID, V1, V2, party

ROUTER = party("router")
CACHE = party("mlc")
PROMPT = [5, 6, 7]
LOG = f"{CACHE}sdcp/{SESSION_ID}/commit-log"


def contract_obj(**changes: Any) -> dict[str, Any]:
    return {"target": bytes(32), "tokenizer": bytes(32), "rule": 1, "m_max": 4, "max_new": 50, "stop": [],
            "low_rounds": 1, "fallback": [2]} | changes


D0 = prefix_digest(digest_of(Contract.from_obj(contract_obj())), PROMPT)


def d(tokens: Sequence[int]) -> bytes:
    return extend_digest(D0, tokens)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class FakeVerifiers:
    """Verifiers that keep a session-state per (verifier, session) and answer as the draft says."""

    def __init__(self, journal: list[tuple[Any, ...]]) -> None:
        self.journal = journal
        self.states: dict[tuple[str, bytes], SessionState] = {}
        self.down: set[str] = set()
        self.refuse_open: dict[str, Refused] = {}
        self.put_answer: dict[str, Refused] = {}
        self.hang: set[str] = set()

    async def _enter(self, verifier: str, *entry: Any) -> None:
        self.journal.append(entry)
        if verifier in self.hang:
            await asyncio.Event().wait()  # never answers: only the router's timeout ends this
        if verifier in self.down:
            raise LinkFailure(f"{verifier} is unreachable")

    async def open_session(self, verifier: str, opening: SessionOpen) -> Answer:
        await self._enter(verifier, "open", verifier, opening)
        if verifier in self.refuse_open:
            return self.refuse_open[verifier]
        resume = opening.resume
        if resume is None:
            d0 = prefix_digest(digest_of(opening.contract), PROMPT)
            state = SessionState(session=opening.session, epoch=opening.epoch, round=0, committed=0, digest=d0)
        else:
            state = SessionState(session=opening.session, epoch=opening.epoch, round=resume.round,
                                 committed=resume.committed, digest=resume.digest)
        self.states[(verifier, opening.session)] = state
        return state

    async def put_drafter(self, verifier: str, assignment: Assignment) -> Answer:
        await self._enter(verifier, "put", verifier, assignment)
        if verifier in self.put_answer:
            return self.put_answer[verifier]
        return self.states[(verifier, assignment.session)]

    async def post_policy(self, verifier: str, policy: Policy) -> Answer:
        await self._enter(verifier, "policy", verifier, policy)
        state = self.states[(verifier, policy.session)]
        if policy.from_round <= state.round:  # P1-POL-1
            return Refused(409, ProblemType.STALE_BASE, "stale", state)
        return state

    def advance(self, verifier: str, round_: int, output: Sequence[int], epoch: int = 1) -> None:
        self.states[(verifier, SESSION)] = SessionState(
            session=SESSION, epoch=epoch, round=round_, committed=len(output), digest=d(output)
        )


class FakeDrafters:
    def __init__(self, journal: list[tuple[Any, ...]]) -> None:
        self.journal = journal
        self.refuse: set[str] = set()
        self.down: set[str] = set()

    async def post_assignment(self, drafter: str, assignment: Assignment) -> Refused | None:
        self.journal.append(("assign", drafter, assignment))
        if drafter in self.down:
            raise LinkFailure(f"{drafter} is unreachable")
        if drafter in self.refuse:
            return Refused(422, ProblemType.BAD_CONTRACT, "not my model")
        return None


class FakeCache:
    def __init__(self, journal: list[tuple[Any, ...]]) -> None:
        self.journal = journal
        self.objects: dict[str, list[int]] = {}
        self.logs: dict[str, bytes] = {}
        self.after_fence: list[CommitRecord] = []
        """Records a partitioned verifier appends right after the fence (a non-enforcing MLC)."""
        self.unavailable = False

    def _check(self) -> None:
        if self.unavailable:
            raise CacheUnavailable("MLC down")

    async def get_tokens(self, uri: str) -> list[int]:
        self._check()
        return list(self.objects[uri])

    async def put_tokens(self, uri: str, tokens: Sequence[int]) -> None:
        self.journal.append(("put_tokens", uri, list(tokens)))
        self._check()
        self.objects[uri] = list(tokens)

    async def read_log(self, uri: str) -> bytes:
        self.journal.append(("read_log", uri))
        self._check()
        return self.logs.get(uri, b"")

    async def append_fence(self, uri: str, epoch: int) -> bool:
        self.journal.append(("fence", uri, epoch))
        self._check()
        fences = [r.epoch for r in parse_log(self.logs.get(uri, b"")) if isinstance(r, FenceRecord)]
        if fences and max(fences) > epoch:
            return False
        self.logs[uri] = self.logs.get(uri, b"") + encode_record(FenceRecord(epoch))
        for record in self.after_fence:
            self.logs[uri] += encode_record(record)
        return True

    def commit(self, epoch: int, round_: int, before: Sequence[int], emitted: Sequence[int]) -> None:
        total = [*before, *emitted]
        record = CommitRecord(epoch, round_, tuple(emitted), len(total), d(total))
        self.logs[LOG] = self.logs.get(LOG, b"") + encode_record(record)


class Harness:
    def __init__(self, drafters: dict[str, bytes] | None = None, **config: Any) -> None:
        self.journal: list[tuple[Any, ...]] = []
        self.clock = Clock()
        self.verifiers = FakeVerifiers(self.journal)
        self.drafters = FakeDrafters(self.journal)
        self.cache = FakeCache(self.journal)
        cfg = RouterConfig(
            base_uri=ROUTER, cache_base=CACHE, drafters=drafters or {DA: MODEL_1, DB: MODEL_2, DC: MODEL_1},
            verifiers=frozenset({V1, V2}), **config,
        )
        self.app = RouterApp(cfg, self.verifiers, self.drafters, self.cache, clock=self.clock,
                             new_session_id=lambda: SESSION)

    async def call(self, method: str, path: str, body: Any, peer: str | None) -> tuple[int, Any]:
        data = body if isinstance(body, bytes) else encode(body)
        response = await self.app(Request(method, "/router/" + path, "", (), data, peer))
        payload = json.loads(response.body) if response.body else None
        return response.status, payload

    async def status(self, instance: str, role: int = 1, ttl_ms: int = 1000, **changes: Any) -> int:
        body = {"instance": instance, "role": role, "load": 0, "queue": 0, "ttl_ms": ttl_ms} | changes
        status, _ = await self.call("PUT", f"instances/{instance_id(instance)}/status", body, instance)
        return status

    async def event(self, kind: int, output: Sequence[int] = (), peer: str = V1, epoch: int = 1) -> tuple[int, Any]:
        body = {"session": SESSION, "epoch": epoch, "kind": kind, "committed": len(output), "digest": d(output)}
        result = await self.call("POST", "events", body, peer)
        await self.app.settle()
        return result

    async def open(self, **changes: Any) -> bytes:
        return await self.app.open_session(contract_obj(**changes), PROMPT)

    def calls(self, kind: str) -> list[tuple[Any, ...]]:
        return [entry for entry in self.journal if entry[0] == kind]

    @property
    def machine(self) -> RouterSession:
        return self.app.session(SESSION)

    def phase(self) -> Phase:
        """Read afresh (mypy would keep an earlier narrowing of ``machine.phase``)."""
        return self.machine.phase

    def serving(self) -> tuple[str | None, str | None, int]:
        return self.machine.verifier, self.machine.drafter, self.machine.epoch


async def standard(h: Harness, drafters: Sequence[str] = (DA,), verifiers: Sequence[str] = (V1,),
                   loads: Mapping[str, int] | None = None) -> None:
    """Every verifier, then every drafter, reports a status with a 10 s TTL (and the load ``loads`` gives it)."""
    loads = loads or {}
    for verifier in verifiers:
        assert await h.status(verifier, role=2, ttl_ms=10_000, load=loads.get(verifier, 0)) == 204
    for drafter in drafters:
        assert await h.status(drafter, ttl_ms=10_000, load=loads.get(drafter, 0)) == 204


async def opened(drafters: Sequence[str] = (DA,), verifiers: Sequence[str] = (V1,), **options: Any) -> Harness:
    """A harness built with ``options`` whose session is open once the parties reported (:func:`standard`)."""
    h = Harness(**options)
    await standard(h, drafters, verifiers)
    await h.open()
    return h


# ---------------------------------------------------------------------- status


@async_test
async def test_status_reports_and_their_refusals() -> None:
    h = Harness()
    assert await h.status(DA) == 204
    assert h.app.registry.live(DA, 0.5)
    body = {"instance": DA, "role": 1, "load": 0, "queue": 0, "ttl_ms": 1000}
    # P1-RTR-2: only from the instance it names.
    status, problem = await h.call("PUT", f"instances/{instance_id(DA)}/status", body, DB)
    assert status == 403 and problem["type"].endswith("sdcp-not-assigned")
    # P1-RTR-1: {id} is the base64url of the instance's base URI.
    status, problem = await h.call("PUT", f"instances/{instance_id(DB)}/status", body, DA)
    assert status == 400 and problem["type"].endswith("sdcp-bad-message")
    status, _ = await h.call("PUT", "instances/not*base64/status", body, DA)
    assert status == 400
    stranger = "https://127.0.0.1:1/stranger/"
    status, problem = await h.call("PUT", f"instances/{instance_id(stranger)}/status",
                                   body | {"instance": stranger}, stranger)
    assert status == 403
    assert (await h.call("POST", f"instances/{instance_id(DA)}/status", body, DA))[0] == 405
    assert (await h.call("GET", "nothing", body, DA))[0] == 404
    assert (await h.call("PUT", f"instances/{instance_id(DA)}/status", b"\xff", DA))[0] == 400


@async_test
async def test_waiting_until_live_returns_only_after_every_named_instance_reported() -> None:
    h = Harness()
    waiter = asyncio.ensure_future(h.app.wait_until_live([V1, DA]))
    await asyncio.sleep(0)
    assert not waiter.done() and h.app.not_live([V1, DA]) == [V1, DA]
    assert await h.status(V1, role=2, ttl_ms=100) == 204
    await asyncio.sleep(0)
    assert not waiter.done()  # DA has not reported yet
    h.clock.now = 0.2  # V1's status has expired by the time DA's arrives
    assert await h.status(DA) == 204
    await asyncio.sleep(0)
    assert not waiter.done() and h.app.not_live([V1, DA]) == [V1]
    assert await h.status(V1, role=2, ttl_ms=1000) == 204
    await asyncio.wait_for(waiter, 5)
    assert h.app.not_live([V1, DA]) == []


# ---------------------------------------------------------------------- opening


@async_test
async def test_open_picks_an_unexpired_verifier_then_puts_and_assigns() -> None:
    h = Harness(m_init=9)
    await h.status(V1, role=2, ttl_ms=100)
    await h.status(V2, role=2, ttl_ms=10_000, load=90)
    await h.status(DA, ttl_ms=10_000)
    h.clock.now = 0.2  # V1 (less loaded) has expired
    assert await h.open() == SESSION
    [(_, verifier, opening)] = h.calls("open")
    assert verifier == V2 and opening.epoch == 1 and opening.commit_log == LOG and opening.resume is None
    assert [entry[0] for entry in h.journal] == ["open", "put", "assign"]
    put, assign = h.calls("put")[0][2], h.calls("assign")[0]
    assert put.drafter == DA and put.verifier == V2 and put.m_init == 4  # min(m_max 4, 9)
    assert assign[1] == DA and assign[2].round == 0 and assign[2].committed_tokens is None
    assert h.machine.drafter == DA and h.machine.verifier == V2


@async_test
async def test_open_without_an_eligible_verifier_raises() -> None:
    h = Harness()
    await h.status(V1, role=2, ttl_ms=100)
    h.clock.now = 1.0
    with pytest.raises(NoEligibleInstance):
        await h.open()
    assert h.calls("open") == [] and SESSION not in h.app.sessions


@async_test
async def test_open_tries_the_next_verifier_when_one_refuses_or_fails() -> None:
    h = Harness()
    await h.status(V1, role=2, ttl_ms=10_000)
    await h.status(V2, role=2, ttl_ms=10_000, load=50)
    h.verifiers.refuse_open[V1] = Refused(422, ProblemType.BAD_CONTRACT, "other target")
    await h.open()
    assert [entry[1] for entry in h.calls("open")] == [V1, V2] and h.machine.verifier == V2


@async_test
async def test_a_verifier_call_that_never_answers_times_out() -> None:
    h = Harness(call_timeout_s=0.01)
    await h.status(V1, role=2, ttl_ms=10_000)
    await h.status(V2, role=2, ttl_ms=10_000, load=50)
    h.verifiers.hang.add(V1)
    await h.open()
    assert h.machine.verifier == V2


@async_test
async def test_without_a_drafter_the_session_waits_for_the_watchdog() -> None:
    h = await opened(drafters=())
    assert h.calls("put") == [] and h.machine.needs_drafter
    await h.status(DC, ttl_ms=10_000)
    await h.app.check_once()
    assert [entry[1] for entry in h.calls("assign")] == [DC]


@async_test
async def test_the_contracts_drafters_are_respected() -> None:
    h = Harness()
    await standard(h, drafters=(DA, DB), loads={DB: 99})
    await h.open(drafters=[MODEL_2])
    assert [entry[1] for entry in h.calls("assign")] == [DB]


@async_test
async def test_a_refusing_drafter_is_replaced_and_the_verifier_told_again() -> None:
    h = Harness()
    await standard(h, drafters=(DA, DC), loads={DC: 50})
    h.drafters.refuse.add(DA)
    await h.open()
    assert [(e[0], e[2].drafter) for e in h.journal if e[0] in ("put", "assign")] == [
        ("put", DA), ("assign", DA), ("put", DC), ("assign", DC)
    ]
    assert h.machine.drafter == DC


# ---------------------------------------------------------------------- events


@async_test
async def test_events_only_from_the_current_verifier_and_known_sessions() -> None:
    h = await opened(verifiers=(V1, V2))
    status, problem = await h.event(2, peer=V2)
    assert status == 403 and problem["type"].endswith("sdcp-not-assigned")
    body = {"session": bytes(16), "epoch": 1, "kind": 2, "committed": 0, "digest": D0}
    assert (await h.call("POST", "events", body, V1))[0] == 403
    status, problem = await h.event(2, epoch=7)
    assert status == 409 and problem["type"].endswith("sdcp-stale-epoch")
    assert h.machine.drafter == DA and len(h.calls("assign")) == 1  # nothing changed


@async_test
async def test_switch_assigns_another_drafter_with_the_put_state() -> None:
    h = Harness()
    await standard(h, drafters=(DA,))
    await h.status(DC, ttl_ms=10_000, load=80)  # worse than DA, but DA is the one switched away from
    await h.open()
    h.cache.commit(1, 1, [], [10, 11])
    h.cache.commit(1, 2, [10, 11], [12])
    h.cache.commit(1, 3, [10, 11, 12], [13])
    h.verifiers.advance(V1, 3, [10, 11, 12, 13])  # the verifier moved on after the event
    status, _ = await h.event(2, [10, 11, 12])
    assert status == 204
    put = h.calls("put")[-1][2]
    # P1-RTR-3: the PUT carries what the router knew (from the event) ...
    assert (put.drafter, put.round, put.committed, put.digest) == (DC, 0, 3, d([10, 11, 12]))
    assert h.cache.objects[put.committed_tokens] == [10, 11, 12]
    _, drafter, assignment = h.calls("assign")[-1]
    # ... and the assignment the values of the session-state the PUT returned.
    assert drafter == DC and (assignment.round, assignment.committed) == (3, 4)
    assert assignment.digest == d([10, 11, 12, 13])
    assert h.cache.objects[assignment.committed_tokens] == [10, 11, 12, 13]
    assert h.machine.drafter == DC


@async_test
async def test_switch_with_no_other_drafter_reassigns_the_same_one() -> None:
    h = await opened()
    await h.event(2)
    assert [entry[1] for entry in h.calls("assign")] == [DA, DA]
    assert h.machine.drafter == DA


@async_test
async def test_self_decoding_then_kind_0_assigns_again() -> None:
    h = await opened()
    await h.event(3)
    assert len(h.calls("assign")) == 1 and h.machine.phase is Phase.SELF_DECODING
    await h.app.check_once()
    assert len(h.calls("assign")) == 1  # self-decoding needs no drafter
    h.cache.commit(1, 1, [], [4])
    h.verifiers.advance(V1, 1, [4])
    await h.event(0, [4])
    assert [entry[1] for entry in h.calls("assign")] == [DA, DA]
    assert h.calls("assign")[-1][2].committed == 1 and h.phase() is Phase.ACTIVE


@pytest.mark.parametrize(("kind", "phase"), [(42, Phase.FAILED), (5, Phase.FAILED), (4, Phase.FINISHED)])
@async_test
async def test_ending_and_unknown_events_end_the_session(kind: int, phase: Phase) -> None:
    h = await opened()
    status, _ = await h.event(kind)
    assert status == 204 and h.machine.phase is phase
    h.clock.now = 100.0  # everything expired: the watchdog would act on a live session
    await h.app.check_once()
    assert len(h.calls("assign")) == 1 and h.calls("fence") == []


# ---------------------------------------------------------------------- policy


@async_test
async def test_policy_from_round_and_the_409_retry() -> None:
    h = await opened()
    h.cache.commit(1, 1, [], [1])
    h.verifiers.advance(V1, 4, [1])
    await h.event(2, [1])  # the PUT teaches the router round 4
    h.verifiers.advance(V1, 6, [1])  # and the session moves on before the policy arrives
    profile = Sampling(temperature_milli=500, seed=1)
    state = await h.app.set_policy(SESSION, profile)
    policies = [entry[2] for entry in h.calls("policy")]
    assert [p.from_round for p in policies] == [5, 7] and state.round == 6  # P1-RTR-4
    h.verifiers.advance(V1, 7, [1])
    await h.event(2, [1])
    assert h.calls("assign")[-1][2].sampling == profile


# ---------------------------------------------------------------------- failover


async def failing_v1(h: Harness) -> None:
    """V1 and V2 report; V1 stops reporting and expires at t = 1; everyone else keeps reporting."""
    await h.status(V1, role=2, ttl_ms=1000)
    await h.status(V2, role=2, ttl_ms=10_000, load=90)
    await h.status(DA, ttl_ms=10_000)
    await h.status(DC, ttl_ms=10_000, load=50)
    await h.open()
    assert h.machine.verifier == V1
    h.clock.now = 1.0


@async_test
async def test_failover_fences_first_and_resumes_at_another_verifier() -> None:
    h = Harness()
    await failing_v1(h)
    h.cache.commit(1, 1, [], [10, 11])
    h.cache.commit(1, 2, [10, 11], [12])
    # The partitioned old verifier appends after the fence (an MLC that does not enforce it).
    h.cache.after_fence = [CommitRecord(1, 3, (66,), 4, d([10, 11, 12, 66]))]
    mark = len(h.journal)
    await h.app.check_once()
    journal = h.journal[mark:]
    assert journal[0] == ("fence", LOG, 2)  # §6.9: "the router first appends a fence record"
    [(_, verifier, opening)] = [entry for entry in journal if entry[0] == "open"]
    assert verifier == V2 and opening.epoch == 2 and opening.commit_log == LOG
    resume = opening.resume
    assert (resume.round, resume.committed, resume.digest) == (2, 3, d([10, 11, 12]))
    assert resume.target_kv is None
    assert h.cache.objects[resume.committed_tokens] == [10, 11, 12]
    kinds = [entry[0] for entry in journal]
    assert kinds.index("put_tokens") < kinds.index("open") < kinds.index("put") < kinds.index("assign")
    put = h.calls("put")[-1][2]
    _, drafter, assignment = h.calls("assign")[-1]
    assert put.epoch == assignment.epoch == 2 and put.verifier == assignment.verifier == V2
    assert drafter == DA  # D-RTR-12: the same drafter, still eligible
    assert (assignment.round, assignment.committed, assignment.digest) == (2, 3, d([10, 11, 12]))
    assert h.cache.objects[assignment.committed_tokens] == [10, 11, 12]
    assert h.machine.epoch == 2 and h.machine.verifier == V2
    status, _ = await h.event(2, [10, 11, 12], peer=V1)  # the old verifier is no longer current
    assert status == 403


@async_test
async def test_failover_of_an_empty_log_resumes_at_d0() -> None:
    h = Harness()
    await failing_v1(h)
    await h.app.check_once()
    resume = h.calls("open")[-1][2].resume
    assert (resume.round, resume.committed, resume.digest) == (0, 0, D0)
    assert h.cache.objects[resume.committed_tokens] == []
    assert h.calls("assign")[-1][2].committed_tokens is None


@async_test
async def test_a_log_that_does_not_reproduce_its_digest_fails_the_session() -> None:
    h = Harness()
    await failing_v1(h)
    h.cache.commit(1, 1, [], [10, 11])
    forged = CommitRecord(1, 2, (12,), 3, d([10, 11, 99]))
    h.cache.logs[LOG] += encode_record(forged)
    await h.app.check_once()
    assert [entry[0] for entry in h.journal[-2:]] == ["fence", "read_log"]
    assert len(h.calls("open")) == 1  # opened nowhere else (D-RTR-9)
    assert h.machine.phase is Phase.FAILED
    await h.app.check_once()
    assert len(h.calls("fence")) == 1


@async_test
async def test_a_higher_fence_in_the_log_fails_the_session() -> None:
    h = Harness()
    await failing_v1(h)
    h.cache.logs[LOG] = encode_record(FenceRecord(9))
    await h.app.check_once()
    assert h.machine.phase is Phase.FAILED and len(h.calls("open")) == 1


@async_test
async def test_failover_retries_with_a_new_epoch_when_no_verifier_is_eligible() -> None:
    h = Harness()
    await h.status(V1, role=2, ttl_ms=1000)
    await h.status(DA, ttl_ms=10_000)
    await h.open()
    h.clock.now = 1.0
    await h.app.check_once()
    assert [entry[2] for entry in h.calls("fence")] == [2] and h.machine.verifier is None
    await h.status(V2, role=2, ttl_ms=10_000)
    await h.app.check_once()
    assert [entry[2] for entry in h.calls("fence")] == [2, 3]  # D-RTR-10
    assert h.calls("open")[-1][1] == V2 and h.calls("open")[-1][2].epoch == 3
    assert h.serving() == (V2, DA, 3)


@async_test
async def test_failover_after_resource_failures_three_in_a_row_over_half_a_second() -> None:
    h = Harness()
    await h.status(V1, role=2, ttl_ms=60_000)
    await h.status(V2, role=2, ttl_ms=60_000, load=90)
    await h.status(DA, ttl_ms=60_000)
    h.verifiers.put_answer[V1] = Refused(503, None, "overloaded")
    await h.open()  # failure 1 at t = 0 (the PUT)
    for now in (0.2, 0.4):
        h.clock.now = now
        await h.app.check_once()  # the watchdog retries the assignment: failures 2 and 3
    assert len(h.calls("put")) == 3 and h.calls("fence") == []  # three, but over 0.4 s
    h.clock.now = 0.5
    await h.app.check_once()  # failure 4 completes a streak over 0.5 s
    assert h.calls("fence") == []
    h.clock.now = 0.6
    await h.app.check_once()
    assert [entry[2] for entry in h.calls("fence")] == [2] and h.machine.verifier == V2
    assert h.calls("assign")[-1][2].verifier == V2


@async_test
async def test_failover_reposts_the_accepted_policy() -> None:
    h = Harness()
    await failing_v1(h)
    h.clock.now = 0.5
    profile = Sampling(top_k=5)
    await h.app.set_policy(SESSION, profile)
    h.cache.commit(1, 1, [], [8])
    h.clock.now = 1.0
    mark = len(h.journal)
    await h.app.check_once()
    policy = h.calls("policy")[-1]
    assert policy[1] == V2 and policy[2].from_round == 2 and policy[2].sampling == profile  # D-RTR-11
    kinds = [entry[0] for entry in h.journal[mark:]]
    assert kinds == ["fence", "read_log", "put_tokens", "open", "policy", "put", "assign"]
    assert h.calls("assign")[-1][2].sampling == profile


@async_test
async def test_failover_waits_for_the_mlc_and_never_returns_to_the_failed_verifier() -> None:
    h = Harness()
    await failing_v1(h)
    h.cache.unavailable = True
    await h.app.check_once()
    assert len(h.calls("open")) == 1 and h.machine.verifier is None and not h.machine.ended
    h.cache.unavailable = False
    await h.status(V1, role=2, ttl_ms=10_000)  # the failed verifier is back, and less loaded than V2
    await h.app.check_once()
    assert h.serving()[0] == V2 and h.serving()[2] == 3


@async_test
async def test_noted_target_kv_goes_into_the_resume() -> None:
    h = Harness()
    await failing_v1(h)
    h.cache.commit(1, 1, [], [3, 4])
    h.app.note_target_kv(SESSION, 2, f"{CACHE}kv/2")
    await h.app.check_once()
    assert h.calls("open")[-1][2].resume.target_kv == f"{CACHE}kv/2"


# ---------------------------------------------------------------------- drafter failure, closing


@async_test
async def test_an_expired_drafter_is_replaced() -> None:
    h = Harness()
    await h.status(V1, role=2, ttl_ms=60_000)
    await h.status(DA, ttl_ms=1000)
    await h.status(DC, ttl_ms=60_000, load=70)
    await h.open()
    assert h.machine.drafter == DA
    h.cache.commit(1, 1, [], [2])
    h.verifiers.advance(V1, 1, [2])
    h.clock.now = 1.0
    await h.app.check_once()
    put, (_, drafter, assignment) = h.calls("put")[-1][2], h.calls("assign")[-1]
    assert put.drafter == drafter == DC and assignment.committed == 1  # §6.9 Drafter failure
    assert h.cache.objects[assignment.committed_tokens] == [2]
    assert h.machine.drafter == DC and h.calls("fence") == []


@async_test
async def test_a_410_on_put_closes_the_session() -> None:
    h = Harness()
    await standard(h, drafters=(DA,))
    h.verifiers.put_answer[V1] = Refused(410, ProblemType.SESSION_CLOSED, "finished")
    await h.open()
    assert h.machine.phase is Phase.CLOSED and h.calls("assign") == []
    h.verifiers.put_answer.clear()
    assert (await h.event(4))[0] == 204
    assert h.phase() is Phase.FINISHED


@async_test
async def test_the_watchdog_loop_sleeps_between_passes_and_close_stops_it() -> None:
    h = await opened(drafters=(), watchdog_interval_s=0.25)
    await h.status(DA, ttl_ms=10_000)
    slept: list[float] = []
    passed = asyncio.Event()

    async def fake_sleep(seconds: float) -> None:
        slept.append(seconds)
        passed.set()
        await asyncio.Event().wait()  # park until close() cancels the loop

    h.app._sleep = fake_sleep
    h.app.start()
    await passed.wait()
    assert slept == [0.25] and [entry[1] for entry in h.calls("assign")] == [DA]
    await h.app.close()
    assert h.app._watchdog is None


@async_test
async def test_commit_log_and_tokens_are_named_under_the_cache_base() -> None:
    h = await opened()
    h.cache.commit(1, 1, [], [1, 2])
    h.verifiers.advance(V1, 1, [1, 2])
    await h.event(2, [1, 2])
    assert h.calls("assign")[-1][2].committed_tokens == f"{CACHE}sdcp/{SESSION_ID}/committed-e1-n2"
    assert decode(encode(h.cache.objects[f"{CACHE}sdcp/{SESSION_ID}/committed-e1-n2"])) == [1, 2]
