"""What the router's history checker reports: a :class:`Violation` naming the row it breaks, and the checks of a
message's encoding every check of a router's messages shares (:mod:`.router_checks`, :mod:`.router_assignment_checks`).
"""

from __future__ import annotations

from dataclasses import dataclass

from sdcp_conformance.harness.roles.played_session import Observation
from sdcp_conformance.protocol.problems import SDCP_MEDIA_TYPE

CBOR = SDCP_MEDIA_TYPE


@dataclass(frozen=True)
class Violation(Observation):
    """An observation of the router's history that breaks ``row``, placed on the timeline."""

    seq: int = 0
    """Where on the timeline it shows (the observation's sequence number)."""


def short(data: bytes) -> str:
    return data.hex()[:16] + "…"


def encoding_violations(where: str, media_type: str, deterministic: bool, seq: int) -> list[Violation]:
    """A message the router sent is labelled ``application/sdcp+cbor`` (§5.1) and in core deterministic encoding
    (P1-MSG-1)."""
    found = []
    if media_type != CBOR:
        found.append(Violation("R-5.1-MEDIA-TYPE", f"{where} is labelled {media_type!r}", CBOR, media_type, seq))
    if not deterministic:
        found.append(Violation("P1-MSG-1/DETERMINISTIC", f"{where} is not in core deterministic encoding",
                               "RFC 8949 §4.2.1", "another encoding", seq))
    return found


__all__ = ["CBOR", "Violation", "encoding_violations", "short"]
