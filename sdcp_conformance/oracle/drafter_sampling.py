"""A sequential test that a drafter samples each proposed token from exactly the row it publishes (§5.2).

§5.2: "The drafter MUST sample each proposed token from exactly the row it
publishes." The harness reads every rule-2 proposal's q_rows from its own
MLC, so for each proposed token x_i it knows the row q_i the drafter claims
to have drawn it from. Under that claim (the null), conditional on
everything before and on q_i itself, x_i ~ q_i exactly (normalised by the
row's own sum, P1-SAMP-2). A row published with x_i is fixed before x_i is
drawn, so any bet that is a function of q_i and the past is predictable.

Tolerance. A drafter that draws from its binary64 distribution and publishes
it rounded to binary32 (or keeps probabilities in a half-precision format)
samples from a law q' with e^-rho <= q'(t) / q_i(t) <= e^rho on q_i's
support; the composite null is every such law (default rho = 2^-10, well
above half precision's 2^-11). A token with q_i(x_i) = 0 is impossible
under every member of the null: one such draw is decisive (and §6.4 makes
the verifier refuse it, "q[i](x[i]) is zero").

The test is an e-process, the discipline of :mod:`sdcp_conformance.oracle.statistics`:
the average of K test martingales, one per component. A component that bets
on an alternative law a_i has the per-draw factor

    f(x) = ((1 - w) + w a_i(x) / q_i(x)) / (e^rho * E_{q_i}[(1 - w) + w a_i / q_i])

whose expectation is <= 1 under every null member (q' <= e^rho q_i
pointwise). The alternatives are the bugs the issue names, each computable
from what the harness knows: greedy instead of sampled (the row's argmax),
another temperature (q_i^2 and q_i^0.5 renormalised, the draft model's
untempered row), another row (rows published one position late; the draft
model's own row at the drafter's context when it differs from the published
one), the target's p instead of the row, and a fixed token order (the
inverse CDF of q_i at a constant u). Two nonparametric components bet on the
histogram of randomised probability-integral transforms (PIT, ascending ids),
over all draws and per position, with bins learned from the past: under the
null the PIT is uniform (its density is within e^±rho of 1 under the
tolerance), so any drawing scheme that is not random — a constant u, the
same uniforms every round — concentrates it and is caught. With seeded
contracts, components betting on §6.4's HMAC uniforms detect a drafter that
"use[s] this derivation for their own sampling" (§6.4).

By Ville's inequality P(sup_t E_t >= 1/alpha) <= alpha for every null
member and every stopping rule, so the case may stop as soon as E_t
crosses 1/alpha. A certification splits its alpha over its statistical
cases (:func:`~sdcp_conformance.oracle.statistics.case_alpha`).
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from sdcp_conformance.oracle.statistics import AveragedEProcess
from sdcp_conformance.protocol.rng import PURPOSE_ACCEPT, PURPOSE_DRAW, verify_uniform

F = npt.NDArray[np.float64]

DRAFTER_ALPHA = 1e-6
"""False-alarm probability of one drafter certification's statistical part (all its sampling cases together)."""
DRAFTER_RHO = 2.0**-10
"""D-JUDGE-D12: the entry-wise relative tolerance on the law a token is drawn from, around its published row:
twice half precision's rounding (2^-11), so a drafter that draws from its own binary64 or half-precision
distribution and publishes it rounded to binary32 is within the null; it costs the test rho nats per draw."""
WEIGHT = 0.5
"""Mixing weight of every alternative component: f = (1 - w) + w a / q."""
FIXED_U = (0.1, 0.3, 0.5, 0.7, 0.9)
"""The constant uniforms of the "fixed token order" family."""
PIT_BINS = 10

Alternatives = Mapping[str, F]
"""Per draw: family name → the alternative law over the vocabulary."""


def normalised(row: F) -> F:
    total = float(row.sum())
    out: F = row / total if total > 0 else np.zeros_like(row)
    return out


def invert(row: F, u: float) -> int:
    """P1-SAMP-2: the smallest k with u < (d[0]+…+d[k]) / sum(d), sums taken in ascending id."""
    cumulative = np.cumsum(row)
    found = int(np.searchsorted(cumulative / cumulative[-1], u, side="right"))
    return min(found, row.size - 1)


def one_hot(size: int, token: int) -> F:
    row = np.zeros(size)
    row[token] = 1.0
    return row


def powered(row: F, exponent: float) -> F:
    with np.errstate(divide="ignore"):
        out = np.where(row > 0, np.power(np.maximum(row, 1e-300), exponent), 0.0)
    return normalised(out)


# ---------------------------------------------------------------------- the alternative families


def round_alternatives(rows: F, model_rows: F, untempered_rows: F, target_rows: F) -> list[dict[str, F]]:
    """Each draw's alternative laws for one round (rows: M x V as published; the others as the harness computes
    them at the drafter's contexts: the draft model under the profile, the draft model untempered, the target)."""
    m, size = rows.shape
    found: list[dict[str, F]] = []
    for i in range(m):
        q = normalised(rows[i])
        laws = {
            "greedy": one_hot(size, int(np.argmax(q))),
            "temperature/2": powered(q, 2.0),
            "temperature*2": powered(q, 0.5),
            "untempered": normalised(untempered_rows[i]),
            "row-shifted": normalised(model_rows[0]) if i == 0 else normalised(rows[i - 1]),
            "model-row": normalised(model_rows[i]),
            "target-p": normalised(target_rows[i]),
        }
        for u in FIXED_U:
            laws[f"fixed-u={u}"] = one_hot(size, invert(q, u))
        found.append(laws)
    return found


HMAC_VARIANTS = (("purpose-0", PURPOSE_ACCEPT, 0), ("purpose-1", PURPOSE_DRAW, 0), ("purpose-0/0-based",
                                                                                    PURPOSE_ACCEPT, -1))
"""§6.4's derivation as a drafter would misuse it: i the 1-based position (P1-SAMP-3) or 0-based, either purpose."""


def hmac_alternatives(rows: F, seed: int, session: bytes, round_: int) -> list[dict[str, F]]:
    """Per draw: the token §6.4's HMAC uniform would select from the published row, for each variant."""
    m, size = rows.shape
    found = []
    for i in range(m):
        q = normalised(rows[i])
        found.append({f"hmac:{name}": one_hot(size, invert(q, verify_uniform(seed, session, round_, i + 1 + shift,
                                                                             purpose)))
                      for name, purpose, shift in HMAC_VARIANTS})
    return found


# ---------------------------------------------------------------------- the e-process


def bet_and_norm(q: F, law: F, rho: float) -> tuple[F, float]:
    """One component's bet g = (1 - w) + w a / q on q's support, and its normaliser e^rho E_q[g].

    The per-draw factor is g(x) / norm: for every law q' with q'/q in [e^-rho, e^rho] on q's support,
    E_q'[g] <= e^rho E_q[g] (g >= 0), so the factor's expectation is at most 1 under every null member.
    """
    live = q > 0
    ratio = np.zeros_like(q)
    ratio[live] = law[live] / q[live]
    bet: F = (1 - WEIGHT) + WEIGHT * ratio
    return bet, math.exp(rho) * float(np.dot(q, bet))


def pit_density(counts: Sequence[float]) -> F:
    """The histogram bet on the PIT from past counts: a density on [0, 1) with mean 1 under the uniform."""
    total = sum(counts)
    return np.asarray([PIT_BINS * (count + 0.5) / (total + PIT_BINS / 2) for count in counts])


@dataclass
class _Component:
    name: str
    log_wealth: float = 0.0


@dataclass
class _Histogram:
    counts: list[float] = field(default_factory=lambda: [0.0] * PIT_BINS)

    def density(self) -> F:
        return pit_density(self.counts)

    def add(self, u: float) -> None:
        self.counts[min(PIT_BINS - 1, int(u * PIT_BINS))] += 1


@dataclass
class ExactRowTest(AveragedEProcess):
    """The e-process of one case: feed it each round's published rows, tokens and alternatives, in order."""

    alpha: float
    rng: random.Random
    rho: float = DRAFTER_RHO
    nonparametric: bool = True
    components: dict[str, _Component] = field(default_factory=dict)
    power: dict[str, float] = field(default_factory=dict)
    """Family → sum over draws of E_a[log f] for its component: the expected log-wealth had the drafter
    followed that family's law on these very rows (on each row's support)."""
    power_miss: dict[str, float] = field(default_factory=dict)
    """Family → log of the probability that such a drafter never drew a token outside the published row."""
    draws: int = 0
    rounds: int = 0
    decisive: str = ""
    max_log_e: float = -math.inf
    _pit: _Histogram = field(default_factory=_Histogram)
    _pit_by_position: dict[int, _Histogram] = field(default_factory=dict)


    def observe_round(self, rows: F, tokens: Sequence[int], alternatives: Sequence[Alternatives],
                      what: str = "") -> None:
        """One proposal: ``rows`` (M x V as published), its tokens, and each draw's alternatives."""
        self.rounds += 1
        for position, (row, token, laws) in enumerate(zip(rows, tokens, alternatives, strict=True)):
            self.observe(row, int(token), laws, position, what)
            if self.decisive:
                return
        self.max_log_e = max(self.max_log_e, self.log_e)

    def observe(self, row: F, token: int, alternatives: Alternatives, position: int = 0, what: str = "") -> None:
        self.draws += 1
        q = normalised(np.asarray(row, dtype=np.float64))
        if not 0 <= token < q.size or q[token] <= 0:
            self.decisive = self.decisive or (f"{what}: token {token} at position {position + 1} has probability 0 "
                                              "in the row published for it")
            return
        live = q > 0
        for name, law in alternatives.items():
            bet, norm = bet_and_norm(q, law, self.rho)
            component = self.components.setdefault(name, _Component(name))
            component.log_wealth += math.log(bet[token] / norm)
            self._power(name, law, live, bet, norm)
        if self.nonparametric:
            self._pit_bets(q, token, position)

    def _power(self, name: str, law: F, live: npt.NDArray[np.bool_], bet: F, norm: float) -> None:
        """E_a[log f] on the row's support, and log P_a(no token outside it) (such a token is decisive)."""
        inside = float(law[live].sum())
        growth = float(np.dot(law[live], np.log(bet[live] / norm))) / inside if inside > 0 else 0.0
        self.power[name] = self.power.get(name, 0.0) + growth
        self.power_miss[name] = self.power_miss.get(name, 0.0) + math.log(max(min(inside, 1.0), 1e-300))

    def _pit_bets(self, q: F, token: int, position: int) -> None:
        before = float(q[:token].sum())
        u = min(before + self.rng.random() * float(q[token]), 1.0 - 1e-12)
        slack = math.exp(self.rho)
        for name, histogram in (("pit", self._pit),
                                ("pit-by-position", self._pit_by_position.setdefault(position, _Histogram()))):
            bet = histogram.density()[min(PIT_BINS - 1, int(u * PIT_BINS))]
            component = self.components.setdefault(name, _Component(name))
            component.log_wealth += math.log(bet / slack)
            histogram.add(u)

    # ------------------------------------------------------------------ reporting

    def power_statement(self) -> str:
        """For each family: would these rows have convicted a drafter that followed it?"""
        penalty = math.log(max(len(self.components), 1))
        parts = []
        for family, expected in sorted(self.power.items()):
            growth = expected - penalty
            miss = self.power_miss.get(family, 0.0)
            verdict = "yes" if growth >= self.threshold or miss <= math.log(self.alpha) else "no"
            parts.append(f"{family}: E[log e] {growth:.1f}, P(no impossible token) {math.exp(miss):.1e} -> {verdict}")
        return "power (a drafter following each family's law on these rows): " + "; ".join(parts)

    def powerful_against(self) -> dict[str, bool]:
        """Family → whether this run would have convicted a drafter following it (the power statement's verdict)."""
        penalty = math.log(max(len(self.components), 1))
        return {family: expected - penalty >= self.threshold
                or self.power_miss.get(family, 0.0) <= math.log(self.alpha)
                for family, expected in self.power.items()}

    def summary(self, budget: str = "") -> str:
        reason = ("decisive event: " + self.decisive if self.decisive else
                  "e-value reached 1/alpha" if self.rejected else f"budget {budget} exhausted".strip())
        strongest = sorted(self.components.values(), key=lambda c: -c.log_wealth)[:3]
        return "\n".join([
            f"{self.rounds} rounds, {self.draws} draws; log e-value {self._fmt(self.log_e)} (max "
            f"{self._fmt(self.max_log_e)}), threshold log(1/alpha) = {self.threshold:.2f} (alpha = "
            f"{self.alpha:.3g}, rho = {self.rho:.3g}); stopped: {reason}",
            "strongest components: " + ", ".join(f"{c.name} {c.log_wealth:.2f}" for c in strongest),
            self.power_statement(),
        ])

    @staticmethod
    def _fmt(value: float) -> str:
        return "inf" if value == math.inf else f"{value:.2f}"


__all__ = [
    "DRAFTER_ALPHA",
    "DRAFTER_RHO",
    "FIXED_U",
    "HMAC_VARIANTS",
    "WEIGHT",
    "Alternatives",
    "ExactRowTest",
    "bet_and_norm",
    "hmac_alternatives",
    "invert",
    "normalised",
    "one_hot",
    "pit_density",
    "powered",
    "round_alternatives",
]
