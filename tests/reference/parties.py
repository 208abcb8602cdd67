"""The parties, the session and the digests the reference roles' tests name.

Every URI names port 1 of the loopback address, where nothing listens: the in-memory tests never dial them.
"""

from __future__ import annotations

import base64


def party(name: str) -> str:
    """The base URI of the party called ``name``."""
    return f"https://127.0.0.1:1/{name}/"


def b64url(raw: bytes) -> str:
    """Unpadded base64url, as a session id or an instance id stands in a path."""
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


SESSION = bytes(range(16))
SESSION_ID = b64url(SESSION)
TOKENIZER = bytes([2]) * 32

# The router's drafters, verifiers and draft models.
DA, DB, DC = party("drafter-a"), party("drafter-b"), party("drafter-c")
V1, V2 = party("verifier-1"), party("verifier-2")
MODEL_1 = bytes([0x11]) * 32
MODEL_2 = bytes([0x22]) * 32
