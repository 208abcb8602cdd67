"""The draft's digests computed with hashlib directly, apart from the protocol core, for the drafter's tests."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from sdcp_conformance.protocol.codec import encode


def sha(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def prefix_digest(contract_obj: dict[str, Any], prompt: Sequence[int]) -> bytes:
    """d[0]: the contract's digest, the prompt's length and its tokens (4 bytes each, big-endian)."""
    contract_digest = sha(b"SDCP-CONTRACT-1\x00" + encode(contract_obj))
    body = b"".join(t.to_bytes(4, "big") for t in prompt)
    return sha(b"SDCP-PREFIX-1\x00" + contract_digest + len(prompt).to_bytes(4, "big") + body)


def chain(digest: bytes, tokens: Sequence[int]) -> bytes:
    for token in tokens:
        digest = sha(digest + token.to_bytes(4, "big"))
    return digest
