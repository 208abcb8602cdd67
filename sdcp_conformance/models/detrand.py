"""Version-independent pseudo-random integers from SHAKE-256, for the mock models' fixed bytes.

NumPy and torch may change their generators' streams between releases; the
mock checkpoints must regenerate byte for byte anywhere, so every random choice
behind them is drawn here from an extendable-output hash of a text label.
Only integer arithmetic is involved, so no platform's floating point can
change a value.
"""

from __future__ import annotations

import hashlib

import numpy as np
import numpy.typing as npt

from sdcp_conformance.errors import InvalidArgument

DOMAIN = "sdcp-mock-models-1"
"""Prefix of every label; changing it changes every generated value."""


def hash_ints(label: str, count: int, low: int, high: int) -> npt.NDArray[np.int64]:
    """``count`` integers in ``[low, high]`` drawn from SHAKE-256 of ``label``.

    Each value takes four octets of the stream (big-endian) modulo the range
    size; the modulo bias is below 2^-20 for the ranges used here and does not
    matter for test models.
    """
    if count < 0 or high < low or high - low >= 1 << 20:
        raise InvalidArgument(f"bad hash_ints request: count={count}, range=[{low}, {high}]")
    stream = hashlib.shake_256(f"{DOMAIN}/{label}".encode()).digest(4 * count)
    raw = np.frombuffer(stream, dtype=">u4").astype(np.int64)
    return raw % (high - low + 1) + low


def hash_choice(label: str, low: int, high: int) -> int:
    """One integer in ``[low, high]`` for ``label``."""
    return int(hash_ints(label, 1, low, high)[0])


def hash_permutation(label: str, n: int) -> list[int]:
    """A permutation of ``range(n)`` (Fisher-Yates driven by :func:`hash_ints`)."""
    order = list(range(n))
    draws = hash_ints(label, n, 0, (1 << 20) - 1)
    for i in range(n - 1, 0, -1):
        j = int(draws[i]) % (i + 1)
        order[i], order[j] = order[j], order[i]
    return order


__all__ = ["DOMAIN", "hash_choice", "hash_ints", "hash_permutation"]
