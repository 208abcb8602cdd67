"""The reference verifier's HTTP layer against in-memory fakes of the model, cache and router.

The fake target model's next token is a fixed function of the context
(``_next_token``), so the tests compute greedy decoding themselves.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import httpx
import numpy as np
import numpy.typing as npt
import pytest

from sdcp_conformance.protocol.chain import extend_digest, prefix_digest
from sdcp_conformance.protocol.codec import decode, encode
from sdcp_conformance.protocol.contract import digest_of
from sdcp_conformance.protocol.messages import Contract, Event
from sdcp_conformance.reference.verifier.app import ScoreBatcher, VerifierApp, VerifierConfig
from sdcp_conformance.reference.verifier.ports import AppendOutcome, CacheUnavailable, ScoreItem
from sdcp_conformance.transport.types import Request
from tests.reference.async_tests import Inbox, async_test
from tests.reference.parties import SESSION, SESSION_ID, TOKENIZER, party

V = 16
ROUTER = party("router")
DRAFTER = party("drafter")
TARGET = bytes([1]) * 32
PROMPT = [3, 1, 4]


def _next_token(context: Sequence[int]) -> int:
    return (7 * sum(context) + len(context)) % V


class FakeModel:
    vocab_size = V
    model_sha256 = TARGET
    tokenizer_sha256 = TOKENIZER

    def __init__(self) -> None:
        self.batches: list[int] = []
        self.gate: threading.Event | None = None

    def score(self, items: Sequence[ScoreItem]) -> list[npt.NDArray[np.float64]]:
        if self.gate is not None:
            assert self.gate.wait(10), "test gate never opened"
        self.batches.append(len(items))
        results = []
        for item in items:
            rows = np.zeros((len(item.proposed) + 1, V))
            context = list(item.context)
            for index in range(len(item.proposed) + 1):
                rows[index, _next_token(context)] = 4.0
                if index < len(item.proposed):
                    context.append(item.proposed[index])
            results.append(rows)
        return results

    def forget(self, session: bytes) -> None:
        pass


class FakeCache:
    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}
        self.logs: dict[str, list[Mapping[str, Any]]] = {}
        self.fence_epoch = 0
        self.fail_appends = False

    async def get(self, uri: str) -> bytes:
        if uri not in self.objects:
            raise CacheUnavailable(f"404 {uri}")
        return self.objects[uri]

    async def append_record(self, log_uri: str, record: Mapping[str, Any], epoch: int) -> AppendOutcome:
        if self.fail_appends:
            return AppendOutcome.FAILED
        if epoch < self.fence_epoch:
            return AppendOutcome.FENCED
        self.logs.setdefault(log_uri, []).append(dict(record))
        return AppendOutcome.APPENDED


class FakeRouter(Inbox[Event]):
    async def post_event(self, event: Event) -> None:
        self.put(event)

    async def put_status(self, status: Mapping[str, Any]) -> None:
        pass


def contract(**changes: Any) -> dict[str, Any]:
    return {
        "target": TARGET, "tokenizer": TOKENIZER, "rule": 1, "m_max": 4, "max_new": 12, "stop": [],
        "low_rounds": 1, "fallback": [2],
    } | changes


class Harness:
    def __init__(self, **config: Any) -> None:
        self.model, self.cache, self.router = FakeModel(), FakeCache(), FakeRouter()
        self.app = VerifierApp(
            VerifierConfig(base_uri="https://127.0.0.1:1/v/", routers=frozenset({ROUTER}), **config),
            self.model, self.cache, self.router,
        )

    async def call(self, method: str, path: str, body: Any = None, peer: str = ROUTER, query: str = "") -> Any:
        data = encode(body) if body is not None and not isinstance(body, bytes) else (body or b"")
        response = await self.app(Request(method, "/v/" + path, query, (), data, peer))
        media = response.header("content-type") or ""
        payload = json.loads(response.body) if "json" in media else decode(response.body) if response.body else None
        return response.status, payload

    async def open(self, **changes: Any) -> Any:
        body = {"session": SESSION, "epoch": 1, "contract": contract(**changes), "prompt": PROMPT,
                "commit_log": "https://127.0.0.1:1/c/log"}
        return await self.call("POST", "sessions", body)

    async def assign(self, drafter: str = DRAFTER, m_init: int = 4, epoch: int = 1) -> Any:
        machine = self.app.sessions[SESSION].machine
        body = {"session": SESSION, "epoch": epoch, "contract": machine.contract.to_obj(), "verifier": "v",
                "drafter": drafter, "prompt": PROMPT, "round": machine.round, "committed": len(machine.output),
                "digest": machine.digest, "m_init": m_init}
        return await self.call("PUT", f"sessions/{SESSION_ID}/drafter", body)

    def proposal(self, tokens: Sequence[int], **changes: Any) -> dict[str, Any]:
        machine = self.app.sessions[SESSION].machine
        return {"session": SESSION, "epoch": machine.epoch, "round": machine.round + 1, "drafter": DRAFTER,
                "base": len(machine.output), "base_digest": machine.digest, "tokens": list(tokens),
                "status": {"instance": DRAFTER, "role": 1, "load": 0, "queue": 0, "ttl_ms": 1000}} | changes

    async def propose(self, tokens: Sequence[int], peer: str = DRAFTER, **changes: Any) -> Any:
        return await self.call("POST", "proposals", self.proposal(tokens, **changes), peer=peer)


def greedy(context: Sequence[int], count: int) -> list[int]:
    tokens, ctx = [], list(context)
    for _ in range(count):
        tokens.append(_next_token(ctx))
        ctx.append(tokens[-1])
    return tokens


@async_test
async def test_open_assign_and_a_greedy_round() -> None:
    h = Harness(output_wait_s=0.0)
    status, state = await h.open()
    assert status == 201 and state["round"] == 0 and state["committed"] == 0
    d0 = prefix_digest(digest_of(Contract.from_obj(contract())), PROMPT)
    assert state["digest"] == d0
    assert (await h.open())[0] == 200  # P1-MSG-5: idempotent retry
    assert (await h.assign())[0] == 200
    good = greedy(PROMPT, 3)
    status, verdict = await h.propose([good[0], good[1], (good[2] + 1) % V])
    expected = greedy(PROMPT, 3)
    assert status == 200 and verdict["accepted"] == 2 and verdict["emitted"] == expected
    assert verdict["digest"] == extend_digest(d0, expected)
    log = h.cache.logs["https://127.0.0.1:1/c/log"]
    assert log == [{"epoch": 1, "round": 1, "emitted": expected, "committed": 3, "digest": verdict["digest"]}]
    status, output = await h.call("GET", f"sessions/{SESSION_ID}/output", query="from=1", peer=DRAFTER)
    assert status == 200 and output["tokens"] == expected[1:] and output["from"] == 1


@pytest.mark.parametrize(
    ("changes", "status", "suffix"),
    [
        ({"target": bytes(32)}, 422, "sdcp-bad-contract"),
        ({"tokenizer": bytes(32)}, 422, "sdcp-bad-contract"),
        ({"rule": 9}, 422, "sdcp-bad-contract"),
        ({"m_max": 0}, 422, "sdcp-bad-contract"),
        ({"x-unknown": 1}, 422, "sdcp-bad-contract"),
    ],
)
@async_test
async def test_session_open_refusals(changes: dict[str, Any], status: int, suffix: str) -> None:
    h = Harness()
    got_status, problem = await h.open(**changes)
    assert got_status == status and problem["type"].endswith(suffix)


@async_test
async def test_router_only_resources_and_unknown_sessions() -> None:
    h = Harness()
    body = {"session": SESSION, "epoch": 1, "contract": contract(), "prompt": PROMPT, "commit_log": "l"}
    status, problem = await h.call("POST", "sessions", body, peer=DRAFTER)
    assert status == 403 and problem["type"].endswith("sdcp-not-assigned")
    status, _ = await h.call("GET", f"sessions/{SESSION_ID}/output")
    assert status == 404
    status, problem = await h.call("POST", "proposals", {**h_proposal_stub(), "session": SESSION}, peer=DRAFTER)
    assert status == 403
    status, _ = await h.call("GET", "sessions/not-base64!/output")
    assert status == 400
    status, _ = await h.call("DELETE", "proposals")
    assert status == 405


def h_proposal_stub() -> dict[str, Any]:
    return {"epoch": 1, "round": 1, "drafter": DRAFTER, "base": 0, "base_digest": bytes(32), "tokens": [1],
            "status": {"instance": DRAFTER, "role": 1, "load": 0, "queue": 0, "ttl_ms": 1}}


@async_test
async def test_concurrent_identical_retry_waits_for_the_first_verdict() -> None:
    h = Harness()
    await h.open()
    await h.assign()
    h.model.gate = threading.Event()
    body = h.proposal(greedy(PROMPT, 2))
    first = asyncio.create_task(h.call("POST", "proposals", body, peer=DRAFTER))
    second = asyncio.create_task(h.call("POST", "proposals", body, peer=DRAFTER))
    different = asyncio.create_task(h.call("POST", "proposals", {**body, "tokens": [0]}, peer=DRAFTER))
    status, problem = await different
    assert status == 409 and problem["type"].endswith("sdcp-stale-base")
    h.model.gate.set()
    (s1, v1), (s2, v2) = await first, await second
    assert s1 == s2 == 200 and v1 == v2
    assert len(h.cache.logs["https://127.0.0.1:1/c/log"]) == 1  # committed once


@async_test
async def test_fenced_append_releases_nothing_and_stops_serving() -> None:
    h = Harness(output_wait_s=0.0)
    await h.open()
    await h.assign()
    h.cache.fence_epoch = 2
    status, problem = await h.propose(greedy(PROMPT, 1))
    assert status == 409 and problem["type"].endswith("sdcp-stale-epoch")
    assert h.app.sessions[SESSION].machine.output == []
    status, _ = await h.call("GET", f"sessions/{SESSION_ID}/output", peer=DRAFTER)
    assert status == 409


@async_test
async def test_failed_append_abandons_the_round_for_a_retry() -> None:
    h = Harness()
    await h.open()
    await h.assign()
    h.cache.fail_appends = True
    body = h.proposal(greedy(PROMPT, 1))
    assert (await h.call("POST", "proposals", body, peer=DRAFTER))[0] == 503
    h.cache.fail_appends = False
    status, verdict = await h.call("POST", "proposals", body, peer=DRAFTER)
    assert status == 200 and verdict["round"] == 1


@async_test
async def test_rule2_rows_unavailable_and_zero() -> None:
    h = Harness()
    await h.open(rule=2, sampling={"seed": 3})
    await h.assign()
    status, problem = await h.propose([1], q_rows="https://127.0.0.1:1/c/q-missing")
    assert status == 409 and problem["type"].endswith("sdcp-q-unavailable")
    q = np.zeros((1, V), dtype="<f4")
    q[0, 2] = 1.0
    h.cache.objects["https://127.0.0.1:1/c/q"] = q.tobytes()
    status, problem = await h.propose([1], q_rows="https://127.0.0.1:1/c/q")
    assert status == 422 and problem["type"].endswith("sdcp-bad-proposal")
    assert "https://127.0.0.1:1/c/log" not in h.cache.logs


@async_test
async def test_switch_posts_an_event_and_self_decoding_runs_to_its_budget() -> None:
    h = Harness(pinned_load=10)
    await h.open(fallback=[3, 2], self_load=50, self_max=3)
    await h.assign()
    bad = (greedy(PROMPT, 1)[0] + 1) % V
    status, verdict = await h.propose([bad])
    assert status == 200 and verdict["action"] == 3
    # Self-decoding commits three more tokens, then asks for a drafter (kind 0).
    machine = h.app.sessions[SESSION].machine
    deadline = asyncio.get_running_loop().time() + 10
    while not any(event.kind == 0 for event in h.router.received):
        assert asyncio.get_running_loop().time() < deadline, "self-decoding never ended"
        h.router.arrived.clear()
        await asyncio.wait_for(h.router.arrived.wait(), 10)
    assert [int(event.kind) for event in h.router.received] == [3, 0]
    assert machine.output == greedy(PROMPT, 4) and machine.round == 4
    log = h.cache.logs["https://127.0.0.1:1/c/log"]
    assert [record["round"] for record in log] == [1, 2, 3, 4]


@async_test
async def test_self_decode_skipped_under_load_switches() -> None:
    h = Harness(pinned_load=90)
    await h.open(fallback=[3, 2], self_load=50)
    await h.assign()
    status, verdict = await h.propose([(greedy(PROMPT, 1)[0] + 1) % V])
    assert verdict["action"] == 2 and verdict["load"] == 90
    await asyncio.wait_for(h.router.arrived.wait(), 10)
    assert [int(event.kind) for event in h.router.received] == [2]
    status, _problem = await h.propose([1])
    assert status == 403


@async_test
async def test_output_long_poll_wakes_on_commit() -> None:
    h = Harness(output_wait_s=20)
    await h.open(max_new=2)
    await h.assign()
    reader = asyncio.create_task(h.call("GET", f"sessions/{SESSION_ID}/output", peer=DRAFTER, query="from=0"))
    status, verdict = await h.propose(greedy(PROMPT, 3)[:2])
    status, output = await reader
    assert status == 200 and output["tokens"] == greedy(PROMPT, 2) and output["final"] is True
    assert output["finish"] == 4 and verdict["action"] == 4
    status, _problem = await h.propose([1])
    assert status == 410


@pytest.mark.parametrize("encoded", ["é" * 22, "AAAAAAAAAAAAAAAAAAAAA\u0660"])
@async_test
async def test_non_ascii_session_ids_are_bad_messages_not_crashes(encoded: str) -> None:
    """P1-MSG-3: any other alphabet is 400 (found by the API fuzzer: it was a 500)."""
    h = Harness()
    status, problem = await h.call("GET", f"sessions/{encoded}/output")
    assert status == 400 and problem["type"].endswith("sdcp-bad-message")


@async_test
async def test_a_prompt_reference_that_is_no_url_is_a_bad_message() -> None:
    """A cache-ref httpx cannot even parse is unreadable, hence 400 (the API fuzzer found a 500)."""
    from sdcp_conformance.cache.append import CacheTransportError
    from sdcp_conformance.cache.clients import HttpxObjectClient

    async with httpx.AsyncClient() as http:
        with pytest.raises(CacheTransportError):
            await HttpxObjectClient(http, timeout=1.0).get("https://127.0.0.1:1/a\x11b")


class ThreadConfinedModel(FakeModel):
    """Records what is called on it, and whether a scoring pass was running at the time."""

    def __init__(self) -> None:
        super().__init__()
        self.gate, self.entered = threading.Event(), threading.Event()
        self.scoring = False
        self.calls: list[Any] = []

    def score(self, items: Sequence[ScoreItem]) -> list[npt.NDArray[np.float64]]:
        self.scoring = True
        self.entered.set()
        try:
            return super().score(items)
        finally:
            self.scoring = False
            self.calls.append("score")

    def forget(self, session: bytes) -> None:
        self.calls.append(("forget", session, self.scoring))


@async_test
async def test_a_forget_asked_for_during_a_scoring_pass_runs_after_it() -> None:
    """D-VER-10: a session reopened while its item is being scored keeps its cache until the pass ends."""
    model = ThreadConfinedModel()
    batcher = ScoreBatcher(model, 8)  # type: ignore[arg-type]
    scoring = asyncio.create_task(batcher.score(ScoreItem(SESSION, (3, 1, 4), (5,))))
    assert await asyncio.to_thread(model.entered.wait, 10)
    batcher.forget(SESSION)
    assert model.calls == [], "the cache was dropped under the running pass"
    model.gate.set()
    await asyncio.wait_for(scoring, 10)
    assert model.calls == ["score", ("forget", SESSION, False)]
    batcher.forget(b"idle" * 4)  # no pass running: at once
    assert model.calls[-1] == ("forget", b"idle" * 4, False)

