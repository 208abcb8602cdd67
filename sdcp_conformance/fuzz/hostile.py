"""Hostile encodings of SDCP messages: the byte-level half of the message fuzzer.

Every function takes a valid message (a dict in the CBOR data model) and
returns bytes that break it in one named way — a member replaced by raw
bytes (deep nesting, a huge declared length, a tag), a duplicated key,
truncation, trailing bytes — so the expected answer class is known.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sdcp_conformance.protocol.codec import encode

Path = Sequence[str]


def encode_patched(obj: Mapping[str, Any], path: Path, raw: bytes | None) -> bytes:
    """Deterministic encoding of ``obj`` with the member at ``path`` replaced by ``raw`` (None: left out)."""
    pairs: list[tuple[bytes, bytes]] = []
    for key, value in obj.items():
        if path and key == path[0]:
            if len(path) == 1:
                if raw is None:
                    continue
                pairs.append((encode(key), raw))
            else:
                pairs.append((encode(key), encode_patched(value, path[1:], raw)))
        else:
            pairs.append((encode(key), encode(value)))
    pairs.sort()
    return _map_head(len(pairs)) + b"".join(key + value for key, value in pairs)


def _map_head(count: int) -> bytes:
    return bytes([0xA0 | count]) if count < 24 else bytes([0xB8, count])


def duplicate_key(obj: Mapping[str, Any], key: str, value: Any) -> bytes:
    """The map with ``key`` appearing twice (P1-MSG-2: "Duplicate map keys are malformed")."""
    body = encode(obj)
    count = len(obj)
    if count >= 23:
        raise ValueError("duplicate_key handles maps of fewer than 23 members")
    return _map_head(count + 1) + body[1:] + encode(key) + encode(value)


def deep_array(depth: int) -> bytes:
    return b"\x81" * depth + b"\x00"


def deep_map(depth: int) -> bytes:
    return b"\xa1\x61a" * depth + b"\x00"


def huge_bstr(declared: int) -> bytes:
    """A byte string head declaring ``declared`` octets, followed by three."""
    return b"\x5b" + declared.to_bytes(8, "big") + b"abc"


def huge_array(declared: int) -> bytes:
    return b"\x9b" + declared.to_bytes(8, "big") + b"\x00"


def tagged(tag: int, value: Any) -> bytes:
    """``value`` wrapped in a CBOR tag (SDCP's CDDL uses none)."""
    if tag < 24:
        head = bytes([0xC0 | tag])
    elif tag < 256:
        head = bytes([0xD8, tag])
    else:
        head = b"\xd9" + tag.to_bytes(2, "big")
    return head + encode(value)


RAW_MUTATIONS = ("deep_array", "deep_map", "huge_bstr", "huge_array", "tag")


def raw_member(kind: str, variant: int, original: Any) -> bytes:
    """Raw bytes that replace a member for one of :data:`RAW_MUTATIONS`."""
    if kind == "deep_array":
        return deep_array(33 + variant % 2000)
    if kind == "deep_map":
        return deep_map(33 + variant % 500)
    if kind == "huge_bstr":
        return huge_bstr((1 << 24) + variant if variant % 2 else (1 << 63) + variant)
    if kind == "huge_array":
        return huge_array((1 << 32) + variant)
    tags = (0, 1, 2, 24, 28, 55799)
    return tagged(tags[variant % len(tags)], original)


def truncated(body: bytes, variant: int) -> bytes:
    return body[: variant % len(body)] if body else body


def trailing(body: bytes, variant: int) -> bytes:
    extras = (b"\x00", b"\xff", b"\xa0", encode({"x": 1}), bytes(range(variant % 50)))
    return body + (extras[variant % len(extras)] or b"\x00")


__all__ = [
    "RAW_MUTATIONS",
    "deep_array",
    "deep_map",
    "duplicate_key",
    "encode_patched",
    "huge_array",
    "huge_bstr",
    "raw_member",
    "tagged",
    "trailing",
    "truncated",
]
