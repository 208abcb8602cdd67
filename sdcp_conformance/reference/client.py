"""A front end for the reference stack: start a session at the router and read its output (§6.7).

Output is read from the session's verifier with ``GET output?from=n``; indices
are stable, so a reader that retries never duplicates or loses tokens, and
output carrying a lower epoch than one already seen is discarded (§6.7).
When the verifier fails, the reader asks the router for the session's current
verifier and continues at the same index (§6.9).
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sdcp_conformance.errors import SdcpConformanceError
from sdcp_conformance.protocol.codec import decode
from sdcp_conformance.protocol.control import Action
from sdcp_conformance.protocol.messages import Output
from sdcp_conformance.reference.frontend import CLIENT_PREFIX
from sdcp_conformance.reference.verifier.service import PartyTls
from sdcp_conformance.transport.client import SdcpClient, Timeouts, TransportFailure

OUTPUT_READ_TIMEOUT_S = 35.0
"""P1-OUT-1: the harness allows 30 s for a long poll; the read timeout covers it."""


@dataclass
class Generation:
    session: bytes
    tokens: list[int] = field(default_factory=list)
    finish: Action | None = None
    epochs: list[int] = field(default_factory=list)
    verifiers: list[str] = field(default_factory=list)


class GenerationFailed(SdcpConformanceError):
    """The session could not be started or its output could not be read to the end."""


class StackClient:
    """Talks to a reference router's ``client/`` front and to verifiers, as the ``client`` party."""

    def __init__(self, router_uri: str, tls: PartyTls, *, deadline_s: float = 600.0) -> None:
        self._tls = tls
        self._router = self._client(router_uri)
        self._verifiers: dict[str, SdcpClient] = {}
        self._deadline_s = deadline_s
        self._pause = 0.2

    def _client(self, base_uri: str) -> SdcpClient:
        timeouts = Timeouts(read=OUTPUT_READ_TIMEOUT_S, total=OUTPUT_READ_TIMEOUT_S + 10)
        return SdcpClient(base_uri, self._tls.cert, self._tls.key, self._tls.ca, timeouts=timeouts, max_attempts=1)

    async def aclose(self) -> None:
        await self._router.aclose()
        for client in self._verifiers.values():
            await client.aclose()

    async def start(
        self, contract: Mapping[str, Any], prompt: Sequence[int], session: bytes | None = None
    ) -> tuple[bytes, str, int]:
        body: dict[str, Any] = {"contract": dict(contract), "prompt": list(prompt)}
        if session is not None:
            body["session"] = session
        answer = await self._router.send_message("POST", CLIENT_PREFIX, body)
        if answer.status != 201:
            raise GenerationFailed(f"the router refused the session: {answer.status} {answer.body[:300]!r}")
        opened = decode(answer.body)
        return opened["session"], opened["verifier"], opened["epoch"]

    async def where(self, session: bytes) -> tuple[str, int, str]:
        answer = await self._router.request("GET", f"{CLIENT_PREFIX}/{_b64(session)}")
        if answer.status != 200:
            raise GenerationFailed(f"the router does not know the session: {answer.status}")
        body = decode(answer.body)
        return body["verifier"], body["epoch"], body["phase"]

    async def generate(
        self,
        contract: Mapping[str, Any],
        prompt: Sequence[int],
        on_tokens: Callable[[list[int]], None] | None = None,
        *,
        session: bytes | None = None,
    ) -> Generation:
        """Open a session and read its output to the final message; ``session`` fixes its id."""
        session, verifier, epoch = await self.start(contract, prompt, session)
        result = Generation(session, verifiers=[verifier])
        seen_epoch = epoch
        async with asyncio.timeout(self._deadline_s):
            while result.finish is None:
                output = await self._read(session, verifier, len(result.tokens))
                if output is None or output.epoch < seen_epoch:
                    # §6.7: "a front end that receives output with a lower epoch than one it has seen discards it".
                    verifier, seen_epoch = await self._follow(session, verifier, seen_epoch, result)
                    continue
                seen_epoch = output.epoch
                fresh = list(output.tokens)
                if output.from_ != len(result.tokens):
                    raise GenerationFailed(f"asked from {len(result.tokens)}, got from {output.from_}")
                result.tokens.extend(fresh)
                result.epochs.extend([output.epoch] * len(fresh))
                if fresh and on_tokens is not None:
                    on_tokens(fresh)
                if output.final:
                    result.finish = output.finish or Action.FAIL
        return result

    async def _read(self, session: bytes, verifier: str, start: int) -> Output | None:
        if not verifier:
            return None
        client = self._verifiers.setdefault(verifier, self._client(verifier))
        try:
            answer = await client.request("GET", f"sessions/{_b64(session)}/output?from={start}")
        except TransportFailure:
            return None
        if answer.status != 200:
            return None
        return Output.from_cbor(answer.body)

    async def _follow(self, session: bytes, verifier: str, epoch: int, result: Generation) -> tuple[str, int]:
        """Ask the router which verifier serves the session now (§6.9), pausing between reads."""
        current, current_epoch, phase = await self.where(session)
        if current and (current != verifier or current_epoch > epoch):
            result.verifiers.append(current)
            return current, current_epoch
        if phase == "failed" and not current:
            raise GenerationFailed("the session failed and no verifier serves it")
        # The same verifier (it may be failing over) or none yet: read again after a pause.
        await asyncio.sleep(self._pause)
        return current or verifier, max(epoch, current_epoch)


def _b64(session: bytes) -> str:
    return base64.urlsafe_b64encode(session).rstrip(b"=").decode()


__all__ = ["Generation", "GenerationFailed", "StackClient"]
