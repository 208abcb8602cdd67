"""The package's one error tree.

Three kinds of failure are kept apart, as h11 and Hypothesis do:

* :class:`ProtocolError` — a party broke SDCP. It carries the problem type
  (Table 2 of the draft, plus the profile's ``sdcp-bad-message``) and the HTTP
  status, so the layer that answers a request translates it once, at the
  boundary. Against an implementation under test it becomes a verdict, never a
  crash.
* :class:`InvalidArgument` — the harness or the library was misused by its
  caller (a bad option, an impossible configuration).
* Everything else escaping a case is a bug in this package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sdcp_conformance.protocol.problems import ProblemType


class SdcpConformanceError(Exception):
    """Root of every exception this package raises on purpose."""


class InvalidArgument(SdcpConformanceError, ValueError):
    """The caller passed something this package cannot work with."""


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
        from sdcp_conformance.protocol.problems import ProblemType

        super().__init__(problem or ProblemType.BAD_MESSAGE, detail)


__all__ = ["InvalidArgument", "MalformedMessage", "ProtocolError", "SdcpConformanceError"]
