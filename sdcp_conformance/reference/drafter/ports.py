"""What the reference drafter needs from the world, as narrow interfaces.

The drafter's loop is written against these, so tests drive it with in-memory
fakes and the stack plugs in the torch runtime, the MLC client and HTTP links
to the verifier and routers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from sdcp_conformance.protocol.errors import MalformedMessage
from sdcp_conformance.protocol.messages import Output, SessionState, Status, Verdict
from sdcp_conformance.protocol.problems import ProblemType
from sdcp_conformance.reference.model_identity import ModelIdentity

QRows = npt.NDArray[np.float32]
"""M x V binary32 draft rows (§5.2 q_rows)."""


class DraftModel(ModelIdentity, Protocol):
    """The draft model as the drafter uses it (P1-HASH-1, P1-HASH-2, P1-DRF-3)."""

    def draft(
        self,
        session_key: bytes,
        context: tuple[int, ...],
        m: int,
        sampling: Mapping[str, int] | None,
        rule: int,
        rng: np.random.Generator,
    ) -> tuple[tuple[int, ...], QRows | None]:
        """M tokens after ``context`` and, under rule 2, the M x V rows they were sampled from.

        Blocking: the app runs it off the event loop.
        """
        ...

    def forget(self, session_key: bytes) -> None:
        """Drop any state (KV cache) kept for a session."""
        ...


class CacheUnavailable(Exception):
    """An MLC object could not be written, read or deleted (transport error, 4xx/5xx, timeout)."""


class Cache(Protocol):
    """The MLC as the drafter uses it (P1-MLC-1..3)."""

    async def put(self, uri: str, body: bytes, lease_ms: int) -> None:
        """Store ``body`` holding a lease (``SDCP-Lease: <ms>``); raises :class:`CacheUnavailable`."""
        ...

    async def get(self, uri: str) -> bytes:
        """The object's bytes (token lists: ``prompt``, ``committed_tokens``); raises CacheUnavailable."""
        ...

    async def delete(self, uri: str) -> None:
        """Remove an object; raises :class:`CacheUnavailable`."""
        ...


@dataclass(frozen=True)
class Problem:
    """A final (4xx) answer: the SDCP problem type if any, the status, and P1-ERR-2's ``state``."""

    type: ProblemType | None
    status: int
    state: SessionState | None = None
    detail: str = ""


@dataclass(frozen=True)
class TransportFailure:
    """No usable answer: transport error, timeout, 5xx or 429 (P1-DRF-5), or an unreadable body."""

    detail: str
    status: int | None = None


ProposalResult = Verdict | Problem | TransportFailure
OutputResult = Output | Problem | TransportFailure


class VerifierLink(Protocol):
    """The drafter's calls to a verifier (Table 1). One attempt per call: the app retries."""

    async def post_proposal(self, verifier: str, body: bytes) -> ProposalResult:
        """POST ``{verifier}proposals`` with an encoded proposal."""
        ...

    async def get_output(self, verifier: str, session: bytes, start: int) -> OutputResult:
        """GET ``{verifier}sessions/{id}/output?from={start}``."""
        ...


class RouterLink(Protocol):
    """The drafter's calls to its routers (P1-RTR-1)."""

    async def put_status(self, router: str, instance_id: str, status: Status) -> None:
        """PUT ``{router}instances/{instance_id}/status``; raises on failure."""
        ...


def problem_from_members(status: int, problem_type: ProblemType | None, state: Mapping[str, Any] | None,
                         detail: str = "") -> Problem:
    """A :class:`Problem` from a decoded problem document; a malformed ``state`` becomes ``None``."""
    parsed: SessionState | None = None
    if state is not None:
        try:
            parsed = SessionState.from_obj(state)
        except MalformedMessage:  # D-DRF-14: a stale-base without a usable state stops the drafter
            parsed = None
    return Problem(problem_type, status, parsed, detail)


__all__ = [
    "Cache",
    "CacheUnavailable",
    "DraftModel",
    "OutputResult",
    "Problem",
    "ProposalResult",
    "QRows",
    "RouterLink",
    "TransportFailure",
    "VerifierLink",
    "problem_from_members",
]
