"""The client of a router's test front (PROFILE.md "Test front of a router", P1-FRONT-1..3).

SDCP defines no client API (§1.4); the profile's front is how the harness
starts sessions at a router under test, reads their output with the router
as the front end of §6.7, and states a user's sampling preference (§6.6). The
client presents the ``client`` certificate ("any certificate of the CA is a
client"), and every output it reads lands in the history, where the checker
holds it against the commit records the harness's verifiers wrote.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from sdcp_conformance.harness.iut import Answer
from sdcp_conformance.harness.roles.router_history import FrontSeen, History
from sdcp_conformance.protocol.errors import MalformedMessage
from sdcp_conformance.protocol.messages import Output

FRONT = "client/sessions"
CLIENT_IDENTITY = "client"

Send = Callable[..., Awaitable[Answer]]
"""``IutLink.send``: ``send(identity, method, path, body)``."""


def b64(session: bytes) -> str:
    return base64.urlsafe_b64encode(session).rstrip(b"=").decode()


class FrontClient:
    """P1-FRONT-1..3 towards the router under test."""

    def __init__(self, send: Send, history: History) -> None:
        self._send = send
        self.history = history

    async def open(self, contract: dict[str, Any], prompt: Sequence[int] | str, session: bytes | None = None, *,
                   body: dict[str, Any] | bytes | None = None) -> Answer:
        """P1-FRONT-1: ``POST client/sessions``."""
        if body is None:
            body = {"contract": contract, "prompt": prompt if isinstance(prompt, str) else list(prompt)}
            if session is not None:
                body["session"] = session
        answer: Answer = await self._send(CLIENT_IDENTITY, "POST", FRONT, body)
        return answer

    async def describe(self, session: bytes) -> Answer:
        """P1-FRONT-2: ``GET client/sessions/{id}``."""
        answer: Answer = await self._send(CLIENT_IDENTITY, "GET", f"{FRONT}/{b64(session)}")
        return answer

    async def policy(self, session: bytes, sampling: dict[str, int]) -> Answer:
        """P1-FRONT-3: ``POST client/sessions/{id}/policy``."""
        answer: Answer = await self._send(CLIENT_IDENTITY, "POST", f"{FRONT}/{b64(session)}/policy",
                                          {"sampling": sampling})
        return answer

    async def output(self, session: bytes, start: int) -> tuple[Answer, Output | None]:
        """P1-FRONT-2: one ``GET client/sessions/{id}/output?from=n``; the output when it is one."""
        asked = self.history.mark()
        answer: Answer = await self._send(CLIENT_IDENTITY, "GET", f"{FRONT}/{b64(session)}/output?from={start}")
        output = None
        if answer.ok:
            try:
                output = answer.message(Output)
            except MalformedMessage:
                output = None
        self.history.add(FrontSeen(at=asyncio.get_running_loop().time(), session_id=session, asked=asked, start=start,
                                   status=answer.status, output=output, described=answer.describe()))
        return answer, output

    async def read(self, session: bytes, *, until: Callable[[list[int], Output | None], bool],
                   timeout_s: float, start: int = 0) -> tuple[list[int], Output | None]:
        """Read on from ``start`` as a front end does (from the number of tokens received) until ``until``
        holds or ``timeout_s`` passes; returns the tokens and the last output."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        tokens: list[int] = []
        last: Output | None = None
        while not until(tokens, last) and loop.time() < deadline:
            answer, output = await self.output(session, start + len(tokens))
            if output is None:
                if not answer.ok and answer.status is not None and answer.status < 500:
                    break  # refused: reading on would not change that
                await asyncio.sleep(0.05)  # a failed read: a brief pause before the next, as a client would
                continue
            last = output
            if output.from_ == start + len(tokens):
                tokens.extend(output.tokens)
            if output.final:
                break
        return tokens, last


__all__ = ["CLIENT_IDENTITY", "FRONT", "FrontClient", "b64"]
