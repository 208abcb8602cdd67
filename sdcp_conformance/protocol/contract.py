"""Session Contract validation and digest (draft §4.1).

CDDL-level checks (types, ranges, closed map) happen when the contract is
decoded (:class:`~sdcp_conformance.protocol.messages.Contract`); this module
adds what the CDDL cannot say and the profile decides.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sdcp_conformance.protocol.chain import contract_digest
from sdcp_conformance.protocol.errors import ProtocolError
from sdcp_conformance.protocol.messages import Contract
from sdcp_conformance.protocol.problems import ProblemType

RULE_GREEDY = 1
RULE_SPECULATIVE_SAMPLING = 2
REGISTERED_RULES = frozenset({RULE_GREEDY, RULE_SPECULATIVE_SAMPLING})
"""§6.4 "This document defines two"; the registry of §10.2.2 is not in the draft."""


def parse_contract(obj: Any) -> Contract:
    """Decode and fully validate a contract given as decoded CBOR (a dict)."""
    contract = Contract.from_obj(obj)
    validate_contract(contract)
    return contract


def validate_contract(contract: Contract) -> None:
    """Checks beyond the CDDL; each raises 422 ``sdcp-bad-contract``."""
    if contract.rule not in REGISTERED_RULES:
        _refuse(f"acceptance rule {contract.rule} is not registered (§6.4 defines 1 and 2)")
    if contract.m_max < 1:
        _refuse("m_max 0 leaves no M with 1 <= M <= m_max (P1-CTL-4)")


def digest_of(contract: Contract | Mapping[str, Any]) -> bytes:
    """The contract digest over our own deterministic re-encoding (P1-MSG-1)."""
    obj = contract.to_obj() if isinstance(contract, Contract) else contract
    return contract_digest(obj)


def _refuse(detail: str) -> None:
    raise ProtocolError(ProblemType.BAD_CONTRACT, detail)


__all__ = [
    "REGISTERED_RULES",
    "RULE_GREEDY",
    "RULE_SPECULATIVE_SAMPLING",
    "digest_of",
    "parse_contract",
    "validate_contract",
]
