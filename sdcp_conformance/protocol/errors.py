"""The exceptions of protocol violations: a message or an action against the draft or the profile, with the
problem type it is answered with (P1-ERR-1)."""

from __future__ import annotations

from typing import Any

from sdcp_conformance.errors import SdcpConformanceError
from sdcp_conformance.protocol.problems import ProblemType


class ProtocolError(SdcpConformanceError):
    """A message or action violates the draft or the profile.

    ``problem`` names the problem type; ``state`` optionally carries the
    session-state member that P1-ERR-2 requires on ``sdcp-stale-base``.
    """

    def __init__(
        self,
        problem: ProblemType,
        detail: str,
        *,
        state: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(f"{problem.suffix}: {detail}")
        self.problem = problem
        self.detail = detail
        self.state = state

    @property
    def status(self) -> int:
        return self.problem.status


class MalformedMessage(ProtocolError):
    """Bytes that are not one well-formed, bounded CBOR item, or a message of the wrong shape.

    Maps to ``sdcp-bad-message`` (400) by default; a malformed *contract* maps
    to ``sdcp-bad-contract`` (422) as P1-MSG-2 requires.
    """

    def __init__(self, detail: str, *, problem: ProblemType | None = None) -> None:
        super().__init__(problem or ProblemType.BAD_MESSAGE, detail)


__all__ = ["MalformedMessage", "ProtocolError"]
