"""Drafting itself (draft §5.2, §6.2; P1-DRF-4): a :class:`DraftModel` over any next-token logits function.

Under rule 2 each proposed token is drawn from the binary32 row that is
published: §5.2 "The drafter MUST sample each proposed token from exactly the
row it publishes" (D-DRF-9). Under rule 1 the drafter proposes its own greedy
tokens and publishes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.protocol.contract import RULE_GREEDY, RULE_SPECULATIVE_SAMPLING
from sdcp_conformance.protocol.sampling import draw_token, greedy_token, target_distribution
from sdcp_conformance.reference.drafter.ports import QRows

LogitsFn = Callable[[Sequence[int]], npt.NDArray[np.floating]]
"""Next-token logits (one row of V values) after a context."""


def draft_row(logits: npt.ArrayLike, sampling: Mapping[str, int] | None, rule: int) -> QRows:
    """The row a rule-2 drafter publishes for one position: the profile's distribution as binary32."""
    return target_distribution(logits, sampling, rule).astype(np.float32)


def sample_from_row(row: QRows, rng: np.random.Generator) -> int:
    """Draw from the published binary32 row itself (P1-SAMP-2 inverse CDF over the widened row)."""
    return draw_token(row.astype(np.float64), float(rng.random()))


class LogitsDraftModel:
    """A :class:`~sdcp_conformance.reference.drafter.ports.DraftModel` over a logits function.

    Stateless: every call recomputes from the context, so ``forget`` has nothing to drop.
    """

    def __init__(self, logits: LogitsFn, *, vocab_size: int, model_sha256: bytes, tokenizer_sha256: bytes) -> None:
        self._logits = logits
        self.vocab_size = vocab_size
        self.model_sha256 = model_sha256
        self.tokenizer_sha256 = tokenizer_sha256

    def draft(self, session_key: bytes, context: tuple[int, ...], m: int, sampling: Mapping[str, int] | None,
              rule: int, rng: np.random.Generator) -> tuple[tuple[int, ...], QRows | None]:
        self._begin(session_key)
        if m < 1:
            raise InvalidArgument("a proposal has at least one token")
        if rule == RULE_GREEDY:
            return self._greedy(context, m), None
        if rule == RULE_SPECULATIVE_SAMPLING:
            return self._sampled(context, m, sampling, rng)
        raise InvalidArgument(f"unknown acceptance rule {rule}")

    def forget(self, session_key: bytes) -> None:
        pass

    def _begin(self, session_key: bytes) -> None:
        """Called first in every :meth:`draft` with its session; a model keeping state per session overrides it."""

    def _row_logits(self, context: Sequence[int]) -> npt.NDArray[np.float64]:
        logits = np.asarray(self._logits(context), dtype=np.float64)
        if logits.shape != (self.vocab_size,):
            raise InvalidArgument(f"logits have shape {logits.shape}, expected ({self.vocab_size},)")
        return logits

    def _greedy(self, context: tuple[int, ...], m: int) -> tuple[int, ...]:
        # P1-DRF-4: "Under rule 1 a drafter proposes its own greedy tokens";
        # argmax ties go to the smaller id, as in §6.4 rule 1.
        tokens: list[int] = []
        for _ in range(m):
            tokens.append(greedy_token(self._row_logits((*context, *tokens))))
        return tuple(tokens)

    def _sampled(
        self, context: tuple[int, ...], m: int, sampling: Mapping[str, int] | None, rng: np.random.Generator
    ) -> tuple[tuple[int, ...], QRows]:
        tokens: list[int] = []
        rows = np.empty((m, self.vocab_size), dtype=np.float32)
        for position in range(m):
            rows[position] = draft_row(self._row_logits((*context, *tokens)), sampling, RULE_SPECULATIVE_SAMPLING)
            tokens.append(sample_from_row(rows[position], rng))
        return tuple(tokens), rows


def encode_q_rows(rows: QRows) -> bytes:
    """§5.2: rows of V "IEEE 754 binary32 values in little-endian order", concatenated in position order."""
    return np.ascontiguousarray(rows, dtype="<f4").tobytes()


__all__ = ["LogitsDraftModel", "LogitsFn", "draft_row", "encode_q_rows", "sample_from_row"]
