"""The acceptance rules of draft §6.4, truncation of §6.3 and the low-round test of §6.5.2.

Positions are 1-based in the draft (x[1..M], p[1..M+1]) and 0-based in the
arrays here: the draft's p[i] is ``p_rows[i - 1]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.protocol.errors import ProtocolError
from sdcp_conformance.protocol.problems import ProblemType
from sdcp_conformance.protocol.rng import PURPOSE_ACCEPT, PURPOSE_DRAW, UniformSource
from sdcp_conformance.protocol.sampling import FloatRow, draw_token, greedy_token

Rows = npt.NDArray[np.float64]
Q_ROW_DTYPE = np.dtype("<f4")
"""§5.2: q_rows are "IEEE 754 binary32 values in little-endian order"."""


@dataclass(frozen=True)
class RuleOutcome:
    """What a rule decided: ``accepted`` is a (before truncation), ``emitted`` the a+1 tokens."""

    accepted: int
    emitted: list[int]


def _target_rows(p_rows: npt.ArrayLike, tokens: Sequence[int]) -> Rows:
    """p[1..M+1] as a float64 matrix, checked against the M proposed tokens."""
    rows = np.asarray(p_rows, dtype=np.float64)
    if not tokens:
        raise InvalidArgument("a proposal has at least one token")
    if rows.ndim != 2 or rows.shape[0] != len(tokens) + 1 or rows.shape[1] == 0:
        raise InvalidArgument(f"need M+1 = {len(tokens) + 1} target rows, got shape {rows.shape}")
    return rows


def rule1(p_rows: npt.ArrayLike, tokens: Sequence[int]) -> RuleOutcome:
    """Rule 1, greedy.

    §6.4: "x[i] is accepted if it equals argmax p[i], where ties are broken in
    favor of the smallest token identifier. Evaluation stops at the first
    position that is not accepted. The additional token is argmax p[a+1]."
    D-RULE-1: a token outside the vocabulary never equals the argmax, so it is
    simply not accepted (rule 1 has no draft distribution to be inconsistent with).
    """
    rows = _target_rows(p_rows, tokens)
    accepted = 0
    for row, token in zip(rows, tokens, strict=False):
        if token != greedy_token(row):
            break
        accepted += 1
    # 0-based rows[accepted] is the draft's p[a+1].
    extra = greedy_token(rows[accepted])
    return RuleOutcome(accepted, [*tokens[:accepted], extra])


def parse_q_rows(blob: bytes, proposed: int, vocab_size: int) -> Rows:
    """Decode a q_rows object (§5.2, P1-MLC-2) into M x V binary64 values.

    P1-Q-1: "an object of the wrong size ... gets 422 sdcp-bad-proposal".
    """
    expected = proposed * vocab_size * Q_ROW_DTYPE.itemsize
    if len(blob) != expected:
        raise ProtocolError(
            ProblemType.BAD_PROPOSAL,
            f"q_rows holds {len(blob)} octets, expected M*V*4 = {expected}",
        )
    values = np.frombuffer(blob, dtype=Q_ROW_DTYPE).astype(np.float64)
    return values.reshape(proposed, vocab_size)


def check_q_rows(q_rows: npt.ArrayLike, tokens: Sequence[int], vocab_size: int) -> Rows:
    """Rule 2's preconditions, checked before any random draw; returns q as binary64.

    P1-Q-1: rows "of the wrong size or holding negative, NaN or infinite
    values" get sdcp-bad-proposal. §6.4: "a proposal for which q[i](x[i]) is
    zero is rejected, before any random draw, with problem type
    "sdcp-bad-proposal"." The values are used exactly as published, not
    renormalized.
    """
    rows = np.asarray(q_rows, dtype=np.float64)
    if rows.shape != (len(tokens), vocab_size):
        raise _bad_proposal(f"q_rows has shape {rows.shape}, expected ({len(tokens)}, {vocab_size})")
    if not np.isfinite(rows).all() or (rows < 0).any():
        raise _bad_proposal("q_rows holds a negative, NaN or infinite value")
    for position, (row, token) in enumerate(zip(rows, tokens, strict=True), start=1):
        # D-RULE-2: a token outside the vocabulary has no q[i](x[i]) at all; it is
        # "inconsistent with its draft distributions" like a zero one.
        if not 0 <= token < vocab_size:
            raise _bad_proposal(f"x[{position}] = {token} is outside the vocabulary")
        if row[token] <= 0.0:
            raise _bad_proposal(f"q[{position}](x[{position}]) is zero")
    return rows


def _bad_proposal(detail: str) -> ProtocolError:
    return ProtocolError(ProblemType.BAD_PROPOSAL, detail)


def rule2(
    p_rows: npt.ArrayLike,
    q_rows: npt.ArrayLike,
    tokens: Sequence[int],
    uniforms: UniformSource,
) -> RuleOutcome:
    """Rule 2, speculative sampling; uniforms are requested lazily, only those needed.

    §6.4: "For each position, draw r uniformly from [0, 1). Accept x[i] if
    r < min(1, p[i](x[i]) / q[i](x[i])) ... At the first rejected position, the
    additional token is drawn from the normalized residual distribution
    max(0, p[i] - q[i]). If all M tokens are accepted, the additional token is
    drawn from p[M+1]." P1-SAMP-3: the draw uses i = a + 1, purpose 1.
    """
    p = _target_rows(p_rows, tokens)
    q = check_q_rows(q_rows, tokens, p.shape[1])
    for i, token in enumerate(tokens, start=1):
        r = uniforms.uniform(i, PURPOSE_ACCEPT)
        if not r < min(1.0, p[i - 1, token] / q[i - 1, token]):
            extra = draw_token(residual(p[i - 1], q[i - 1]), uniforms.uniform(i, PURPOSE_DRAW))
            return RuleOutcome(i - 1, [*tokens[: i - 1], extra])
    m = len(tokens)
    extra = draw_token(p[m], uniforms.uniform(m + 1, PURPOSE_DRAW))
    return RuleOutcome(m, [*tokens, extra])


def residual(p_row: FloatRow, q_row: FloatRow) -> FloatRow:
    """max(0, p - q), or p itself when that has no mass.

    D-RES-1: a rejection implies q(x) > p(x), so with rows that each sum to one
    the residual has positive mass. It can be all zero only when the published
    q sums to more than one (q is not renormalized) or through rounding; the
    draft then gives no distribution, and we draw from p[i], the distribution
    the output is meant to follow.
    """
    rest = np.maximum(0.0, p_row - q_row)
    return rest if rest.sum() > 0.0 else p_row


def truncate(
    emitted: Sequence[int], stop_tokens: Sequence[int], max_new: int, committed_output: int
) -> tuple[list[int], bool]:
    """§6.3: "It truncates the emitted tokens after the first stop token and at max_new".

    Returns the tokens to commit and whether the session is finished (a stop
    token was kept, or the output reached max_new). D-TRUNC-1: a session whose
    output already holds max_new tokens commits nothing and is finished.
    """
    if not 0 <= committed_output <= max_new:
        raise InvalidArgument("committed output must lie in 0..max_new")
    stops = set(stop_tokens)
    kept = list(emitted)
    for index, token in enumerate(kept):
        if token in stops:
            kept = kept[: index + 1]
            break
    kept = kept[: max_new - committed_output]
    finished = any(token in stops for token in kept) or committed_output + len(kept) == max_new
    return kept, finished


def is_low_round(accepted: int, proposed: int, low_ratio: int | None) -> bool:
    """Whether a round is low (§6.5.2).

    §6.5.2: "A round is low if 100 * a < low_ratio * M, or, when low_ratio is
    zero or absent, if a = 0." P1-CTL-5: a is the rule's count before stop/max_new truncation.
    """
    if proposed < 1 or not 0 <= accepted <= proposed:
        raise InvalidArgument(f"need 0 <= a <= M and M >= 1, got a={accepted}, M={proposed}")
    if not low_ratio:
        return accepted == 0
    if not 0 < low_ratio <= 100:
        raise InvalidArgument("low_ratio must lie in 0..100")
    return 100 * accepted < low_ratio * proposed


__all__ = [
    "Q_ROW_DTYPE",
    "RuleOutcome",
    "check_q_rows",
    "is_low_round",
    "parse_q_rows",
    "residual",
    "rule1",
    "rule2",
    "truncate",
]
