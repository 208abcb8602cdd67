"""The SDCP protocol core: pure functions and small state machines, no I/O.

Nothing here reads a socket, a clock or a random source by itself; randomness
is passed in (see :mod:`.rng`).
"""

from sdcp_conformance.protocol.chain import contract_digest, extend_digest, prefix_digest
from sdcp_conformance.protocol.codec import decode, encode
from sdcp_conformance.protocol.rng import verify_uniform

__all__ = [
    "contract_digest",
    "decode",
    "encode",
    "extend_digest",
    "prefix_digest",
    "verify_uniform",
]
