"""What the reference router needs from the world, as narrow interfaces.

The router's logic is written against these, so tests drive it with
in-memory fakes and the stack plugs in HTTP links and the MLC client
(:mod:`.links`). A link answers a session-state or a :class:`Refused`, or
raises :class:`LinkFailure` when no answer came (transport error, timeout).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from sdcp_conformance.errors import SdcpConformanceError
from sdcp_conformance.protocol.messages import Assignment, Output, Policy, SessionOpen, SessionState
from sdcp_conformance.protocol.problems import ProblemType


@dataclass(frozen=True)
class Refused:
    """A non-2xx answer: its status, SDCP problem type (if any) and ``state`` (P1-ERR-2)."""

    status: int
    problem: ProblemType | None = None
    detail: str = ""
    state: SessionState | None = None

    @property
    def resource_failure(self) -> bool:
        """P1-RTR-5: 404 and 5xx count as a failed resource; other refusals do not."""
        return self.status == 404 or self.status >= 500


Answer = SessionState | Refused


class LinkFailure(SdcpConformanceError):
    """No answer came back: transport error, reset, timeout."""


class CacheUnavailable(SdcpConformanceError):
    """An MLC object could not be read or written (transport error, unexpected status, timeout)."""


class VerifierLink(Protocol):
    """The router's calls to verifiers (Table 1). ``verifier`` is the verifier's base URI."""

    async def open_session(self, verifier: str, opening: SessionOpen) -> Answer:
        """POST sessions."""
        ...

    async def put_drafter(self, verifier: str, assignment: Assignment) -> Answer:
        """PUT sessions/{id}/drafter."""
        ...

    async def post_policy(self, verifier: str, policy: Policy) -> Answer:
        """POST sessions/{id}/policy."""
        ...

    async def get_output(self, verifier: str, session: bytes, start: int, timeout_s: float) -> Output | Refused:
        """GET sessions/{id}/output?from=start (§6.7), a long poll bounded by ``timeout_s``.

        Used by the router's test front (P1-FRONT-2); raises :class:`LinkFailure` when no answer came.
        """
        ...


class DrafterLink(Protocol):
    """The router's one call to drafters (Table 1: POST assignments → 204)."""

    async def post_assignment(self, drafter: str, assignment: Assignment) -> Refused | None:
        """``None`` on 2xx; raises :class:`LinkFailure` when no answer came."""
        ...


class RouterCache(Protocol):
    """The MLC as the router uses it (P1-MLC-1/2, P1-LOG-1/3); failures raise :class:`CacheUnavailable`."""

    async def get_tokens(self, uri: str) -> list[int]:
        """A token-list object (P1-MLC-2: "a CBOR array of uint")."""
        ...

    async def put_tokens(self, uri: str, tokens: Sequence[int]) -> None:
        """Store a token-list object (``committed_tokens``)."""
        ...

    async def read_log(self, uri: str) -> bytes:
        """The commit log's bytes, a CBOR sequence (P1-LOG-1); ``b""`` when it does not exist yet."""
        ...

    async def append_fence(self, uri: str, epoch: int) -> bool:
        """Conditionally append the fence record ``{epoch}`` (§6.8, §6.9).

        ``False`` when a fence with a higher epoch is already in the log.
        """
        ...


__all__ = [
    "Answer",
    "CacheUnavailable",
    "DrafterLink",
    "LinkFailure",
    "Refused",
    "RouterCache",
    "VerifierLink",
]
