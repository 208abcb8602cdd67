"""An independent, plain-Python statement of §4.1 sampling and §6.4 rule 2, for seeded exactness.

Deliberately written apart from :mod:`sdcp_conformance.protocol` (which the
reference verifier uses): lists of Python floats, ``hmac`` directly, loops
instead of numpy. When the two disagree, one of them is wrong, and the
vector tests tell which.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


def uniform(seed: int, session: bytes, round_number: int, i: int, purpose: int) -> float:
    """§6.4's HMAC-SHA-256 value, first 53 bits over 2^53 (P1-SAMP-3 for i)."""
    message = b"SDCP-VERIFY-1\x00" + session + struct.pack(">IIB", round_number, i, purpose)
    mac = hmac.new(struct.pack(">Q", seed), message, hashlib.sha256).digest()
    return (int.from_bytes(mac[:8], "big") >> 11) / 2.0**53


def distribution(logits: Sequence[float], sampling: Mapping[str, int] | None, rule: int) -> list[float]:
    """P1-SAMP-1: temperature, then top-k, then top-p (decisions D-SAMP-1..3 of the protocol core)."""
    profile = dict(sampling or {})
    milli = profile.get("temperature_milli")
    temperature = (0.0 if rule == 1 else 1.0) if milli is None else milli / 1000
    if temperature == 0.0:
        best = max(logits)
        top = min(index for index, value in enumerate(logits) if value == best)
        return [1.0 if index == top else 0.0 for index in range(len(logits))]
    scaled = mask_top_k([value / temperature for value in logits], profile.get("top_k") or 0)
    peak = max(scaled)
    weights = [math.exp(value - peak) if value != -math.inf else 0.0 for value in scaled]
    total = sum(weights)
    probs = [weight / total for weight in weights]
    top_p = profile.get("top_p_milli", 1000)
    if top_p >= 1000:
        return probs
    kept_ids = nucleus(probs, top_p)
    mass = 0.0
    for index in kept_ids:
        mass += probs[index]
    chosen = set(kept_ids)
    return [probs[index] / mass if index in chosen else 0.0 for index in range(len(probs))]


def mask_top_k(logits: list[float], k: int) -> list[float]:
    """Top-k: the ``k`` largest logits kept (ties to the smaller id), the others -inf; all kept unless 0 < k < V."""
    if not 0 < k < len(logits):
        return logits
    ranked = sorted(range(len(logits)), key=lambda index: (-logits[index], index))
    kept = set(ranked[:k])
    return [value if index in kept else -math.inf for index, value in enumerate(logits)]


def nucleus(probs: Sequence[float], top_p_milli: int) -> list[int]:
    """Top-p: the ids of the shortest prefix, by probability descending (ties by id), whose sum reaches top_p."""
    kept: list[int] = []
    running = 0.0
    for index in sorted(range(len(probs)), key=lambda index: (-probs[index], index)):
        if probs[index] == 0.0:
            break
        kept.append(index)
        running += probs[index]
        if running >= top_p_milli / 1000:
            break
    return kept


def draw(weights: Sequence[float], u: float) -> int:
    """P1-SAMP-2: the smallest k with u < (d[0]+…+d[k]) / sum(d), sums taken in ascending id."""
    running, cumulative = 0.0, []
    for weight in weights:
        running += weight
        cumulative.append(running)
    total = cumulative[-1]
    for index, value in enumerate(cumulative):
        if u < value / total:
            return index
    return len(weights) - 1


@dataclass(frozen=True)
class Rule2Expectation:
    accepted: int
    emitted: list[int]


PURPOSE_ACCEPT = 0
PURPOSE_DRAW = 1
"""§6.4: "purpose is 0 for the acceptance test and 1 for drawing the additional token"."""


def rule2(p_rows: Sequence[Sequence[float]], q_rows: Sequence[Sequence[float]], tokens: Sequence[int],
          seed: int, session: bytes, round_number: int, *,
          purposes: tuple[int, int] = (PURPOSE_ACCEPT, PURPOSE_DRAW)) -> Rule2Expectation:
    """§6.4 rule 2 with the seeded uniforms; p has M+1 rows, q has M rows (q as published).

    ``purposes`` (acceptance, draw) is §6.4's (0, 1); a case passes (1, 0) only to find a proposal on which
    exchanging them changes the outcome, so that its round can tell the two apart.
    """
    accept_purpose, draw_purpose = purposes
    for i, token in enumerate(tokens, start=1):
        p, q = p_rows[i - 1], q_rows[i - 1]
        r = uniform(seed, session, round_number, i, accept_purpose)
        if not r < min(1.0, p[token] / q[token]):
            rest = [max(0.0, a - b) for a, b in zip(p, q, strict=True)]
            source = rest if sum(rest) > 0 else list(p)
            extra = draw(source, uniform(seed, session, round_number, i, draw_purpose))
            return Rule2Expectation(i - 1, [*tokens[: i - 1], extra])
    m = len(tokens)
    extra = draw(p_rows[m], uniform(seed, session, round_number, m + 1, draw_purpose))
    return Rule2Expectation(m, [*tokens, extra])


__all__ = [
    "PURPOSE_ACCEPT",
    "PURPOSE_DRAW",
    "Rule2Expectation",
    "distribution",
    "draw",
    "mask_top_k",
    "nucleus",
    "rule2",
    "uniform",
]
