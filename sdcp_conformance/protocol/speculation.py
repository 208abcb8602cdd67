"""The drafter's RECOMMENDED choice of M (draft §6.2) and its acceptance estimate (P1-DRF-8).

§6.2: "The expected number of tokens committed per round is
(1 - alpha^(M+1)) / (1 - alpha) for alpha < 1, and M + 1 for alpha = 1; the
drafter chooses the M within its limits that maximizes that quantity divided
by (M * t_d + t_v)."
"""

from __future__ import annotations

import math

from sdcp_conformance.errors import InvalidArgument

DEFAULT_ALPHA_WEIGHT = 0.1
"""D-SPEC-2: weight of one observed position in the EWMA of alpha (P1-DRF-8)."""


def _check_alpha(alpha: float) -> None:
    if not 0.0 <= alpha <= 1.0:
        raise InvalidArgument(f"alpha must lie in [0, 1], got {alpha!r}")


def expected_tokens(alpha: float, m: int) -> float:
    """Expected tokens committed by a round of M proposed tokens (§6.2, [LEVIATHAN])."""
    _check_alpha(alpha)
    if m < 0:
        raise InvalidArgument("M must be non-negative")
    if alpha == 1.0:
        return float(m + 1)
    return (1.0 - alpha ** (m + 1)) / (1.0 - alpha)


def choose_m(alpha: float, t_draft: float, t_verify: float, m_limit: int) -> int:
    """The M in 1..m_limit maximizing expected_tokens / (M * t_d + t_v).

    D-SPEC-1: ties go to the smaller M (fewer drafted tokens for the same rate),
    which is also what makes alpha = 0 choose M = 1 when t_d is zero.
    """
    _check_alpha(alpha)
    if m_limit < 1:
        raise InvalidArgument("m_limit must be at least 1")
    if not (math.isfinite(t_draft) and math.isfinite(t_verify)):
        raise InvalidArgument("times must be finite")
    if t_draft < 0 or t_verify < 0 or t_draft == t_verify == 0:
        raise InvalidArgument("times must be non-negative and not both zero")
    best_m, best_rate = 1, -1.0
    for m in range(1, m_limit + 1):
        rate = expected_tokens(alpha, m) / (m * t_draft + t_verify)
        if rate > best_rate:  # strict: an equal rate keeps the smaller M
            best_m, best_rate = m, rate
    return best_m


def update_alpha(alpha: float, accepted: int, proposed: int, weight: float = DEFAULT_ALPHA_WEIGHT) -> float:
    """Fold one verdict into the per-token EWMA of alpha.

    P1-DRF-8: "alpha for choosing M is per token (an accepted position counts
    1, the first rejected position 0)"; positions after the first rejection
    were never tested and count for nothing. Observations enter in position order.
    """
    _check_alpha(alpha)
    if not 0.0 < weight <= 1.0:
        raise InvalidArgument("weight must lie in (0, 1]")
    if proposed < 1 or not 0 <= accepted <= proposed:
        raise InvalidArgument("need 0 <= a <= M and M >= 1")
    observations = [1.0] * accepted + ([0.0] if accepted < proposed else [])
    for seen in observations:
        alpha += weight * (seen - alpha)
    return min(1.0, max(0.0, alpha))


__all__ = ["DEFAULT_ALPHA_WEIGHT", "choose_m", "expected_tokens", "update_alpha"]
