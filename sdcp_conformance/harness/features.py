"""Which optional features a message the harness sends exercises (D-JUDGE-DECL-1; the names are
:data:`~sdcp_conformance.judge.declaration.FEATURES`').

Read from the message itself, not from what a case says it does: a contract with ``rule = 2`` (§6.4 rule 2), a
seed in its sampling profile (§6.4 "When the sampling profile contains a seed"), a fallback list with
``self_decode`` (3) in a contract with ``self_load`` (§6.5.2: "permitted only if the contract contains
self_load"), a prompt that is a cache-ref, ``prompt_kv``, ``resume`` and its ``target_kv`` (§5.2). The runner
holds every case to the features its declaration gives it (``suites/*/features.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SELF_DECODE = 3
"""The action code of self_decode (§4.1)."""


def _contract_features(contract: Mapping[str, Any]) -> set[str]:
    found: set[str] = set()
    if contract.get("rule") == 2:
        found.add("rule2")
        sampling = contract.get("sampling")
        if isinstance(sampling, Mapping) and "seed" in sampling:
            found.add("seeded_rule2")
    fallback = contract.get("fallback")
    if isinstance(fallback, list) and SELF_DECODE in fallback and "self_load" in contract:
        found.add("self_decode")
    return found


def message_features(method: str, path: str, body: Any) -> frozenset[str]:
    """The optional features a request the harness sends exercises (nothing for a body it did not build as a map:
    raw bytes are a hostile message's, judged as such)."""
    if not isinstance(body, Mapping):
        return frozenset()
    found: set[str] = set()
    contract = body.get("contract")
    if isinstance(contract, Mapping):
        found |= _contract_features(contract)
    if isinstance(body.get("prompt"), str) and "contract" in body:
        found.add("cache_ref_prompt")
    if method == "POST" and path == "sessions":
        if "prompt_kv" in body:
            found.add("prompt_kv")
        resume = body.get("resume")
        if isinstance(resume, Mapping):
            found.add("resume")
            if "target_kv" in resume:
                found.add("target_kv")
    if method == "POST" and path.endswith("/policy") and body.get("sampling") is not None:
        sampling = body["sampling"]
        if isinstance(sampling, Mapping) and "seed" in sampling:
            found.add("seeded_rule2")
    return frozenset(found)


__all__ = ["message_features"]
