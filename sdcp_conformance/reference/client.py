"""A client of the reference stack: start a session at a router and read its output through the router's front.

It speaks only the router's test front (PROFILE.md "Test front of a router"):
``POST client/sessions`` starts a session (P1-FRONT-1), ``GET
client/sessions/{id}/output?from=n`` reads its output with the router acting
as the front end of §6.7 across failovers (P1-FRONT-2), ``GET
client/sessions/{id}`` says which verifier serves it, and ``POST
client/sessions/{id}/policy`` changes its sampling profile (P1-FRONT-3).
Indices are stable, so reading on from the number of tokens received never
duplicates or loses any; an output with a lower epoch than one already seen
is discarded (§6.7) should a router ever pass one on.
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
from sdcp_conformance.protocol.errors import MalformedMessage
from sdcp_conformance.protocol.messages import Output, Sampling
from sdcp_conformance.reference.frontend import CLIENT_PREFIX
from sdcp_conformance.reference.verifier.service import PartyTls
from sdcp_conformance.transport.client import SdcpClient, Timeouts, TransportFailure

OUTPUT_READ_TIMEOUT_S = 35.0
"""P1-OUT-1: a front read waits up to 30 s; the read timeout covers it."""
RETRY_PAUSE_S = 0.2
"""Pause after a failed front read (the router restarting, say) before reading again."""


@dataclass
class Generation:
    session: bytes
    tokens: list[int] = field(default_factory=list)
    finish: Action | None = None
    epochs: list[int] = field(default_factory=list)
    """The epoch of the output message each token came in."""
    verifiers: list[str] = field(default_factory=list)
    """The verifiers that served the session, as the front named them when the epoch changed."""


class GenerationFailed(SdcpConformanceError):
    """The session could not be started or its output could not be read to the end."""


class StackClient:
    """Talks to a router's test front, as the ``client`` party."""

    def __init__(self, router_uri: str, tls: PartyTls, *, deadline_s: float = 600.0) -> None:
        timeouts = Timeouts(read=OUTPUT_READ_TIMEOUT_S, total=OUTPUT_READ_TIMEOUT_S + 10)
        self._router = SdcpClient(router_uri, tls.cert, tls.key, tls.ca, timeouts=timeouts, max_attempts=1)
        self._deadline_s = deadline_s

    async def aclose(self) -> None:
        await self._router.aclose()

    async def start(
        self, contract: Mapping[str, Any], prompt: Sequence[int] | str, session: bytes | None = None
    ) -> tuple[bytes, str, int]:
        """P1-FRONT-1: (session, verifier, epoch) of the opened session."""
        sent = prompt if isinstance(prompt, str) else list(prompt)
        body: dict[str, Any] = {"contract": dict(contract), "prompt": sent}
        if session is not None:
            body["session"] = session
        answer = await self._router.send_message("POST", CLIENT_PREFIX, body)
        if answer.status != 201:
            raise GenerationFailed(f"the router refused the session: {answer.status} {answer.body[:300]!r}")
        opened = decode(answer.body)
        return opened["session"], opened["verifier"], opened["epoch"]

    async def where(self, session: bytes) -> tuple[str, int, str]:
        """P1-FRONT-2: (verifier, epoch, phase) of the session."""
        answer = await self._router.request("GET", f"{CLIENT_PREFIX}/{_b64(session)}")
        if answer.status != 200:
            raise GenerationFailed(f"the router does not know the session: {answer.status}")
        body = decode(answer.body)
        return body["verifier"], body["epoch"], body["phase"]

    async def policy(self, session: bytes, sampling: Sampling) -> int:
        """P1-FRONT-3: the ``from_round`` of the accepted policy."""
        answer = await self._router.send_message("POST", f"{CLIENT_PREFIX}/{_b64(session)}/policy",
                                                 {"sampling": sampling.to_obj()})
        if answer.status != 200:
            raise GenerationFailed(f"the router did not apply the policy: {answer.status} {answer.body[:300]!r}")
        from_round: int = decode(answer.body)["from_round"]
        return from_round

    async def read(self, session: bytes, start: int) -> Output | None:
        """One front read from ``start``; ``None`` when it failed (no answer, a refusal, a malformed body)."""
        try:
            answer = await self._router.request("GET", f"{CLIENT_PREFIX}/{_b64(session)}/output?from={start}")
        except TransportFailure:
            return None
        if answer.status != 200:
            return None
        try:
            return Output.from_cbor(answer.body)
        except MalformedMessage:
            return None

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
                output = await self.read(session, len(result.tokens))
                if output is None:
                    await asyncio.sleep(RETRY_PAUSE_S)
                    continue
                if output.epoch < seen_epoch:
                    continue  # §6.7: "a front end that receives output with a lower epoch ... discards it"
                if output.from_ != len(result.tokens):
                    raise GenerationFailed(f"asked from {len(result.tokens)}, got from {output.from_}")
                if output.epoch > seen_epoch:
                    seen_epoch = output.epoch
                    current, _, _ = await self.where(session)
                    if current and current != result.verifiers[-1]:
                        result.verifiers.append(current)
                fresh = list(output.tokens)
                result.tokens.extend(fresh)
                result.epochs.extend([output.epoch] * len(fresh))
                if fresh and on_tokens is not None:
                    on_tokens(fresh)
                if output.final:
                    result.finish = output.finish or Action.FAIL
        return result


def _b64(session: bytes) -> str:
    return base64.urlsafe_b64encode(session).rstrip(b"=").decode()


__all__ = ["Generation", "GenerationFailed", "StackClient"]
