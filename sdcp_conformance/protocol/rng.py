"""The verifier's uniform random values of draft §6.4 and profile P1-SAMP-3.

"When the sampling profile contains a seed, the verifier derives each value
from HMAC-SHA-256 keyed with the seed (as eight octets in network byte order)
over "SDCP-VERIFY-1" || 0x00 || session || uint32(round) || uint32(i) ||
uint8(purpose), ... taking the first 53 bits of the result divided by 2^53."
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Protocol

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.protocol.chain import uint32

VERIFY_DOMAIN = b"SDCP-VERIFY-1\x00"
PURPOSE_ACCEPT = 0
"""Purpose 0: the acceptance test of position i (i = 1..M)."""
PURPOSE_DRAW = 1
"""Purpose 1: drawing the additional token (i = a + 1; P1-SAMP-3)."""


def verify_uniform(seed: int, session: bytes, round: int, i: int, purpose: int) -> float:
    """The seeded uniform in [0, 1) for (session, round, position i, purpose)."""
    if not 0 <= seed < 1 << 64:
        raise InvalidArgument("seed must fit eight octets")
    if purpose not in (PURPOSE_ACCEPT, PURPOSE_DRAW):
        raise InvalidArgument(f"purpose must be 0 or 1, not {purpose}")
    message = VERIFY_DOMAIN + bytes(session) + uint32(round) + uint32(i) + bytes([purpose])
    mac = hmac.new(seed.to_bytes(8, "big"), message, hashlib.sha256).digest()
    return (int.from_bytes(mac[:8], "big") >> 11) / (1 << 53)


class UniformSource(Protocol):
    """Where an acceptance rule gets the uniform for position ``i`` and ``purpose``."""

    def uniform(self, i: int, purpose: int) -> float: ...


@dataclass(frozen=True)
class SeededUniforms:
    """§6.4's HMAC derivation for one round of one session."""

    seed: int
    session: bytes
    round: int

    def uniform(self, i: int, purpose: int) -> float:
        return verify_uniform(self.seed, self.session, self.round, i, purpose)


class SystemUniforms:
    """§6.4: "Without a seed, the verifier uses a cryptographically secure random number generator"."""

    def uniform(self, i: int, purpose: int) -> float:
        return secrets.randbits(53) / (1 << 53)


__all__ = [
    "PURPOSE_ACCEPT",
    "PURPOSE_DRAW",
    "VERIFY_DOMAIN",
    "SeededUniforms",
    "SystemUniforms",
    "UniformSource",
    "verify_uniform",
]
