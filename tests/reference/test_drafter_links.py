"""How the drafter's adapters map answers (P1-DRF-5: 5xx and 429 are lost, other 4xx final; P1-ERR-2)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from sdcp_conformance.cache.append import CacheReply, CacheTransportError
from sdcp_conformance.protocol.codec import encode
from sdcp_conformance.protocol.messages import SessionState, Verdict
from sdcp_conformance.protocol.problems import ProblemType
from sdcp_conformance.reference.drafter.links import ObjectClientCache, answer_to_result
from sdcp_conformance.reference.drafter.ports import CacheUnavailable, Problem, TransportFailure

VERDICT = {"session": bytes(16), "epoch": 1, "round": 1, "accepted": 0, "emitted": [2], "committed": 1,
           "digest": bytes(32), "action": 0, "m_cap": 1, "low": 0, "load": 0}


def test_success_decodes_the_verdict() -> None:
    result = answer_to_result(Verdict, 200, "application/sdcp+cbor", encode(VERDICT))
    assert isinstance(result, Verdict) and result.emitted == (2,)


@pytest.mark.parametrize("status", [500, 502, 503, 429])
def test_5xx_and_429_are_lost_answers(status: int) -> None:
    result = answer_to_result(Verdict, status, "application/problem+json", b"{}")
    assert isinstance(result, TransportFailure) and result.status == status


def test_an_unreadable_verdict_is_a_lost_answer() -> None:
    assert isinstance(answer_to_result(Verdict, 200, "application/sdcp+cbor", b"\xa1"), TransportFailure)


def test_stale_base_carries_the_session_state() -> None:
    state = {"session": "AAAAAAAAAAAAAAAAAAAAAA", "epoch": 1, "round": 4, "committed": 6,
             "digest": "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE", "state": 0}
    body = json.dumps({"type": "urn:ietf:params:sdcp:problem:sdcp-stale-base", "status": 409, "state": state})
    result = answer_to_result(Verdict, 409, "application/problem+json", body.encode())
    assert isinstance(result, Problem) and result.type is ProblemType.STALE_BASE
    assert result.state == SessionState(session=bytes(16), epoch=1, round=4, committed=6, digest=bytes([1]) * 32,
                                        state=0)


def test_a_malformed_state_or_a_plain_4xx_is_still_final() -> None:
    body = json.dumps({"type": "sdcp-stale-base", "status": 409, "state": {"round": "x"}}).encode()
    result = answer_to_result(Verdict, 409, "application/problem+json", body)
    assert isinstance(result, Problem) and result.type is ProblemType.STALE_BASE and result.state is None
    plain = answer_to_result(Verdict, 404, "text/plain", b"nope")
    assert isinstance(plain, Problem) and plain.type is None and plain.status == 404


class Objects:
    def __init__(self, replies: dict[str, Any]) -> None:
        self.replies = replies
        self.leases: list[int | None] = []

    async def get(self, uri: str) -> CacheReply:
        return self._answer("GET")

    async def put(self, uri: str, body: bytes, *, lease_ms: int | None = None) -> CacheReply:
        self.leases.append(lease_ms)
        return self._answer("PUT")

    async def delete(self, uri: str) -> CacheReply:
        return self._answer("DELETE")

    def _answer(self, method: str) -> CacheReply:
        reply = self.replies[method]
        if isinstance(reply, Exception):
            raise reply
        assert isinstance(reply, CacheReply)
        return reply


def test_object_cache_sends_the_lease_and_maps_failures() -> None:
    async def scenario() -> None:
        ok = Objects({"PUT": CacheReply(201), "GET": CacheReply(200, b"\x80"), "DELETE": CacheReply(404)})
        cache = ObjectClientCache(ok)
        await cache.put("u", b"x", 1500)
        assert ok.leases == [1500] and await cache.get("u") == b"\x80"
        await cache.delete("u")  # already gone is fine
        broken = ObjectClientCache(Objects({"PUT": CacheReply(503), "GET": CacheTransportError("reset"),
                                            "DELETE": CacheReply(500)}))
        for call in (broken.put("u", b"x", 1), broken.get("u"), broken.delete("u")):
            with pytest.raises(CacheUnavailable):
                await call

    asyncio.run(scenario())
