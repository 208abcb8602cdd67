"""The reference router's test front (P1-FRONT-1..3) against in-memory verifiers, drafters and MLC.

The fakes answer as the draft says; digests are computed here with the §4.2
chain; the front is driven through its HTTP handler with CBOR bodies, as a
client of another implementation would drive it.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Sequence
from typing import Any

from sdcp_conformance.protocol.chain import contract_digest, prefix_digest
from sdcp_conformance.protocol.codec import decode, encode
from sdcp_conformance.protocol.messages import Assignment, Output, Policy, SessionOpen, SessionState
from sdcp_conformance.protocol.problems import ProblemType
from sdcp_conformance.reference.frontend import RouterFrontend
from sdcp_conformance.reference.router.app import RouterApp, RouterConfig, instance_id
from sdcp_conformance.reference.router.ports import LinkFailure, Refused
from sdcp_conformance.transport.types import Request

ROUTER = "https://127.0.0.1:1/router/"
CACHE = "https://127.0.0.1:1/mlc/"
V1, V2 = "https://127.0.0.1:1/verifier-1/", "https://127.0.0.1:1/verifier-2/"
DA = "https://127.0.0.1:1/drafter-a/"
MODEL = bytes([0x11]) * 32
CLIENT = "https://127.0.0.1:1/client/"
SESSION = bytes(range(16))
SID = base64.urlsafe_b64encode(SESSION).rstrip(b"=").decode()
PROMPT = [5, 6, 7]
CONTRACT = {"target": bytes(32), "tokenizer": bytes(32), "rule": 1, "m_max": 4, "max_new": 50, "stop": [],
            "low_rounds": 1, "fallback": [2], "drafters": [MODEL]}
D0 = prefix_digest(contract_digest(CONTRACT), PROMPT)


class Verifiers:
    def __init__(self) -> None:
        self.outputs: dict[str, list[Output | Refused | None]] = {V1: [], V2: []}
        self.rounds = {V1: 0, V2: 0}
        self.refuse_open: Refused | None = None
        self.policies: list[Policy] = []

    async def open_session(self, verifier: str, opening: SessionOpen) -> SessionState | Refused:
        if self.refuse_open is not None:
            return self.refuse_open
        resume = opening.resume
        if resume is None:
            return SessionState(session=opening.session, epoch=opening.epoch, round=0, committed=0, digest=D0)
        return SessionState(session=opening.session, epoch=opening.epoch, round=resume.round,
                            committed=resume.committed, digest=resume.digest)

    async def put_drafter(self, verifier: str, assignment: Assignment) -> SessionState:
        return SessionState(session=assignment.session, epoch=assignment.epoch, round=self.rounds[verifier],
                            committed=0, digest=D0)

    async def post_policy(self, verifier: str, policy: Policy) -> SessionState | Refused:
        self.policies.append(policy)
        state = SessionState(session=policy.session, epoch=1, round=self.rounds[verifier], committed=0, digest=D0)
        if policy.from_round <= self.rounds[verifier]:
            return Refused(409, ProblemType.STALE_BASE, "stale", state)
        return state

    async def get_output(self, verifier: str, session: bytes, start: int, timeout_s: float) -> Output | Refused:
        queue = self.outputs[verifier]
        if not queue:
            await asyncio.sleep(timeout_s)  # a long poll that finds nothing
            return Output(session=session, epoch=1, tokens=(), final=False, from_=start)
        answer = queue.pop(0)
        if answer is None:
            raise LinkFailure("reset")
        return answer


class Drafters:
    async def post_assignment(self, drafter: str, assignment: Assignment) -> None:
        return None


class Cache:
    async def get_tokens(self, uri: str) -> list[int]:
        return [9, 9]

    async def put_tokens(self, uri: str, tokens: Sequence[int]) -> None:
        return None

    async def read_log(self, uri: str) -> bytes:
        return b""

    async def append_fence(self, uri: str, epoch: int) -> bool:
        return True


def front(verifiers: Verifiers) -> RouterFrontend:
    config = RouterConfig(base_uri=ROUTER, cache_base=CACHE, drafters={DA: MODEL}, verifiers=[V1, V2])
    app = RouterApp(config, verifiers, Drafters(), Cache(), clock=lambda: 0.0)
    handler = RouterFrontend(app)
    handler.output.wait_s = 0.3
    return handler


async def call(handler: RouterFrontend, method: str, path: str, body: Any = None,
               peer: str = CLIENT) -> tuple[int, Any]:
    data = b"" if body is None else body if isinstance(body, bytes) else encode(body)
    path, _, query = path.partition("?")
    response = await handler(Request(method, "/router/" + path, query, (), data, peer))
    media = response.header("content-type") or ""
    payload = decode(response.body) if "cbor" in media else json.loads(response.body) if response.body else None
    return response.status, payload


async def opened(handler: RouterFrontend) -> None:
    for uri, role in ((V1, 2), (V2, 2), (DA, 1)):
        status = {"instance": uri, "role": role, "load": 0, "queue": 0, "ttl_ms": 60_000}
        assert (await call(handler, "PUT", f"instances/{instance_id(uri)}/status", status, uri))[0] == 204
    status, body = await call(handler, "POST", "client/sessions", {"contract": CONTRACT, "prompt": PROMPT,
                                                                   "session": SESSION})
    assert status == 201 and body == {"session": SESSION, "verifier": V1, "epoch": 1}


def run(coroutine: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coroutine, 30))


def test_open_answers_201_with_session_verifier_and_epoch() -> None:
    async def scenario() -> None:
        handler = front(Verifiers())
        await opened(handler)
        status, body = await call(handler, "GET", f"client/sessions/{SID}")
        assert status == 200 and body["verifier"] == V1 and body["epoch"] == 1 and body["phase"] == "active"

    run(scenario())


def test_a_contract_no_configured_drafter_may_serve_is_422() -> None:
    async def scenario() -> None:
        handler = front(Verifiers())
        await opened(handler)
        status, body = await call(handler, "POST", "client/sessions", {"contract": CONTRACT | {"drafters": [bytes(32)]},
                                                                       "prompt": PROMPT})
        assert status == 422 and body["type"].endswith("sdcp-bad-contract")

    run(scenario())


def test_every_verifier_refusing_the_contract_is_422_and_none_eligible_is_503() -> None:
    async def scenario() -> None:
        verifiers = Verifiers()
        handler = front(verifiers)
        await opened(handler)
        verifiers.refuse_open = Refused(422, ProblemType.BAD_CONTRACT, "not my target")
        status, _ = await call(handler, "POST", "client/sessions", {"contract": CONTRACT, "prompt": PROMPT})
        assert status == 422
        verifiers.refuse_open = Refused(503, None, "busy")
        status, _ = await call(handler, "POST", "client/sessions", {"contract": CONTRACT, "prompt": PROMPT})
        assert status == 503

    run(scenario())


def test_malformed_front_requests_are_400() -> None:
    async def scenario() -> None:
        handler = front(Verifiers())
        await opened(handler)
        assert (await call(handler, "POST", "client/sessions", {"contract": CONTRACT}))[0] == 400
        assert (await call(handler, "POST", "client/sessions", b"\xff"))[0] == 400
        assert (await call(handler, "GET", "client/sessions/AAAA/output?from=0"))[0] == 400
        assert (await call(handler, "GET", f"client/sessions/{SID}/output?from=x"))[0] == 400

    run(scenario())


def test_output_is_the_current_verifiers_and_a_lower_epoch_is_discarded() -> None:
    async def scenario() -> None:
        verifiers = Verifiers()
        handler = front(verifiers)
        await opened(handler)
        tokens = (4, 2)
        good = Output(session=SESSION, epoch=1, tokens=tokens, final=False, from_=0)
        verifiers.outputs[V1] = [None, good]  # a reset read first: the front reads again
        status, body = await call(handler, "GET", f"client/sessions/{SID}/output?from=0")
        assert status == 200 and body["tokens"] == list(tokens) and body["epoch"] == 1 and body["from"] == 0
        handler.router.session(SESSION).epoch = 2  # as after a fence: epoch 1 is now lower than one seen
        stale = Output(session=SESSION, epoch=1, tokens=(66,), final=False, from_=2)
        verifiers.outputs[V1] = [stale]
        status, body = await call(handler, "GET", f"client/sessions/{SID}/output?from=2")
        assert status == 200 and body["tokens"] == [] and body["final"] is False  # 66 was never passed on

    run(scenario())


def test_policy_answers_the_accepted_from_round_after_a_409() -> None:
    async def scenario() -> None:
        verifiers = Verifiers()
        handler = front(verifiers)
        await opened(handler)
        verifiers.rounds[V1] = 3
        status, body = await call(handler, "POST", f"client/sessions/{SID}/policy",
                                  {"sampling": {"temperature_milli": 500}})
        assert status == 200 and body == {"from_round": 4}
        assert [policy.from_round for policy in verifiers.policies] == [1, 4]  # P1-RTR-4

    run(scenario())


def test_unknown_session_is_404() -> None:
    async def scenario() -> None:
        handler = front(Verifiers())
        other = base64.urlsafe_b64encode(bytes(16)).rstrip(b"=").decode()
        assert (await call(handler, "GET", f"client/sessions/{other}"))[0] == 404

    run(scenario())
