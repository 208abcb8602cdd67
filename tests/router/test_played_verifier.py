"""The verifiers the harness plays for a router answer as a correct verifier of the profile would, and record
what they saw: driven here through their HTTP handler, with digests computed step by step."""

from __future__ import annotations

import asyncio
import base64
import hashlib
from typing import Any

from sdcp_conformance.cache.commit_log import FenceRecord
from sdcp_conformance.harness.iut import Answer
from sdcp_conformance.harness.roles.played_cache import PlayedCache
from sdcp_conformance.harness.roles.played_verifier import Fault, PlayedVerifier, RouterLinks
from sdcp_conformance.harness.roles.router_history import History, OpenSeen, PutSeen
from sdcp_conformance.harness.roles.status_reports import StatusReporter
from sdcp_conformance.protocol.chain import contract_digest
from sdcp_conformance.protocol.codec import decode, encode
from sdcp_conformance.transport.types import Request

CACHE = "https://127.0.0.1:9/cache/"
URI = "https://127.0.0.1:9/verifier-1/"
ROUTER = "https://127.0.0.1:9/router/"
TARGET = b"\x07" * 32
CONTRACT: dict[str, Any] = {"target": TARGET, "tokenizer": bytes(32), "rule": 1, "m_max": 4, "max_new": 50,
                            "stop": [], "low_rounds": 1, "fallback": [2]}
SESSION = bytes(range(16))
SID = base64.urlsafe_b64encode(SESSION).rstrip(b"=").decode()
LOG = CACHE + "log"


def d(tokens: list[int], prompt: tuple[int, ...] = (5, 9)) -> bytes:
    digest = hashlib.sha256(b"SDCP-PREFIX-1\x00" + contract_digest(CONTRACT) + len(prompt).to_bytes(4, "big")
                            + b"".join(t.to_bytes(4, "big") for t in prompt)).digest()
    for token in tokens:
        digest = hashlib.sha256(digest + token.to_bytes(4, "big")).digest()
    return digest


async def _never(*_: Any) -> Answer:
    raise AssertionError("no network in this test")


def verifier() -> tuple[PlayedVerifier, PlayedCache, History]:
    history = History()
    mlc = PlayedCache(CACHE)
    mlc.history = history
    status = StatusReporter("verifier-1", URI, 2, history, quiet=_never, recorded=_never)
    return PlayedVerifier("verifier-1", URI, links=RouterLinks(TARGET, mlc, history, status, _never)), mlc, history


async def call(played: PlayedVerifier, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    path, _, query = path.partition("?")
    raw = b"" if body is None else encode(body)
    headers = (("content-type", "application/sdcp+cbor"),)
    response = await played(Request(method, "/verifier-1/" + path, query, headers, raw, ROUTER))
    media = response.header("content-type") or ""
    return response.status, decode(response.body) if "cbor" in media else response.body


def opening(**changes: Any) -> dict[str, Any]:
    return {"session": SESSION, "epoch": 1, "contract": CONTRACT, "prompt": [5, 9], "commit_log": LOG} | changes


def run(coroutine: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coroutine, 20))


def test_open_commit_and_output_follow_the_log() -> None:
    async def scenario() -> None:
        played, mlc, history = verifier()
        status, state = await call(played, "POST", "sessions", opening())
        assert status == 201 and (state["round"], state["committed"], state["digest"]) == (0, 0, d([]))
        seen = played.commit(SESSION, [3, 4])
        assert seen.released and seen.record.digest == d([3, 4]) and seen.record.committed == 2
        status, output = await call(played, "GET", f"sessions/{SID}/output?from=0")
        assert status == 200 and output["tokens"] == [3, 4] and output["epoch"] == 1 and not output["final"]
        [opened] = history.of(OpenSeen, SESSION)
        assert opened.accepted and opened.log == () and opened.deterministic
        assert len(mlc.log(LOG)) == 1

    run(scenario())


def test_another_target_is_422_and_a_bad_resume_is_400() -> None:
    async def scenario() -> None:
        played, mlc, _ = verifier()
        status, _ = await call(played, "POST", "sessions", opening(contract=CONTRACT | {"target": bytes(32)}))
        assert status == 422
        mlc.put_tokens(CACHE + "tokens", [3, 4])
        resume = {"round": 1, "committed": 2, "digest": d([3, 5]), "committed_tokens": CACHE + "tokens"}
        status, _ = await call(played, "POST", "sessions", opening(epoch=2, resume=resume))
        assert status == 400
        resume["digest"] = d([3, 4])
        status, state = await call(played, "POST", "sessions", opening(epoch=2, resume=resume))
        assert status == 201 and state["committed"] == 2 and state["round"] == 1

    run(scenario())


def test_a_fenced_append_stops_the_session_and_a_zombie_goes_on() -> None:
    async def scenario() -> None:
        played, mlc, _ = verifier()
        await call(played, "POST", "sessions", opening())
        mlc.append(LOG, FenceRecord(2))
        assert not played.commit(SESSION, [1]).released
        status, _ = await call(played, "GET", f"sessions/{SID}/output?from=0")
        assert status == 409  # D-VER-7: fenced, no longer serving
        zombie, zmlc, _ = verifier()
        await call(zombie, "POST", "sessions", opening())
        zmlc.app.enforce_fences = False
        zmlc.append(LOG, FenceRecord(2))
        zombie.zombie = True
        assert zombie.commit(SESSION, [1]).released  # past the fence, and served at epoch 1

    run(scenario())


def test_put_drafter_records_the_state_it_answered_and_faults_answer_instead() -> None:
    async def scenario() -> None:
        played, _, history = verifier()
        await call(played, "POST", "sessions", opening())
        played.commit(SESSION, [8])
        body = {"session": SESSION, "epoch": 1, "contract": CONTRACT, "verifier": URI, "drafter": "https://d/",
                "prompt": [5, 9], "round": 0, "committed": 0, "digest": d([]), "m_init": 2}
        status, state = await call(played, "PUT", f"sessions/{SID}/drafter", body)
        assert status == 200 and state["round"] == 1
        [put] = history.of(PutSeen, SESSION)
        assert put.state is not None and put.state.round == 1 and played.latest_put(SESSION) is put
        played.fault = Fault.ERRORS
        status, _ = await call(played, "PUT", f"sessions/{SID}/drafter", body)
        assert status == 503
        status, _ = await call(played, "PUT", f"sessions/{SID}/drafter", body | {"epoch": 2})
        assert status == 503  # the fault answers first, whatever the request
        played.fault = Fault.NONE
        status, _ = await call(played, "PUT", f"sessions/{SID}/drafter", body | {"epoch": 2})
        assert status == 409

    run(scenario())
