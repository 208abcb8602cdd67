"""The target distribution p as engines that apply §4.1's steps in another order compute it.

§4.1: "p is the target model's next-token distribution after applying
temperature, top-k, and top-p in that order". Samplers often apply the steps
in another order (temperature last, say). This module, plain Python like
:mod:`sdcp_conformance.oracle.rule2` and written apart from the protocol core
the reference verifier uses, computes p under any order of the three steps, so
that the harness can tell which order a verifier's outcomes follow.

Each step acts on logits (masked tokens are -inf): temperature divides them by
T; top-k keeps the k largest (ties to the smaller id, P1-SAMP-1); top-p takes
the softmax of the logits as they are at that point, keeps the shortest prefix
by probability descending (ties by id) whose sum reaches top_p, and masks the
rest. p is the softmax of what remains, temperature applied. Top-k ranks
logits, so it commutes with temperature: of the five wrong orders only three
give a p other than §4.1's (:data:`WRONG_ORDERS`), and each differs from §4.1's
p only in which tokens it keeps.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from sdcp_conformance.oracle.rule2 import distribution, mask_top_k, nucleus

TEMPERATURE, TOP_K, TOP_P = "temperature", "top-k", "top-p"
DRAFT_ORDER = (TEMPERATURE, TOP_K, TOP_P)
"""§4.1's order."""

WRONG_ORDERS: dict[str, tuple[str, str, str]] = {
    "top-p-before-top-k": (TEMPERATURE, TOP_P, TOP_K),
    "temperature-after-top-p": (TOP_K, TOP_P, TEMPERATURE),
    "top-p-first": (TOP_P, TEMPERATURE, TOP_K),
}
"""The orders whose p can differ from §4.1's, by name. (top-k, temperature, top-p) gives §4.1's p, since top-k
ranks the logits and temperature keeps their ranking; (top-p, top-k, temperature) gives the p of
(top-p, temperature, top-k), as both keep the first min(k, |nucleus|) tokens of the untempered nucleus."""

ORDER_WORDS: dict[str, str] = {
    "top-p-before-top-k": "temperature, then top-p, then top-k",
    "temperature-after-top-p": "top-k, then top-p on the untempered distribution, then temperature",
    "top-p-first": "top-p on the untempered distribution, then temperature and top-k",
}


def ordered_distribution(logits: Sequence[float], sampling: Mapping[str, int] | None,
                         order: Sequence[str]) -> list[float]:
    """p under a rule-2 profile with the steps applied in ``order`` (a permutation of the three steps)."""
    if sorted(order) != sorted(DRAFT_ORDER):
        raise ValueError(f"an order is a permutation of {DRAFT_ORDER}, got {tuple(order)}")
    profile = dict(sampling or {})
    temperature = profile.get("temperature_milli", 1000) / 1000
    if temperature == 0.0:
        return distribution(logits, profile, 2)  # one-hot on the argmax whatever the order
    current = [float(value) for value in logits]
    for step in order:
        if step == TEMPERATURE:
            current = [value / temperature if value != -math.inf else -math.inf for value in current]
        elif step == TOP_K:
            current = mask_top_k(current, profile.get("top_k") or 0)
        else:
            current = _top_p(current, profile.get("top_p_milli", 1000))
    return _softmax(current)


def order_variants(logits: Sequence[float], sampling: Mapping[str, int] | None) -> dict[str, list[float]]:
    """p under every wrong order of :data:`WRONG_ORDERS` that keeps other tokens than §4.1's p, by name."""
    right = distribution(logits, sampling, 2)
    kept = support(right)
    variants = {}
    for name, order in WRONG_ORDERS.items():
        row = ordered_distribution(logits, sampling, order)
        if support(row) != kept:
            variants[name] = row
    return variants


def support(row: Sequence[float]) -> frozenset[int]:
    return frozenset(index for index, value in enumerate(row) if value > 0.0)


def _top_p(logits: list[float], top_p_milli: int) -> list[float]:
    if top_p_milli >= 1000:
        return logits
    kept = set(nucleus(_softmax(logits), top_p_milli))
    return [value if index in kept else -math.inf for index, value in enumerate(logits)]


def _softmax(logits: list[float]) -> list[float]:
    peak = max(logits)
    weights = [math.exp(value - peak) if value != -math.inf else 0.0 for value in logits]
    total = sum(weights)
    return [weight / total for weight in weights]


__all__ = [
    "DRAFT_ORDER",
    "ORDER_WORDS",
    "TEMPERATURE",
    "TOP_K",
    "TOP_P",
    "WRONG_ORDERS",
    "order_variants",
    "ordered_distribution",
    "support",
]
