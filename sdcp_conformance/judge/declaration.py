"""The vendor's declaration: what implementation is certified, and which optional features it claims.

Bluetooth's conformance statement and OpenID's signed declaration beside the logs: the test plan follows from
the claims. ``sdcp-conformance declare --role ROLE`` writes the template (:func:`template`); ``certify
--declaration FILE`` reads it (:func:`load_declaration`). Under a declaration (D-JUDGE-DECL-1, in
``judge/decisions.toml``):

- a case that exercises a feature the declaration does not claim is NOT CLAIMED: it does not run, and it counts
  neither for nor against the run;
- a case of a claimed feature that could not run (SKIPPED: the target lacks what it needs) is INCOMPLETE, so the
  run certifies nothing until the claim is reachable;
- an IUT that refuses, as not supported (``sdcp-bad-contract``, §5.1 Table 2), a contract using a feature the
  declaration claims contradicts the claim: a finding on :data:`CLAIM_ROW` (FAILED).

Without a declaration every feature is taken as claimed, which is what a full certification always was.

The features are the draft's optional members and conditional behaviours, and the profile's options, by role
(:data:`FEATURES`); the harness finds which a case uses in the messages it sends (``harness/features.py``), and
a case that uses a feature it does not declare is a harness bug.
"""

from __future__ import annotations

import hashlib
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sdcp_conformance.errors import InvalidArgument

CLAIM_ROW = "DECL-CLAIM"
"""The requirement row of a claim the IUT contradicts (``judge/requirements/common.py``)."""

FEATURES: Mapping[str, Mapping[str, str]] = {
    "verifier": {
        "rule2": "acceptance rule 2, speculative sampling (§6.4): contracts with rule = 2, proposals with q_rows",
        "seeded_rule2": "rule 2 with a seed in the sampling profile: the HMAC-derived random values of §6.4",
        "self_decode": "the self_decode action (§6.5.2): contracts with self_load whose fallback lists it",
        "cache_ref_prompt": "a session-open whose prompt is a cache-ref (§5.2: prompt: [* uint] / cache-ref)",
        "prompt_kv": "a session-open carrying prompt_kv, the target KV of the prompt (§5.2)",
        "resume": "a session-open carrying resume, on failover (§6.9)",
        "target_kv": "resume carrying target_kv, the target KV cache of the committed tokens (§6.9)",
        "load_hook": "load control for the harness (the target's load_hook or load_command; README: Load control)",
        "http3": "HTTP/3 over QUIC (§5.1: HTTP/2 or HTTP/3; P1: HTTP/3 is optional)",
    },
    "drafter": {
        "rule2": "acceptance rule 2 (§6.4): assignments whose contract has rule = 2, so the drafter publishes q_rows",
        "cache_ref_prompt": "an assignment whose prompt is a cache-ref (§5.2)",
        "http3": "HTTP/3 over QUIC (§5.1: HTTP/2 or HTTP/3; P1: HTTP/3 is optional)",
    },
    "router": {
        "http3": "HTTP/3 over QUIC (§5.1: HTTP/2 or HTTP/3; P1: HTTP/3 is optional)",
    },
}

BRANCH_NAMES = frozenset({"main", "master", "head", "trunk", "develop", "development", "dev", "latest", "stable",
                          "nightly", "release"})
"""A version naming a branch (it moves) is refused: a certification names a tag or a commit."""


@dataclass(frozen=True)
class Declaration:
    """What a vendor claims (the file's own bytes are kept: the bundle carries and signs them)."""

    role: str
    implementation: str
    version: str
    contact: str
    claims: frozenset[str]
    data: bytes = b""

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    def unclaimed(self, features: tuple[str, ...] | frozenset[str]) -> list[str]:
        """The features of ``features`` this declaration does not claim, in order."""
        return [feature for feature in features if feature not in self.claims]

    def describe(self) -> dict[str, Any]:
        return {"role": self.role, "implementation": self.implementation, "version": self.version,
                "contact": self.contact, "claims": sorted(self.claims),
                "not_claimed": sorted(set(FEATURES[self.role]) - self.claims), "sha256": self.sha256,
                "text": self.data.decode("utf-8")}


def features_of(role: str) -> Mapping[str, str]:
    try:
        return FEATURES[role]
    except KeyError:
        raise InvalidArgument(f"no features for role {role!r} (known: {', '.join(FEATURES)})") from None


def template(role: str) -> str:
    """The declaration a vendor fills in for an IUT of ``role``: every feature listed, none claimed yet."""
    lines = [
        f"# sdcp-conformance declaration for a {role} under test (certify --declaration THIS-FILE).",
        "# Fill in the implementation; set each feature your implementation offers to true.",
        "# A case of a feature left false is NOT CLAIMED (it does not run and counts for nothing); a claimed",
        "# feature whose cases cannot run makes the run INCOMPLETE; a claim the IUT contradicts is FAILED.",
        "",
        f'role = "{role}"',
        'implementation = ""   # its name',
        'version = ""          # a tag or a commit of what is certified, never a branch',
        'contact = ""          # who answers for it (an e-mail address, say)',
        "",
        "[features]",
    ]
    for name, meaning in features_of(role).items():
        lines.append(f"{name} = false  # {meaning}")
    return "\n".join(lines) + "\n"


def parse_declaration(data: bytes, where: str, role: str | None = None) -> Declaration:
    """A declaration from its file's bytes; every fault is an :class:`InvalidArgument` naming ``where``."""
    try:
        document = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InvalidArgument(f"{where}: not a TOML declaration: {exc}") from exc
    declared_role = str(document.get("role", ""))
    known = features_of(declared_role) if declared_role else None
    if known is None:
        raise InvalidArgument(f"{where}: role is missing (one of {', '.join(FEATURES)})")
    if role is not None and declared_role != role:
        raise InvalidArgument(f"{where}: declares a {declared_role}, but the IUT certified is a {role}")
    fields = {}
    for key in ("implementation", "version", "contact"):
        value = document.get(key)
        if not isinstance(value, str) or not value.strip():
            raise InvalidArgument(f"{where}: {key} is empty (a certification names what it certifies)")
        fields[key] = value.strip()
    if fields["version"].lower() in BRANCH_NAMES:
        raise InvalidArgument(f"{where}: version {fields['version']!r} names a branch; give a tag or a commit")
    features = document.get("features", {})
    if not isinstance(features, dict):
        raise InvalidArgument(f"{where}: [features] must be a table of name = true/false")
    unknown = sorted(set(features) - set(known))
    if unknown:
        raise InvalidArgument(f"{where}: unknown feature(s) {', '.join(unknown)} for a {declared_role} "
                              f"(known: {', '.join(known)})")
    not_bool = sorted(name for name, value in features.items() if not isinstance(value, bool))
    if not_bool:
        raise InvalidArgument(f"{where}: feature(s) {', '.join(not_bool)} must be true or false")
    claims = frozenset(name for name, value in features.items() if value)
    return Declaration(declared_role, fields["implementation"], fields["version"], fields["contact"], claims, data)


def load_declaration(path: Path, role: str | None = None) -> Declaration:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InvalidArgument(f"{path}: cannot read the declaration: {exc.strerror}") from exc
    return parse_declaration(data, str(path), role)


__all__ = ["BRANCH_NAMES", "CLAIM_ROW", "FEATURES", "Declaration", "features_of", "load_declaration",
           "parse_declaration", "template"]
