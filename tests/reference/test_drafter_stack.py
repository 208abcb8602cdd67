"""The reference drafter against the reference verifier and the MLC, all in-process.

The drafter reaches the verifier through :class:`HandlerVerifierLink` and the
cache through :class:`ObjectClientCache` over the real cache handler, so the
q_rows it publishes are the bytes the verifier checks. Expected outputs are
the target's greedy decoding, computed here.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from sdcp_conformance.cache.app import CacheApp
from sdcp_conformance.cache.clients import HandlerObjectClient
from sdcp_conformance.protocol.codec import decode, encode
from sdcp_conformance.protocol.messages import Event, Status
from sdcp_conformance.reference.drafter.app import DrafterApp, DrafterConfig
from sdcp_conformance.reference.drafter.drafting import LogitsDraftModel
from sdcp_conformance.reference.drafter.links import HandlerVerifierLink, ObjectClientCache
from sdcp_conformance.reference.verifier.app import VerifierApp, VerifierConfig
from sdcp_conformance.reference.verifier.ports import AppendOutcome, CacheUnavailable, ScoreItem
from sdcp_conformance.transport.types import Handler, Request
from tests.reference.parties import SESSION, SESSION_ID, TOKENIZER, party

V = 8
ROUTER, DRAFTER, VERIFIER, CACHE = party("router"), party("drafter"), party("v"), party("c")
TARGET, DRAFT = bytes([1]) * 32, bytes([7]) * 32
PROMPT = [3, 1, 4]


def target_next(context: Sequence[int]) -> int:
    return (5 * sum(context) + len(context)) % V


def draft_next(context: Sequence[int]) -> int:
    """Right except when the context length is a multiple of three."""
    guess = target_next(context)
    return (guess + 3) % V if len(context) % 3 == 0 else guess


def draft_logits(context: Sequence[int]) -> npt.NDArray[np.float64]:
    row = np.zeros(V)
    row[draft_next(context)] = 2.0
    return row


class TargetModel:
    vocab_size, model_sha256, tokenizer_sha256 = V, TARGET, TOKENIZER

    def score(self, items: Sequence[ScoreItem]) -> list[npt.NDArray[np.float64]]:
        results = []
        for item in items:
            rows, context = np.zeros((len(item.proposed) + 1, V)), list(item.context)
            for index in range(len(item.proposed) + 1):
                rows[index, target_next(context)] = 3.0
                context.extend(item.proposed[index : index + 1])
            results.append(rows)
        return results

    def forget(self, session: bytes) -> None:
        pass


class VerifierCache:
    """The verifier's cache port: objects from the shared MLC handler, the commit log in memory."""

    def __init__(self, objects: HandlerObjectClient) -> None:
        self.objects = objects
        self.log: list[Mapping[str, Any]] = []
        self.reads: list[str] = []

    async def get(self, uri: str) -> bytes:
        self.reads.append(uri)
        reply = await self.objects.get(uri)
        if reply.status != 200:
            raise CacheUnavailable(f"{reply.status} {uri}")
        return reply.body

    async def append_record(self, log_uri: str, record: Mapping[str, Any], epoch: int) -> AppendOutcome:
        self.log.append(dict(record))
        return AppendOutcome.APPENDED


class Router:
    def __init__(self) -> None:
        self.events: list[Event] = []

    async def post_event(self, event: Event) -> None:
        self.events.append(event)

    async def put_status(self, status: Any) -> None:
        pass


class DrafterRouterLink:
    def __init__(self) -> None:
        self.reports: list[Status] = []

    async def put_status(self, router: str, instance_id: str, status: Status) -> None:
        self.reports.append(status)


class Stack:
    def __init__(self) -> None:
        self.mlc = CacheApp()
        self.router = Router()
        self.verifier_cache = VerifierCache(HandlerObjectClient(self.mlc, peer_identity=VERIFIER))
        self.verifier = VerifierApp(
            VerifierConfig(base_uri=VERIFIER, routers=frozenset({ROUTER}), output_wait_s=0.0),
            TargetModel(), self.verifier_cache, self.router,
        )
        handlers: dict[str, Handler] = {VERIFIER: self.verifier}
        draft = LogitsDraftModel(draft_logits, vocab_size=V, model_sha256=DRAFT, tokenizer_sha256=TOKENIZER)

        async def no_sleep(seconds: float) -> None:
            pass

        self.drafter = DrafterApp(
            DrafterConfig(base_uri=DRAFTER, routers=frozenset({ROUTER}), cache_base=CACHE, seed=11),
            draft, ObjectClientCache(HandlerObjectClient(self.mlc, peer_identity=DRAFTER)),
            HandlerVerifierLink(handlers.__getitem__, peer_identity=DRAFTER), DrafterRouterLink(),
            clock=lambda: 0.0, sleep=no_sleep,
        )

    async def call(self, app: Handler, method: str, path: str, body: Any) -> tuple[int, Any]:
        response = await app(Request(method, path, "", (), encode(body), ROUTER))
        media = response.header("content-type") or ""
        payload = json.loads(response.body) if "json" in media else decode(response.body) if response.body else None
        return response.status, payload

    async def run(self, contract: dict[str, Any]) -> list[int]:
        opening = {"session": SESSION, "epoch": 1, "contract": contract, "prompt": PROMPT,
                   "commit_log": CACHE + "log"}
        assert (await self.call(self.verifier, "POST", "/v/sessions", opening))[0] == 201
        assignment = {"session": SESSION, "epoch": 1, "contract": contract, "verifier": VERIFIER,
                      "drafter": DRAFTER, "prompt": PROMPT, "m_init": 4}
        status, state = await self.call(self.verifier, "PUT", f"/v/sessions/{SESSION_ID}/drafter",
                                        assignment | {"round": 0, "committed": 0, "digest": bytes(32)})
        assert status == 200
        assignment |= {"round": state["round"], "committed": state["committed"], "digest": state["digest"]}
        assert (await self.call(self.drafter, "POST", "/drafter/assignments", assignment))[0] == 204
        task = self.drafter.sessions[SESSION].task
        assert task is not None
        await asyncio.wait_for(task, 20)
        return list(self.verifier.sessions[SESSION].machine.output)


def contract(**changes: Any) -> dict[str, Any]:
    return {"target": TARGET, "tokenizer": TOKENIZER, "drafters": [DRAFT], "rule": 1, "m_max": 6, "max_new": 20,
            "stop": [], "low_rounds": 3, "fallback": [1, 1, 1]} | changes


def run(coroutine: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coroutine, 60))


def test_rule1_session_with_the_reference_verifier_yields_the_target_greedy_output() -> None:
    async def scenario() -> None:
        stack = Stack()
        output = await stack.run(contract())
        expected, context = [], list(PROMPT)
        for _ in range(20):
            expected.append(target_next(context))
            context.append(expected[-1])
        assert output == expected
        rounds = [record["round"] for record in stack.verifier_cache.log]
        assert rounds == list(range(1, len(rounds) + 1))
        assert [int(event.kind) for event in stack.router.events] == [4]
        assert stack.drafter.sessions[SESSION].machine.output == expected

    run(scenario())


def test_rule2_session_with_the_reference_verifier_finishes_and_cleans_up_q_rows() -> None:
    async def scenario() -> None:
        stack = Stack()
        output = await stack.run(contract(rule=2, sampling={"seed": 5}))
        assert len(output) == 20 and all(0 <= token < V for token in output)
        assert stack.drafter.sessions[SESSION].machine.output == output
        q_reads = [uri for uri in stack.verifier_cache.reads if "/q/" in uri]
        assert len(q_reads) == len(stack.verifier_cache.log)  # every round fetched its rows
        leftovers = [path for path in stack.mlc.store.paths() if "/q/" in path]
        assert leftovers == []  # P1-DRF-8: deleted after each verdict

    run(scenario())
