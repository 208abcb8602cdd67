"""The router's network adapters: the MLC port against the harness's cache handler, and the HTTP links
against a fake client that answers what a verifier or drafter would.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sdcp_conformance.cache.app import CacheApp
from sdcp_conformance.cache.append import append_record
from sdcp_conformance.cache.clients import HandlerObjectClient
from sdcp_conformance.cache.commit_log import CommitRecord, FenceRecord, parse_log
from sdcp_conformance.protocol.chain import extend_digest, prefix_digest
from sdcp_conformance.protocol.codec import encode
from sdcp_conformance.protocol.contract import digest_of
from sdcp_conformance.protocol.errors import ProtocolError
from sdcp_conformance.protocol.messages import Assignment, Contract, Policy, Sampling, SessionState
from sdcp_conformance.protocol.problems import SDCP_MEDIA_TYPE, ProblemType
from sdcp_conformance.reference.router.links import HttpLinks, MlcRouterCache
from sdcp_conformance.reference.router.ports import CacheUnavailable, LinkFailure, Refused
from sdcp_conformance.reference.router.session import RouterSession
from sdcp_conformance.transport.client import ClientResponse, FailureKind, TransportFailure
from sdcp_conformance.transport.problem import problem_response
from tests.reference.async_tests import async_test
from tests.reference.parties import DA, SESSION, V1, party

MLC = party("mlc")
LOG = MLC + "log"
CONTRACT = Contract.from_obj({"target": bytes(32), "tokenizer": bytes(32), "rule": 1, "m_max": 4, "max_new": 9,
                              "stop": [], "low_rounds": 1, "fallback": [2]})
PROMPT = [1, 2]
D0 = prefix_digest(digest_of(CONTRACT), PROMPT)


def mlc() -> tuple[CacheApp, HandlerObjectClient, MlcRouterCache]:
    app = CacheApp()
    client = HandlerObjectClient(app)
    return app, client, MlcRouterCache(client)


@async_test
async def test_token_lists_round_trip_and_a_missing_object_is_unavailable() -> None:
    _, _, cache = mlc()
    await cache.put_tokens(MLC + "t", [3, 0, 70000])
    assert await cache.get_tokens(MLC + "t") == [3, 0, 70000]
    with pytest.raises(CacheUnavailable):
        await cache.get_tokens(MLC + "missing")


@async_test
async def test_a_missing_log_reads_empty_and_a_fence_creates_it() -> None:
    _, _, cache = mlc()
    assert await cache.read_log(LOG) == b""
    assert await cache.append_fence(LOG, 2)
    assert parse_log(await cache.read_log(LOG)) == [FenceRecord(2)]


@async_test
async def test_a_higher_fence_refuses_the_routers_fence() -> None:
    _, client, cache = mlc()
    await append_record(client, LOG, FenceRecord(5))
    assert not await cache.append_fence(LOG, 3)
    assert parse_log(await cache.read_log(LOG)) == [FenceRecord(5)]


@async_test
async def test_the_router_replays_what_a_verifier_appended() -> None:
    _, client, cache = mlc()
    # Written the way the verifiers write (the shared conditional append of P1-LOG-1).
    await append_record(client, LOG, CommitRecord(1, 1, (7, 8), 2, extend_digest(D0, [7, 8])))
    await append_record(client, LOG, CommitRecord(1, 2, (9,), 3, extend_digest(D0, [7, 8, 9])))
    session = RouterSession(SESSION, CONTRACT, PROMPT, LOG, m_init=4)
    assert await cache.append_fence(LOG, session.begin_failover())
    replay = session.replay(await cache.read_log(LOG))
    assert (replay.round, replay.committed, replay.tokens) == (2, 3, (7, 8, 9))
    # The fence now stops the old epoch's appends (an enforcing MLC).
    late = await append_record(client, LOG, CommitRecord(1, 3, (4,), 4, extend_digest(D0, [7, 8, 9, 4])))
    assert late.status.value == "fenced"


class FakeClient:
    def __init__(self, response: ClientResponse | None) -> None:
        self.response = response
        self.sent: list[tuple[str, str, Any, bool | None]] = []
        self.closed = False

    async def send_message(self, method: str, path: str, message: Any, *, retry: bool | None = None) -> ClientResponse:
        self.sent.append((method, path, message, retry))
        if self.response is None:
            raise TransportFailure(FailureKind.TIMEOUT, "no answer")
        return self.response

    async def aclose(self) -> None:
        self.closed = True


def links(response: ClientResponse | None) -> tuple[HttpLinks, dict[str, FakeClient]]:
    clients: dict[str, FakeClient] = {}

    def factory(base: str) -> FakeClient:
        clients[base] = FakeClient(response)
        return clients[base]

    return HttpLinks(Path("unused.crt"), Path("unused.key"), Path("unused-ca.crt"), client_factory=factory), clients


STATE = SessionState(session=SESSION, epoch=1, round=3, committed=2, digest=extend_digest(D0, [1, 1]))


def ok(message: Any) -> ClientResponse:
    return ClientResponse(200, (("content-type", SDCP_MEDIA_TYPE),), encode(message))


def assignment() -> Assignment:
    return Assignment(session=SESSION, epoch=1, contract=CONTRACT, verifier=V1, drafter=DA, prompt=tuple(PROMPT),
                      round=0, committed=0, digest=D0, m_init=4)


@async_test
async def test_put_drafter_answers_the_session_state_at_the_sessions_path() -> None:
    link, clients = links(ok(STATE.to_obj()))
    assert await link.put_drafter(V1, assignment()) == STATE
    [(method, path, body, retry)] = clients[V1].sent
    assert (method, path, retry) == ("PUT", "sessions/AAECAwQFBgcICQoLDA0ODw/drafter", False)
    assert body == assignment().to_obj()
    await link.aclose()
    assert clients[V1].closed


@async_test
async def test_a_409_problem_carries_its_state() -> None:
    error = ProtocolError(ProblemType.STALE_BASE, "old round", state=STATE.to_obj())
    response = problem_response(error)
    reply = ClientResponse(response.status, tuple(response.headers), response.body)
    link, clients = links(reply)
    policy = Policy(session=SESSION, from_round=1, sampling=Sampling(seed=1))
    answer = await link.post_policy(V1, policy)
    assert answer == Refused(409, ProblemType.STALE_BASE, "old round", STATE)
    assert clients[V1].sent[0][1] == "sessions/AAECAwQFBgcICQoLDA0ODw/policy"


@async_test
async def test_a_malformed_success_body_counts_as_a_5xx() -> None:
    link, _ = links(ok({"not": "a state"}))
    answer = await link.open_session(V1, RouterSession(SESSION, CONTRACT, PROMPT, LOG, m_init=4).opening())
    assert isinstance(answer, Refused) and answer.resource_failure


@async_test
async def test_transport_failures_become_link_failures_and_204_is_none() -> None:
    link, _ = links(None)
    with pytest.raises(LinkFailure):
        await link.post_assignment(DA, assignment())
    link, clients = links(ClientResponse(204, (), b""))
    assert await link.post_assignment(DA, assignment()) is None
    assert clients[DA].sent[0][:2] == ("POST", "assignments")
