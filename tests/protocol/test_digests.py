"""Contract digest (§4.1), prefix chain (§4.2) and HMAC uniforms (§6.4) against vectors.

The vectors in fixtures/vectors/core.json are produced by
generate_core_vectors.py, which uses hashlib, hmac, struct and its own
minimal CBOR writer, never this package. The tests below also recompute some
values a third way, step by step, inline.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.protocol import contract_digest, decode, encode, extend_digest, prefix_digest, verify_uniform
from sdcp_conformance.protocol.chain import digest_chain
from tests.vectors import read_vectors

CORE = read_vectors("core.json")


def _unhex(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"bytes"}:
            return bytes.fromhex(value["bytes"])
        return {key: _unhex(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_unhex(item) for item in value]
    return value


@pytest.mark.parametrize("vector", CORE["contracts"], ids=lambda v: v["digest"][:12])
def test_contract_encoding_and_digest_match_vectors(vector: dict[str, Any]) -> None:
    contract = _unhex(vector["contract"])
    assert encode(contract).hex() == vector["cbor"]
    assert contract_digest(contract).hex() == vector["digest"]


@pytest.mark.parametrize("vector", CORE["contracts"], ids=lambda v: v["digest"][:12])
def test_non_canonical_encoding_of_a_contract_gives_the_same_digest(vector: dict[str, Any]) -> None:
    """P1-MSG-1: receivers digest their own deterministic re-encoding of the decoded contract."""
    contract = _unhex(vector["contract"])
    sloppy = _sloppy_encoding(contract)
    assert sloppy != bytes.fromhex(vector["cbor"])
    assert contract_digest(decode(sloppy)).hex() == vector["digest"]


def _sloppy_encoding(value: Any) -> bytes:
    """Well-formed but not deterministic: indefinite maps in reverse order, 8-byte uints."""
    if isinstance(value, dict):
        return b"\xbf" + b"".join(
            _sloppy_encoding(key) + _sloppy_encoding(item) for key, item in reversed(value.items())
        ) + b"\xff"
    if isinstance(value, list):
        return b"\x9f" + b"".join(_sloppy_encoding(item) for item in value) + b"\xff"
    if isinstance(value, int):
        return b"\x1b" + value.to_bytes(8, "big")
    if isinstance(value, bytes):
        return b"\x5f" + b"\x58" + bytes([len(value)]) + value + b"\xff"
    return encode(value)


def test_contract_digest_step_by_step() -> None:
    contract = {"rule": 1, "m_max": 4}
    # {"rule": 1, "m_max": 4} deterministic: a2 | 64 "rule" 01 | 65 "m_max" 04
    cbor = bytes.fromhex("a2") + b"\x64rule\x01" + b"\x65m_max\x04"
    assert encode(contract) == cbor
    assert contract_digest(contract) == hashlib.sha256(b"SDCP-CONTRACT-1\x00" + cbor).digest()


@pytest.mark.parametrize("vector", CORE["chains"], ids=lambda v: f"P{len(v['prompt'])}n{len(v['output'])}")
def test_prefix_chain_matches_vectors(vector: dict[str, Any]) -> None:
    cdigest = bytes.fromhex(vector["contract_digest"])
    expected = [bytes.fromhex(d) for d in vector["digests"]]
    assert prefix_digest(cdigest, vector["prompt"]) == expected[0]
    assert digest_chain(cdigest, vector["prompt"], vector["output"]) == expected
    assert extend_digest(expected[0], vector["output"]) == expected[-1]


def test_prefix_digest_step_by_step() -> None:
    cdigest = bytes(range(32))
    d0 = hashlib.sha256(
        b"SDCP-PREFIX-1" + b"\x00" + cdigest + b"\x00\x00\x00\x02" + b"\x00\x00\x00\x07" + b"\x00\x01\x00\x00"
    ).digest()
    assert prefix_digest(cdigest, [7, 65536]) == d0
    d1 = hashlib.sha256(d0 + b"\xff\xff\xff\xff").digest()
    assert extend_digest(d0, [2**32 - 1]) == d1


digests = st.binary(min_size=32, max_size=32)
token_lists = st.lists(st.integers(0, 2**32 - 1), max_size=20)


@settings(derandomize=True, max_examples=100)
@given(digests, token_lists, token_lists)
def test_chain_extension_is_associative(d: bytes, a: list[int], b: list[int]) -> None:
    assert extend_digest(extend_digest(d, a), b) == extend_digest(d, a + b)


@settings(derandomize=True, max_examples=100)
@given(digests, token_lists, token_lists)
def test_different_outputs_give_different_digests(d: bytes, a: list[int], b: list[int]) -> None:
    """§4.2: "a proposal built on a different or outdated prefix is detected"."""
    if a != b:
        assert extend_digest(d, a) != extend_digest(d, b)


def test_digest_inputs_are_checked() -> None:
    with pytest.raises(InvalidArgument):
        prefix_digest(b"short", [1])
    with pytest.raises(InvalidArgument):
        extend_digest(bytes(32), [2**32])
    with pytest.raises(InvalidArgument):
        extend_digest(bytes(32), [-1])


@pytest.mark.parametrize("vector", CORE["uniforms"], ids=lambda v: f"{v['seed']}-{v['round']}-{v['i']}-{v['purpose']}")
def test_hmac_uniforms_match_vectors(vector: dict[str, Any]) -> None:
    value = verify_uniform(
        vector["seed"], bytes.fromhex(vector["session"]), vector["round"], vector["i"], vector["purpose"]
    )
    assert value == float.fromhex(vector["value_hex"])
    assert 0.0 <= value < 1.0


def test_hmac_uniform_step_by_step() -> None:
    session = b"\x11" * 16
    key = (5).to_bytes(8, "big")
    message = b"SDCP-VERIFY-1\x00" + session + (9).to_bytes(4, "big") + (2).to_bytes(4, "big") + b"\x01"
    mac = hmac.new(key, message, "sha256").digest()
    first_53_bits = int(bin(int.from_bytes(mac, "big"))[2:].zfill(256)[:53], 2)
    assert verify_uniform(5, session, 9, 2, 1) == first_53_bits / 2**53


def test_hmac_uniform_purposes_and_positions_differ() -> None:
    session = bytes(16)
    values = {verify_uniform(1, session, 1, i, purpose) for i in range(1, 9) for purpose in (0, 1)}
    assert len(values) == 16


def test_hmac_uniform_arguments_are_checked() -> None:
    with pytest.raises(InvalidArgument):
        verify_uniform(2**64, bytes(16), 1, 1, 0)
    with pytest.raises(InvalidArgument):
        verify_uniform(1, bytes(16), 1, 1, 2)
    with pytest.raises(InvalidArgument):
        verify_uniform(1, bytes(16), 2**32, 1, 0)
