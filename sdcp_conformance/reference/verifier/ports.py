"""What the reference verifier needs from the world, as narrow interfaces.

The verifier's HTTP layer is written against these, so tests can drive it
with in-memory fakes and the stack plugs in the torch runtime, the MLC client
and the router link.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from sdcp_conformance.protocol.messages import Event
from sdcp_conformance.reference.model_identity import ModelIdentity


@dataclass(frozen=True)
class ScoreItem:
    """Score ``proposed`` after ``context`` (prompt + committed output) for one session.

    The answer has ``len(proposed) + 1`` logits rows: after the last context
    token and after each proposed token (the draft's p[1..M+1]).
    """

    session: bytes
    context: tuple[int, ...]
    proposed: tuple[int, ...]


class TargetModel(ModelIdentity, Protocol):
    """The target model as the verifier uses it (P1-HASH-1, P1-HASH-2)."""

    def score(self, items: Sequence[ScoreItem]) -> list[npt.NDArray[np.float64]]:
        """One batched forward pass over every item; blocking (run off the event loop)."""
        ...

    def forget(self, session: bytes) -> None:
        """Drop any state kept for a session."""
        ...


class AppendOutcome(enum.Enum):
    APPENDED = "appended"
    FENCED = "fenced"
    """A fence with a higher epoch precedes the record: stop serving (§6.8)."""
    FAILED = "failed"
    """The log could not be appended to for another reason (unreachable, conflicts)."""


class CacheUnavailable(Exception):
    """An MLC object could not be read (transport error, 404, 5xx, timeout)."""


class Cache(Protocol):
    """The MLC as the verifier uses it (P1-MLC-1, P1-LOG-1)."""

    async def get(self, uri: str) -> bytes:
        """The object's bytes; raises :class:`CacheUnavailable`."""
        ...

    async def append_record(self, log_uri: str, record: Mapping[str, Any], epoch: int) -> AppendOutcome:
        """Conditionally append one commit record and check it is not fenced (§6.8)."""
        ...


class RouterLink(Protocol):
    """The verifier's calls to its router (P1-TLS-2)."""

    async def post_event(self, event: Event) -> None: ...

    async def put_status(self, status: Mapping[str, Any]) -> None: ...


__all__ = [
    "AppendOutcome",
    "Cache",
    "CacheUnavailable",
    "RouterLink",
    "ScoreItem",
    "TargetModel",
]
