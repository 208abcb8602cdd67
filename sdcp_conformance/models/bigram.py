"""Closed-form logits of the ``bigram`` mock models: a table row chosen by the last token.

The ``bigram`` checkpoints are Llama networks arranged so that the logits at a
position are exactly ``table[last_token]`` (see ``mock_models/README.md``).
The tables are defined here, from integers, so the harness knows the target
distribution p exactly without running a network: the sampling transforms of
the profile (P1-SAMP-1) are applied to these rows by
``sdcp_conformance.protocol.sampling``.

Every entry is ``k / 16`` with an integer ``|k| <= 255``: eight significant
bits, so it is exact in bfloat16, float16, float32 and float64 alike.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

import numpy as np
import numpy.typing as npt

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.models.detrand import hash_choice, hash_ints, hash_permutation

VOCAB_SIZE = 128
"""V of every mock model (targets and drafters share one tokenizer, P1-DRF-3)."""

EOS_TOKEN = 2
"""``</s>``: the ``stop_likely`` rows give it most of their mass."""

FIRST_WORD = 3
"""Ids below this are the special tokens ``<unk>``, ``<s>``, ``</s>``."""

LOGIT_DENOMINATOR = 16
"""Table entries are integers over this power of two (exact in bfloat16)."""

MAX_NUMERATOR = 255
"""Largest ``|k|``: eight significant bits, the precision of bfloat16."""

BIGRAM_TARGET = "bigram"
BIGRAM_DRAFT_NEAR = "bigram-draft-near"
BIGRAM_DRAFT_FAR = "bigram-draft-far"

ROW_KINDS = (
    "near_uniform",
    "peaked",
    "tie_top2",
    "tie_boundary",
    "long_tail",
    "stop_likely",
    "wide_random",
    "near_deterministic",
)
"""Shape of target row t is ``ROW_KINDS[t % 8]``; each serves a class of sampling tests."""

Numerators = npt.NDArray[np.int64]


def row_kind(token: int) -> str:
    """Which shape the ``bigram`` target's row for ``token`` has."""
    return ROW_KINDS[token % len(ROW_KINDS)]


def _base(label: str, low: int, high: int) -> Numerators:
    return hash_ints(label, VOCAB_SIZE, low, high)


def _word(label: str) -> int:
    return hash_choice(label, FIRST_WORD, VOCAB_SIZE - 1)


def _words(label: str, count: int) -> list[int]:
    """``count`` distinct non-special tokens."""
    order = hash_permutation(label, VOCAB_SIZE - FIRST_WORD)
    return [FIRST_WORD + i for i in order[:count]]


def _near_uniform(label: str) -> Numerators:
    return _base(label, -4, 4)


def _with_peak(label: str, low: int, high: int, peak: int) -> Numerators:
    """A :func:`_base` row with one token (the label's ``/peak`` word) raised to ``peak``."""
    row = _base(label, low, high)
    row[_word(label + "/peak")] = peak
    return row


def _peaked(label: str) -> Numerators:
    return _with_peak(label, -16, 16, 128)


def _tie_top2(label: str) -> Numerators:
    """Two tokens share the maximum exactly (greedy tie-break to the smaller id)."""
    row = _base(label, -16, 16)
    row[_words(label + "/tie", 2)] = 64
    return row


def _tie_boundary(label: str) -> Numerators:
    """Four leaders, then three tokens tied at rank 5-7: top_k = 5 or 6 must break the tie."""
    row = _base(label, -48, -24)
    chosen = _words(label + "/ranks", 7)
    row[chosen[:4]] = [56, 48, 44, 40]
    row[chosen[4:]] = 24
    return row


def _long_tail(label: str) -> Numerators:
    """Twelve tokens on a ladder 4.0, 3.5, ... so top_k and top_p cut at different ranks."""
    row = _base(label, -64, -40)
    for rank, token in enumerate(_words(label + "/ladder", 12)):
        row[token] = 64 - 8 * rank
    return row


def _stop_likely(label: str) -> Numerators:
    row = _base(label, -16, 16)
    row[EOS_TOKEN] = 48
    return row


def _wide_random(label: str) -> Numerators:
    return _base(label, -48, 48)


def _near_deterministic(label: str) -> Numerators:
    return _with_peak(label, -16, 0, 240)


_ROW_BUILDERS: dict[str, Callable[[str], Numerators]] = {
    "near_uniform": _near_uniform,
    "peaked": _peaked,
    "tie_top2": _tie_top2,
    "tie_boundary": _tie_boundary,
    "long_tail": _long_tail,
    "stop_likely": _stop_likely,
    "wide_random": _wide_random,
    "near_deterministic": _near_deterministic,
}


def _target_numerators() -> Numerators:
    rows = [_ROW_BUILDERS[row_kind(t)](f"bigram/row/{t}") for t in range(VOCAB_SIZE)]
    return np.stack(rows)


def _near_numerators() -> Numerators:
    """The target's rows; every row t with ``t % 4 != 0`` gets noise of at most 0.25 per entry.

    Rows with ``t % 4 == 0`` are identical to the target's, so q = p there at
    temperature 1 and rule 2 must accept every such token.
    """
    table = _target_numerators()
    for t in range(VOCAB_SIZE):
        if t % 4 != 0:
            table[t] += hash_ints(f"bigram-draft-near/noise/{t}", VOCAB_SIZE, -4, 4)
    return np.clip(table, -MAX_NUMERATOR, MAX_NUMERATOR)


def _far_numerators() -> Numerators:
    """Independent wide rows, unrelated to the target's: a poor drafter."""
    return np.stack([_base(f"bigram-draft-far/row/{t}", -40, 40) for t in range(VOCAB_SIZE)])


_TABLES: dict[str, Callable[[], Numerators]] = {
    BIGRAM_TARGET: _target_numerators,
    BIGRAM_DRAFT_NEAR: _near_numerators,
    BIGRAM_DRAFT_FAR: _far_numerators,
}

BIGRAM_MODEL_IDS = tuple(_TABLES)
"""Manifest ids of the models whose logits :func:`bigram_logits` gives in closed form."""


@cache
def _numerators(model_id: str) -> Numerators:
    if model_id not in _TABLES:
        raise InvalidArgument(f"{model_id!r} is not a bigram model; known: {BIGRAM_MODEL_IDS}")
    table = _TABLES[model_id]()
    table.setflags(write=False)
    return table


@cache
def bigram_table(model_id: str = BIGRAM_TARGET) -> npt.NDArray[np.float64]:
    """The whole V x V table: row t holds the logits that follow token t (built once, read-only)."""
    table: npt.NDArray[np.float64] = _numerators(model_id).astype(np.float64) / LOGIT_DENOMINATOR
    table.setflags(write=False)
    return table


def bigram_logits(last_token: int, model_id: str = BIGRAM_TARGET) -> npt.NDArray[np.float64]:
    """The logits a ``bigram`` model produces after ``last_token``, whatever came before it."""
    if not 0 <= last_token < VOCAB_SIZE:
        raise InvalidArgument(f"token {last_token} outside the vocabulary of {VOCAB_SIZE}")
    row: npt.NDArray[np.float64] = bigram_table(model_id)[last_token]
    return row


__all__ = [
    "BIGRAM_DRAFT_FAR",
    "BIGRAM_DRAFT_NEAR",
    "BIGRAM_MODEL_IDS",
    "BIGRAM_TARGET",
    "EOS_TOKEN",
    "FIRST_WORD",
    "LOGIT_DENOMINATOR",
    "MAX_NUMERATOR",
    "ROW_KINDS",
    "VOCAB_SIZE",
    "bigram_logits",
    "bigram_table",
    "row_kind",
]
