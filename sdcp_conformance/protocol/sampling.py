"""The target distribution p of draft §4.1 and the token draws of profile P1-SAMP-1/P1-SAMP-2.

§4.1: "p is the target model's next-token distribution after applying
temperature, top-k, and top-p in that order; a temperature of zero selects the
most probable token (ties broken in favor of the smallest token identifier)."

Everything is binary64 (numpy float64). Orderings that break ties "to the
smaller id" use a *stable* sort of the negated values, so equal values keep
ascending id order.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from sdcp_conformance.errors import InvalidArgument

FloatRow = npt.NDArray[np.float64]
RowLike = npt.ArrayLike

RULE_GREEDY = 1
RULE_SPECULATIVE = 2
KNOWN_RULES = (RULE_GREEDY, RULE_SPECULATIVE)

TOP_P_DISABLED_MILLI = 1000
"""P1-SAMP-1: "top_p 1000 or absent" disables top-p."""


def as_row(values: RowLike, what: str = "row") -> FloatRow:
    """``values`` as a non-empty one-dimensional float64 array."""
    row = np.asarray(values, dtype=np.float64)
    if row.ndim != 1 or row.size == 0:
        raise InvalidArgument(f"{what} must be a non-empty vector, got shape {row.shape}")
    return row


def greedy_token(row: RowLike) -> int:
    """The argmax of ``row``, ties to the smallest id (§6.4 rule 1; §4.1 temperature zero).

    ``np.argmax`` returns the *first* maximal index, which is exactly "ties
    broken in favor of the smallest token identifier".
    """
    values = as_row(row)
    if np.isnan(values).any():
        raise InvalidArgument("row contains NaN")
    return int(np.argmax(values))


def draw_token(weights: RowLike, u: float) -> int:
    """P1-SAMP-2: the smallest k with u < (d[0]+…+d[k]) / sum(d), in binary64.

    ``np.cumsum`` on float64 is ``np.add.accumulate``: a strictly sequential
    left-to-right sum in ascending id, which is what P1-NUM-1 asks for (unlike
    ``np.sum``, which adds pairwise). sum(d) is the last cumulative sum, so the
    last normalized value is exactly 1.0 and every u in [0, 1) finds a k.
    """
    if not 0.0 <= u < 1.0:
        raise InvalidArgument(f"uniform must lie in [0, 1), got {u!r}")
    d = as_row(weights, "weights")
    if not np.isfinite(d).all() or (d < 0).any():
        raise InvalidArgument("weights must be finite and non-negative")
    cumulative = np.cumsum(d)
    total = cumulative[-1]
    if total <= 0.0:
        raise InvalidArgument("weights have zero total mass")
    normalized = cumulative / total
    # side="right": the first k whose normalized cumulative sum is > u.
    return int(np.searchsorted(normalized, u, side="right"))


def temperature_of(sampling: Mapping[str, int] | None, rule: int) -> float:
    """The temperature as a float; 0.0 means greedy (P1-SAMP-1, P1-NUM-1)."""
    if rule not in KNOWN_RULES:
        raise InvalidArgument(f"unknown acceptance rule {rule}")
    milli = (sampling or {}).get("temperature_milli")
    if milli is None:
        # P1-SAMP-1: "absent-with-rule-1 means one-hot"; P1-NUM-1: "Under rule 2
        # an absent temperature means 1.0."
        return 0.0 if rule == RULE_GREEDY else 1.0
    if milli < 0:
        raise InvalidArgument("temperature_milli must be a uint")
    return milli / 1000


def target_distribution(logits: RowLike, sampling: Mapping[str, int] | None, rule: int) -> FloatRow:
    """p for one position: temperature, then top-k, then top-p (§4.1, P1-SAMP-1)."""
    raw = _checked_logits(logits)
    temperature = temperature_of(sampling, rule)
    if temperature == 0.0:
        return _one_hot(greedy_token(raw), raw.size)
    profile = sampling or {}
    scaled = _top_k(raw / temperature, profile.get("top_k", 0))
    probs = _softmax(scaled)
    return _top_p(probs, profile.get("top_p_milli", TOP_P_DISABLED_MILLI))


def _checked_logits(logits: RowLike) -> FloatRow:
    # D-SAMP-4: -inf marks a masked token (probability zero); NaN and +inf have
    # no probability meaning, and a row with no finite logit has no distribution.
    raw = as_row(logits, "logits")
    if np.isnan(raw).any() or np.isposinf(raw).any():
        raise InvalidArgument("logits must not contain NaN or +inf")
    if not np.isfinite(raw).any():
        raise InvalidArgument("logits need at least one finite value")
    return raw


def _one_hot(token: int, size: int) -> FloatRow:
    row = np.zeros(size, dtype=np.float64)
    row[token] = 1.0
    return row


def _softmax(scores: FloatRow) -> FloatRow:
    """Softmax in binary64 with the maximum subtracted first (no overflow)."""
    shifted = np.exp(scores - scores.max())
    probs: FloatRow = shifted / shifted.sum()
    return probs


def descending_order(values: FloatRow) -> npt.NDArray[np.intp]:
    """Ids sorted by value descending, ties by id ascending (stable sort of the negation)."""
    return np.argsort(-values, kind="stable")


def _top_k(scores: FloatRow, k: int) -> FloatRow:
    """Keep the k largest scores, ties to the smaller id; the rest become -inf.

    D-SAMP-3: ``top_k`` 0 disables the step (P1-SAMP-1) and ``top_k`` >= V
    keeps every token, so both return the scores unchanged. Ranking the scaled
    logits rather than the probabilities is the Hugging Face warper order and
    avoids ties that only exist because exp() underflowed.
    """
    if k < 0:
        raise InvalidArgument("top_k must be a uint")
    if k == 0 or k >= scores.size:
        return scores
    # O(V) selection instead of a full sort: everything above the k-th largest
    # value, then as many of the ties at that value as fit, smallest ids first.
    kth = np.partition(scores, scores.size - k)[scores.size - k]
    above = np.flatnonzero(scores > kth)
    ties = np.flatnonzero(scores == kth)[: k - above.size]
    kept = np.concatenate([above, ties])
    filtered = np.full_like(scores, -np.inf)
    filtered[kept] = scores[kept]
    return filtered


def _top_p(probs: FloatRow, top_p_milli: int) -> FloatRow:
    """Keep the shortest prefix (by probability descending, ties by id) with sum >= top_p.

    D-SAMP-2: top-p sees the distribution renormalized after top-k (``probs``
    is the softmax of the top-k-filtered scores), as Hugging Face's warpers do.
    D-SAMP-1: with top_p_milli = 0 the "shortest prefix with sum >= 0" would be
    empty; we keep the single most probable token instead (HF's
    ``min_tokens_to_keep=1``). If rounding keeps the running sum below top_p
    to the end, every token is kept.
    """
    if not 0 <= top_p_milli <= TOP_P_DISABLED_MILLI:
        raise InvalidArgument("top_p_milli must lie in 0..1000")
    if top_p_milli == TOP_P_DISABLED_MILLI:
        return probs
    threshold = top_p_milli / 1000
    kept, mass = _nucleus(probs, threshold)
    result = np.zeros_like(probs)
    result[kept] = probs[kept] / mass
    return result


NUCLEUS_FIRST_GUESS = 1024
"""How many of the largest probabilities :func:`_nucleus` sorts first."""


def _nucleus(probs: FloatRow, threshold: float) -> tuple[npt.NDArray[np.intp], float]:
    """The shortest sorted prefix whose sequential sum reaches ``threshold``, and that sum.

    Sorting all V values dominates the cost at V ~ 150k, so the largest n
    values are selected in O(V) first (every id >= the n-th largest value,
    ties included, in ascending id); they are exactly the first ids of the full
    order, so the prefix and its binary64 sum are the same. n grows until the
    prefix is found or the whole support is sorted.
    """
    support_size = int(np.count_nonzero(probs))
    n = min(NUCLEUS_FIRST_GUESS, support_size)
    while True:
        candidates = _largest(probs, n) if n < support_size else np.flatnonzero(probs)
        order = candidates[descending_order(probs[candidates])]
        running = np.cumsum(probs[order])  # sequential binary64 sum in sorted order
        # At threshold 0 the first running sum already qualifies: one token is kept.
        reached = np.flatnonzero(running >= threshold)
        if reached.size:
            length = int(reached[0]) + 1
            return order[:length], float(running[length - 1])
        if n >= support_size:
            return order, float(running[-1])
        n = min(4 * n, support_size)


def _largest(probs: FloatRow, n: int) -> npt.NDArray[np.intp]:
    """Ids of the n largest values and of every tie with the n-th, ascending."""
    floor = np.partition(probs, probs.size - n)[probs.size - n]
    return np.flatnonzero(probs >= floor)


__all__ = [
    "KNOWN_RULES",
    "RULE_GREEDY",
    "RULE_SPECULATIVE",
    "TOP_P_DISABLED_MILLI",
    "FloatRow",
    "as_row",
    "descending_order",
    "draw_token",
    "greedy_token",
    "target_distribution",
    "temperature_of",
]
