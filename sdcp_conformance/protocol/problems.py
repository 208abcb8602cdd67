"""Problem types of SDCP (draft Table 2) and of the interop profile (P1-ERR-1, P1-MSG-2)."""

from __future__ import annotations

import enum

PROBLEM_URN_PREFIX = "urn:ietf:params:sdcp:problem:"
"""P1-ERR-1: ``type`` is this prefix followed by the suffix of Table 2."""

PROBLEM_MEDIA_TYPE = "application/problem+json"
PROBLEM_CBOR_MEDIA_TYPE = "application/problem+cbor"
SDCP_MEDIA_TYPE = "application/sdcp+cbor"


class ProblemType(enum.Enum):
    """Each member's value is ``(suffix, HTTP status)``."""

    STALE_EPOCH = ("sdcp-stale-epoch", 409)
    STALE_BASE = ("sdcp-stale-base", 409)
    Q_UNAVAILABLE = ("sdcp-q-unavailable", 409)
    BAD_CONTRACT = ("sdcp-bad-contract", 422)
    LIMIT = ("sdcp-limit", 422)
    SESSION_CLOSED = ("sdcp-session-closed", 410)
    BAD_PROPOSAL = ("sdcp-bad-proposal", 422)
    NOT_ASSIGNED = ("sdcp-not-assigned", 403)
    # Profile-only (P1-MSG-2): malformed CBOR, wrong types, missing members.
    BAD_MESSAGE = ("sdcp-bad-message", 400)

    @property
    def suffix(self) -> str:
        return self.value[0]

    @property
    def status(self) -> int:
        return self.value[1]

    @property
    def uri(self) -> str:
        return PROBLEM_URN_PREFIX + self.suffix

    @property
    def profile_only(self) -> bool:
        """True for types the draft does not define (judged NON-STRICT, not FAILED)."""
        return self is ProblemType.BAD_MESSAGE

    @classmethod
    def from_type_uri(cls, type_uri: str) -> ProblemType | None:
        """Match a problem ``type`` by its suffix after the last ``:`` or ``/`` (P1-ERR-1)."""
        suffix = type_uri.rsplit("/", 1)[-1].rsplit(":", 1)[-1]
        for member in cls:
            if member.suffix == suffix:
                return member
        return None


__all__ = [
    "PROBLEM_CBOR_MEDIA_TYPE",
    "PROBLEM_MEDIA_TYPE",
    "PROBLEM_URN_PREFIX",
    "SDCP_MEDIA_TYPE",
    "ProblemType",
]
