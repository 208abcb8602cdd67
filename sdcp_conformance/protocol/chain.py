"""The committed-prefix digest chain of draft §4.2 and the contract digest of §4.1."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.protocol.codec import encode

CONTRACT_DOMAIN = b"SDCP-CONTRACT-1\x00"
PREFIX_DOMAIN = b"SDCP-PREFIX-1\x00"
_UINT32_LIMIT = 1 << 32


def uint32(value: int) -> bytes:
    """§4.2: "uint32() is four octets in network byte order"."""
    if not 0 <= value < _UINT32_LIMIT:
        raise InvalidArgument(f"{value} does not fit uint32")
    return value.to_bytes(4, "big")


def contract_digest(contract: Mapping[str, Any]) -> bytes:
    """§4.1: SHA-256("SDCP-CONTRACT-1" || 0x00 || deterministic_cbor(contract)).

    The contract is a plain dict with the CDDL member names (bytes for bstr).
    It is not validated here: see :func:`sdcp_conformance.protocol.contract.validate_contract`.
    """
    return hashlib.sha256(CONTRACT_DOMAIN + encode(contract)).digest()


def prefix_digest(contract_digest: bytes, prompt: Iterable[int]) -> bytes:
    """§4.2: d[0] = SHA-256("SDCP-PREFIX-1" || 0x00 || contract_digest || uint32(P) || t[0..P-1])."""
    if len(contract_digest) != 32:
        raise InvalidArgument("contract_digest must be 32 octets")
    tokens = list(prompt)
    body = b"".join(uint32(token) for token in tokens)
    return hashlib.sha256(PREFIX_DOMAIN + contract_digest + uint32(len(tokens)) + body).digest()


def extend_digest(digest: bytes, tokens: Iterable[int]) -> bytes:
    """§4.2: d[k] = SHA-256(d[k-1] || uint32(o[k])), applied once per token."""
    if len(digest) != 32:
        raise InvalidArgument("digest must be 32 octets")
    for token in tokens:
        digest = hashlib.sha256(digest + uint32(token)).digest()
    return digest


def digest_chain(contract_digest: bytes, prompt: Iterable[int], output: Iterable[int]) -> list[bytes]:
    """d[0..n] for a prompt and committed output: index k holds d[k]."""
    chain = [prefix_digest(contract_digest, prompt)]
    for token in output:
        chain.append(extend_digest(chain[-1], [token]))
    return chain


__all__ = [
    "CONTRACT_DOMAIN",
    "PREFIX_DOMAIN",
    "contract_digest",
    "digest_chain",
    "extend_digest",
    "prefix_digest",
    "uint32",
]
