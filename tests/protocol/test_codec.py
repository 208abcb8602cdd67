"""The CBOR codec: RFC 8949 vectors, determinism, and bounded decoding of hostile input."""

from __future__ import annotations

import math
import struct
import tracemalloc
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdcp_conformance.cache.transcript import render_body
from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.protocol.codec import (
    DecodeLimits,
    decode,
    decode_sequence,
    diagnostic,
    encode,
    sequence_diagnostic,
)
from sdcp_conformance.protocol.errors import MalformedMessage
from sdcp_conformance.protocol.problems import ProblemType
from tests.vectors import read_vectors

VECTORS = read_vectors("rfc8949_appendix_a.json")


def _value(spec: Any) -> Any:
    """Turn the vector file's JSON conventions into Python CBOR values."""
    if isinstance(spec, dict):
        if "bytes" in spec:
            return bytes.fromhex(spec["bytes"])
        if "float" in spec:
            return float(spec["float"].replace("Infinity", "inf"))
        return {_hashable(_value(k)): _value(v) for k, v in spec["map"]}
    if isinstance(spec, list):
        return [_value(item) for item in spec]
    return spec


def _hashable(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    return type(a) is type(b) and a == b


@pytest.mark.parametrize(("spec", "hex_"), VECTORS["deterministic"], ids=lambda v: str(v)[:30])
def test_encoder_matches_rfc8949_appendix_a(spec: Any, hex_: str) -> None:
    assert encode(_value(spec)).hex() == hex_


@pytest.mark.parametrize(("spec", "hex_"), VECTORS["deterministic"], ids=lambda v: str(v)[:30])
def test_decoder_reads_rfc8949_appendix_a(spec: Any, hex_: str) -> None:
    data = bytes.fromhex(hex_)
    if data[0] >> 5 == 6:  # bignums are tagged, and SDCP refuses tags
        with pytest.raises(MalformedMessage):
            decode(data)
        return
    decoded = decode(data)
    expected = _value(spec)
    assert _same(decoded, expected) or decoded == expected


@pytest.mark.parametrize(("spec", "hex_"), VECTORS["decode_only"], ids=lambda v: str(v)[:30])
def test_decoder_accepts_non_deterministic_well_formed_input(spec: Any, hex_: str) -> None:
    """P1-MSG-1: "receivers accept any well-formed encoding"."""
    assert decode(bytes.fromhex(hex_)) == _value(spec)


@pytest.mark.parametrize("hex_", VECTORS["tagged"])
def test_decoder_refuses_tags(hex_: str) -> None:
    with pytest.raises(MalformedMessage) as info:
        decode(bytes.fromhex(hex_))
    assert info.value.problem is ProblemType.BAD_MESSAGE


def test_map_keys_sort_bytewise_not_length_first() -> None:
    # RFC 7049 canonical order (cbor2 canonical=True) puts the 1-byte key 10
    # before "b" by length; RFC 8949 §4.2.1 orders by encoded bytes:
    # 0x0a < 0x61.. < 0x62.. and a 24-byte text key (0x78 0x18 ...) sorts
    # after every short text key (0x60..0x77).
    long_key = "a" * 24
    encoded = encode({"b": 1, long_key: 2, 10: 3, "aa": 4})
    keys_in_order = [key for key, _ in _pairs(encoded)]
    assert keys_in_order == [10, "b", "aa", long_key]


def _pairs(data: bytes) -> list[tuple[Any, Any]]:
    # decode() keeps the wire order of keys (Python dicts are ordered).
    return list(decode(data).items())


json_like = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**64), 2**64 - 1) | st.text(max_size=8)
    | st.binary(max_size=8),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=4) | st.integers(0, 100), children, max_size=4),
    max_leaves=20,
)


@settings(derandomize=True, max_examples=200)
@given(json_like)
def test_decode_inverts_encode(value: Any) -> None:
    assert decode(encode(value)) == value


@settings(derandomize=True, max_examples=100)
@given(st.dictionaries(st.text(max_size=30), st.integers(0, 2**40), max_size=8), st.randoms())
def test_encoding_ignores_insertion_order(mapping: dict[str, int], rnd: Any) -> None:
    items = list(mapping.items())
    rnd.shuffle(items)
    assert encode(dict(items)) == encode(mapping)


def test_encoder_refuses_foreign_types_and_colliding_keys() -> None:
    with pytest.raises(InvalidArgument):
        encode({1, 2})
    # Two distinct NaN objects are two dict keys with one encoding (f97e00).
    with pytest.raises(InvalidArgument, match="encode alike"):
        encode({float("nan"): 1, float("nan"): 2})


def test_decode_rejects_trailing_bytes() -> None:
    with pytest.raises(MalformedMessage, match="trailing"):
        decode(bytes.fromhex("0100"))


@pytest.mark.parametrize(
    "hex_",
    [
        "a2616101616102",  # {"a": 1, "a": 2}
        "a26161017801610 2".replace(" ", ""),  # "a" and a non-shortest "a"
        "bf6161016161 02ff".replace(" ", ""),  # indefinite map, duplicate
        "a2010201 03".replace(" ", ""),  # {1: 2, 1: 3}
        "a2010218 0103".replace(" ", ""),  # 1 and a non-shortest 1
        "a2200139 000002".replace(" ", ""),  # -1 and a non-shortest -1
        "a27a00000001610161 6102".replace(" ", ""),  # "a" with a four-byte length, then "a"
    ],
)
def test_decode_rejects_duplicate_keys(hex_: str) -> None:
    with pytest.raises(MalformedMessage, match="duplicate"):
        decode(bytes.fromhex(hex_))


@pytest.mark.parametrize(
    ("hex_", "expected"),
    [
        ("a3 0101 2002 6131 03".replace(" ", ""), {1: 1, -1: 2, "1": 3}),  # one value, three types of key
        ("a2 41 61 01 6161 02".replace(" ", ""), {b"a": 1, "a": 2}),  # bytes "a" is not text "a"
    ],
)
def test_decode_keeps_keys_of_different_types_apart(hex_: str, expected: dict[object, int]) -> None:
    decoded = decode(bytes.fromhex(hex_))
    assert decoded == expected
    assert [type(key) for key in decoded] == [type(key) for key in expected]


def test_decode_rejects_a_key_that_is_not_utf8() -> None:
    with pytest.raises(MalformedMessage, match="not UTF-8"):
        decode(bytes.fromhex("a1 62c328 01".replace(" ", "")))


@pytest.mark.parametrize(
    ("hex_", "why"),
    [
        ("", "ends"),
        ("18", "ends inside an item head"),
        ("62 61".replace(" ", ""), "exceeds the remaining"),
        ("1c", "reserved"),
        ("ff", "break"),
        ("1f", "indefinite length on a major type"),
        ("f818", "not well-formed"),
        ("9f01", "ends inside an indefinite"),
        ("5f6161ff", "foreign chunk"),
        ("bf01ff", "key without a value"),
        ("d81c01", "tags"),
        ("62c328", "could not be decoded"),  # invalid UTF-8
    ],
)
def test_decode_rejects_malformed_input(hex_: str, why: str) -> None:
    with pytest.raises(MalformedMessage, match=why):
        decode(bytes.fromhex(hex_))


def test_decode_sequence_reads_each_item() -> None:
    data = encode({"epoch": 1}) + encode({"epoch": 2, "round": 1}) + encode([])
    assert decode_sequence(data) == [{"epoch": 1}, {"epoch": 2, "round": 1}, []]
    assert decode_sequence(b"") == []
    with pytest.raises(MalformedMessage):
        decode_sequence(data + b"\x82\x01")


# --------------------------------------------------------------------------- hostile input


def _hostile_inputs() -> dict[str, bytes]:
    million_map = b"\xba" + struct.pack(">I", 10**6) + b"".join(
        b"\x1a" + struct.pack(">I", i) + b"\x00" for i in range(10**6)
    )
    million_indefinite_map = b"\xbf" + b"".join(
        b"\x1a" + struct.pack(">I", i) + b"\x00" for i in range(10**6)
    ) + b"\xff"
    return {
        "deeply nested arrays": b"\x81" * 1_000_000 + b"\x00",
        "deeply nested indefinite arrays": b"\x9f" * 1_000_000,
        "byte string claiming 2^62 bytes": b"\x5b" + struct.pack(">Q", 2**62),
        "array claiming 2^62 items": b"\x9b" + struct.pack(">Q", 2**62),
        "map claiming 2^62 entries": b"\xbb" + struct.pack(">Q", 2**62),
        "10^6 tiny map entries": million_map,
        "10^6 tiny entries in an indefinite map": million_indefinite_map,
    }


@pytest.mark.parametrize("name", list(_hostile_inputs()))
def test_hostile_cbor_is_rejected_with_bounded_memory(name: str) -> None:
    data = _hostile_inputs()[name]
    tracemalloc.start()
    try:
        with pytest.raises(MalformedMessage):
            decode(data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # One copy of the input plus small change: nothing the input declares is built.
    assert peak < len(data) + 2**20, f"decoding allocated {peak} bytes for {len(data)} bytes of input"


def test_hostile_cbor_is_rejected_before_scanning_what_it_declares() -> None:
    """The bound is checked at the head: work does not depend on the declared size.

    Counted in scanned items rather than timed: a limit of one item more than
    the head needs would trip if the decoder looked at the body.
    """
    tight = DecodeLimits(max_items=2)
    for data in (b"\xba" + struct.pack(">I", 10**6) + b"\x00" * 16, b"\x5b" + struct.pack(">Q", 2**62)):
        with pytest.raises(MalformedMessage, match="exceeds"):
            decode(data, limits=tight)


def test_item_and_size_limits_apply() -> None:
    with pytest.raises(MalformedMessage, match="more than 3 items"):
        decode(encode([1, 2, 3, 4]), limits=DecodeLimits(max_items=3))
    with pytest.raises(MalformedMessage, match="exceeds 4"):
        decode(encode("hello"), limits=DecodeLimits(max_size=4))
    with pytest.raises(MalformedMessage, match="indefinite"):
        decode(bytes.fromhex("9fff"), limits=DecodeLimits(allow_indefinite=False))


def test_long_token_list_round_trips() -> None:
    tokens = list(range(100_000))
    assert decode(encode(tokens)) == tokens


def test_diagnostic_notation_renders_values_and_bytes() -> None:
    text = diagnostic({"digest": b"\x01\x02", "epoch": 1, "tokens": [3, 4]})
    assert text == '{"epoch":1,"digest":h\'0102\',"tokens":[3,4]}'
    assert diagnostic(encode([1, 2])) == "[1,2]"
    assert diagnostic(encode(1) + encode("a")) == '1, "a"'
    assert diagnostic(b"\xff\x00") == "h'ff00'"


@pytest.mark.parametrize("hex_body", ["7fff", "5fff", "82017fff"])
def test_diagnostic_of_a_body_the_renderer_panics_on_is_its_hex(hex_body: str) -> None:
    """An empty indefinite-length string makes cbor_diag's Rust code panic (a BaseException): a hostile IUT's body
    must not end the report writing."""
    assert diagnostic(bytes.fromhex(hex_body)) == f"h'{hex_body}'"


def test_a_sequence_holding_a_simple_value_is_rendered_as_sent() -> None:
    """A raw blob (q_rows of random floats) may scan as a CBOR sequence holding a simple value, which no SDCP
    message can re-encode: it is shown as sent (a certification once crashed writing its report over one)."""
    assert sequence_diagnostic(bytes([0x01, 0xE0, 0x02])) == "1, simple(0), 2"


@given(st.binary(max_size=96))
@settings(derandomize=True, max_examples=400, deadline=None)
def test_any_body_renders_without_raising(body: bytes) -> None:
    rendered = render_body(body, "application/octet-stream")
    assert isinstance(rendered, str) and (rendered or not body)
