"""Checks SDCP messages against the CDDL schema of draft §4.1 and §5.2 (``sdcp.cddl``).

The validator is ``cddl-verifier`` (pure Python), chosen on measured facts:

* pycddl 0.6.4 is fast (about 70 µs a message) but wrong where SDCP needs it
  right: it matches only the first alternative of a named type choice inside
  an array (``[+ ladder]`` rejected ``[1, 2, 5]``), and it accepts anything
  for ``[* uint] / tstr`` (the ``prompt`` member).
* cddl-verifier 1.5.3 decided every case correctly (cuts on known keys
  included, RFC 8610 §3.5.4) at about 0.5 ms a message, which is small next
  to a target-model forward pass.
* zcbor cannot be installed beside cbor2 6.

Bytes are first checked for well-formedness by :func:`codec.decode` (bounded
decoding, duplicate keys refused: P1-MSG-2), so every receiver applies the
same CBOR rules; only then does the schema see them.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources
from typing import Any

import cddl_verifier

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.protocol import codec
from sdcp_conformance.protocol.errors import MalformedMessage
from sdcp_conformance.protocol.problems import ProblemType

SCHEMA_RESOURCE = "sdcp.cddl"
"""The schema file, shipped as package data next to this module."""

CONTRACT_MEMBER = "contract"
"""The member whose faults are ``sdcp-bad-contract`` rather than ``sdcp-bad-message``."""


_PACKAGE = "sdcp_conformance.protocol"


@dataclass(frozen=True)
class _Finding:
    """One reason a value does not match: where (map keys and array indexes) and what."""

    path: tuple[Any, ...]
    text: str


@functools.cache
def schema_text() -> str:
    """The CDDL text of ``sdcp.cddl``."""
    return resources.files(_PACKAGE).joinpath(SCHEMA_RESOURCE).read_text(encoding="utf-8")


@functools.cache
def _validator() -> Any:
    # The schema imports nothing; strict and unbundled so that a stray import
    # fails loudly instead of turning names into "match anything".
    return cddl_verifier.Validator(schema_text(), strict_modules=True, bundled_modules=False)


def _as_cbor(value: object | bytes) -> bytes:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    return codec.encode(value)


def _findings(rule_name: str, value: object | bytes) -> list[_Finding]:
    encoded = _as_cbor(value)
    try:
        codec.decode(encoded)
    except MalformedMessage as exc:
        return [_Finding((), f"malformed CBOR: {exc.detail}")]
    result = _validator().validate(encoded, rule_name)
    if any(d.category == "schema" for d in result.diagnostics):
        raise InvalidArgument(f"{rule_name!r} is not a rule of {SCHEMA_RESOURCE}")
    return [_Finding(tuple(d.path), f"at {d.path_text}: {d.message}") for d in result.diagnostics]


def validate(rule_name: str, value: object | bytes) -> list[str]:
    """Check ``value`` against the rule ``rule_name``; return the problems, empty if valid.

    Bytes are validated as the CBOR item they encode; any other value is
    first encoded with :func:`codec.encode` (so ``bytes`` is never a bstr
    here: pass its CBOR encoding to check a bstr rule).
    """
    return [finding.text for finding in _findings(rule_name, value)]


def _only_in_contract(rule_name: str, findings: list[_Finding]) -> bool:
    if rule_name == CONTRACT_MEMBER:
        return True
    return all(finding.path[:1] == (CONTRACT_MEMBER,) for finding in findings)


def check(rule_name: str, value: object | bytes) -> None:
    """Raise :class:`MalformedMessage` unless ``value`` matches the rule ``rule_name``.

    The problem type follows P1-MSG-2: "Receivers reject malformed CBOR, wrong
    types, out-of-range values, and missing required members with 400
    (sdcp-bad-message) — except the contract, which gets 422
    sdcp-bad-contract". D-CDDL-8: a message is blamed on its contract only
    when every finding lies inside the ``contract`` member; a message that is
    also wrong elsewhere is a bad message.
    """
    findings = _findings(rule_name, value)
    if not findings:
        return
    problem = ProblemType.BAD_CONTRACT if _only_in_contract(rule_name, findings) else None
    detail = "; ".join(finding.text for finding in findings)
    raise MalformedMessage(f"not a valid {rule_name}: {detail}", problem=problem)


__all__ = ["SCHEMA_RESOURCE", "check", "schema_text", "validate"]
