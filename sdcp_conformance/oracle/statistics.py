"""Rule 2's exact outcome laws and a sequential test of them with a guaranteed false-alarm rate.

Exact laws (§6.4 rule 2). For one round the harness knows the target rows
p[1..M+1] (bigram closed form, profile applied by the independent
:mod:`sdcp_conformance.oracle.rule2`), the q rows it published and the tokens
x it sampled from them. Conditional on x, a correct verifier's outcome
(a, y) — a accepted tokens, then y drawn — has the exact law

    P(a, y) = prod_{i<=a} alpha_i * (1 - alpha_{a+1}) * r_{a+1}(y)   for a < M
    P(M, y) = prod_{i<=M} alpha_i * p[M+1](y)

with alpha_i = min(1, p_i(x_i) / q_i(x_i)) and r_i = max(0, p_i - q_i) / sum.
(Averaged over x ~ q this gives P(accept, x) = min(p(x), q(x)) and
P(reject, y) = max(0, p(y) - q(y)); conditioning on x is at least as
informative and lets the harness choose x adversarially only through q.)
Stop tokens coarsen the observation: every outcome whose truncated emission
is the same forms one *cell*, and the laws are compared on cells.

Tolerance model. An IUT may compute p numerically: the composite null is
every IUT whose p' satisfies e^-rho <= p'(t) / p(t) <= e^rho entry-wise (the
same support). The bigram logits are k/16 with |k| <= 255, exact in bf16, and
the designs use temperatures 1/2, 1 and 2 (exact scalings), so the error is
only the softmax's own rounding: <= ~1e-6 in float32, and <= 2^-9 per entry
plus renormalisation when an engine keeps probabilities in bf16. The default
rho = 2^-8 covers the bf16 case with a factor of two. From rho the harness
derives, per round, (i) the outcomes that are impossible for EVERY member of
the null (accepting x with p(x) = 0; rejecting x with p(x) e^-rho >= q(x);
drawing y with p(y) = 0 or, when the residual cannot vanish, with
p(y) e^rho <= q(y)): one of them is decisive on its own; and (ii) a bound
eps_t on the total-variation distance between any null member's law and the
exact law: per position alpha k + (1 - alpha) min(1, k / Z) with
k = e^rho - 1 and Z the residual mass, plus k for the bonus row, summed
(a sequential coupling).

The test. An e-process: the average of K test martingales, one per
alternative component (families of real engine bugs, each mixed with the
exact law at two weights; a "memory" component that bets the IUT repeats an
earlier outcome of the same law, catching shared random streams; and a
nonparametric component that bets on the histogram of randomised
probability-integral transforms). Each component's per-round factor is
g(o) / sup_{P in null} E_P[g] with g = min(c, alternative / exact): the
denominator is the exact worst case over the TV ball (eps_t of mass moved
from the lowest g cells to the highest), so every factor has expectation
<= 1 under every null member, and by Ville's inequality
P(sup_t E_t >= 1/alpha) <= alpha whatever the stopping time. A certification
splits its alpha over its statistical cases (Bonferroni).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Protocol

import numpy as np
import numpy.typing as npt

from sdcp_conformance.models.bigram import VOCAB_SIZE, bigram_logits, bigram_table
from sdcp_conformance.models.registry import mock_model
from sdcp_conformance.oracle import rule2 as plain
from sdcp_conformance.oracle.greedy import next_logits
from sdcp_conformance.oracle.sampling_orders import WRONG_ORDERS, ordered_distribution

F = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]

DEFAULT_ALPHA = 1e-6
"""False-alarm probability of one certification's whole rule-2 statistical part."""

DEFAULT_RHO = 2.0**-8
"""Entry-wise relative tolerance on the IUT's p (see the module docstring)."""

PIT_BINS = 10
_PIT_EDGES = np.linspace(0.0, 1.0, PIT_BINS + 1)
MIX_WEIGHTS = (0.25, 0.75)


@dataclass(frozen=True)
class Tolerance:
    """The null's entry-wise relative tolerance on p: p'(t) / p(t) in [e^-rho, e^rho]."""

    rho: float = DEFAULT_RHO

    @property
    def k(self) -> float:
        return math.expm1(self.rho)


# ---------------------------------------------------------------------- target rows


@cache
def _closed_form(model: str) -> bool:
    return mock_model(model).closed_form == "bigram"


@cache
def _row_cached(model: str, last: int, profile: tuple[tuple[str, int], ...]) -> tuple[float, ...]:
    return tuple(plain.distribution(bigram_logits(last, model).tolist(), dict(profile), 2))


def _key(sampling: Mapping[str, int] | None) -> tuple[tuple[str, int], ...]:
    return tuple(sorted((name, value) for name, value in (sampling or {}).items() if name != "seed"))


def target_row(model: str, context: Sequence[int], sampling: Mapping[str, int] | None) -> F:
    """§4.1 p after ``context`` under a rule-2 profile (cached per last token for bigram models)."""
    if _closed_form(model):
        return np.asarray(_row_cached(model, context[-1], _key(sampling)))
    return np.asarray(plain.distribution(next_logits(model, context).tolist(), sampling, 2))


def profile_variants(model: str, contexts: Sequence[Sequence[int]], sampling: Mapping[str, int] | None
                     ) -> dict[str, F]:
    """p rows as engines that apply the profile wrongly would compute them (the profile families)."""
    profile = dict(sampling or {})
    milli = profile.get("temperature_milli", 1000)
    truncating = bool(profile.get("top_k")) or profile.get("top_p_milli", 1000) < 1000
    variants: dict[str, F] = {}
    if milli not in (0, 1000):
        variants["untempered"] = _rows(model, contexts, {**profile, "temperature_milli": 1000})
        # A logits buffer divided by T in place once per position: row i sees T^(i+1).
        variants["tempered-per-position"] = np.stack([
            np.asarray(plain.distribution((_logits(model, context) / (milli / 1000) ** i).tolist(), profile, 2))
            for i, context in enumerate(contexts)])
    if truncating and milli != 0:
        variants["untruncated"] = _rows(model, contexts, {"temperature_milli": milli})
    if profile.get("top_k") and profile.get("top_p_milli", 1000) < 1000 and milli != 0:
        variants["top-p-before-top-k"] = np.stack([top_p_first(model, context, profile) for context in contexts])
    if profile.get("top_p_milli", 1000) < 1000 and milli not in (0, 1000):
        # Temperature after top-p (the cut made on the untempered distribution); without top-k the two orders
        # below are one.
        names = ("temperature-after-top-p", "top-p-first") if profile.get("top_k") else ("temperature-after-top-p",)
        for name in names:
            variants[name] = np.stack([in_order(model, context, profile, name) for context in contexts])
    return variants


def _logits(model: str, context: Sequence[int]) -> F:
    if not _closed_form(model):
        return next_logits(model, context)
    last = context[-1]
    if not 0 <= last < VOCAB_SIZE:
        return bigram_logits(last, model)  # which refuses it, in its own words
    row: F = _table(model)[last]
    return row


@cache
def _table(model: str) -> F:
    """A bigram model's whole table, once: ``bigram_logits`` builds it afresh on every call."""
    table = bigram_table(model)
    table.setflags(write=False)
    return table


def _rows(model: str, contexts: Sequence[Sequence[int]], sampling: Mapping[str, int] | None) -> F:
    return np.stack([target_row(model, context, sampling) for context in contexts])


def topk_ties(model: str, context: Sequence[int], sampling: Mapping[str, int] | None) -> npt.NDArray[np.bool_]:
    """Tokens tied at the top-k boundary when the tie straddles it (P1-SAMP-1 picks the smaller ids).

    The draft does not say how top-k breaks ties; an IUT that picks other tied
    tokens keeps the same number of them with the same value, so the tolerance
    lets each member of such a group be kept or dropped.
    """
    profile = dict(sampling or {})
    logits = _logits(model, context)
    k = profile.get("top_k", 0)
    ties = np.zeros(logits.size, dtype=bool)
    if profile.get("temperature_milli", 1000) == 0 or not 0 < k < logits.size:
        return ties
    kth = np.sort(logits)[::-1][k - 1]
    tied = logits == kth
    if int((logits > kth).sum() + tied.sum()) > k:
        ties = tied
    return ties


def top_p_first(model: str, context: Sequence[int], sampling: Mapping[str, int]) -> F:
    """Temperature, then top-p, then top-k: the steps in another order than §4.1's."""
    if _closed_form(model) and 0 <= context[-1] < VOCAB_SIZE:  # a row of the table: the same for every context
        return np.asarray(_top_p_first_cached(model, context[-1], _key(sampling)))
    return _top_p_first(model, context, sampling)


@cache
def _top_p_first_cached(model: str, last: int, profile: tuple[tuple[str, int], ...]) -> tuple[float, ...]:
    return tuple(_top_p_first(model, [last], dict(profile)).tolist())


def in_order(model: str, context: Sequence[int], sampling: Mapping[str, int], name: str) -> F:
    """p with §4.1's steps in the wrong order ``name`` (a key of
    :data:`~sdcp_conformance.oracle.sampling_orders.WRONG_ORDERS`)."""
    if _closed_form(model) and 0 <= context[-1] < VOCAB_SIZE:  # a row of the table: the same for every context
        return np.asarray(_in_order_cached(model, context[-1], _key(sampling), name))
    return np.asarray(ordered_distribution(_logits(model, context).tolist(), sampling, WRONG_ORDERS[name]))


@cache
def _in_order_cached(model: str, last: int, profile: tuple[tuple[str, int], ...], name: str) -> tuple[float, ...]:
    return tuple(ordered_distribution(_logits(model, [last]).tolist(), dict(profile), WRONG_ORDERS[name]))


def _top_p_first(model: str, context: Sequence[int], sampling: Mapping[str, int]) -> F:
    nucleus = plain.distribution(_logits(model, context).tolist(),
                                 {"temperature_milli": sampling.get("temperature_milli", 1000),
                                  "top_p_milli": sampling["top_p_milli"]}, 2)
    order = sorted(range(len(nucleus)), key=lambda t: (-nucleus[t], t))[: sampling["top_k"]]
    kept = np.zeros(len(nucleus))
    kept[order] = np.asarray(nucleus)[order]
    normalised: F = kept / kept.sum()
    return normalised


# ---------------------------------------------------------------------- observations


def emission(tokens: Sequence[int], stop: frozenset[int], a: int, y: int) -> tuple[int, ...]:
    """§6.3: the first ``a`` proposed tokens and y, truncated after the first stop token."""
    emitted = [*tokens[:a], y]
    for index, token in enumerate(emitted):
        if token in stop:
            return tuple(emitted[: index + 1])
    return tuple(emitted)


def outcome_of(tokens: Sequence[int], stop: frozenset[int], vocab: int, emitted: Sequence[int]
               ) -> tuple[int, int] | None:
    """The outcome (a, y) of rule 2 that emits ``emitted`` for a proposal of ``tokens``, or None if none does.

    Needs no law: the harness checks a verdict with it as soon as it arrives, wherever the test is computed."""
    emitted = list(emitted)
    if not emitted or len(emitted) > len(tokens) + 1:
        return None
    a, y = len(emitted) - 1, emitted[-1]
    if not 0 <= y < vocab or list(tokens[:a]) != emitted[:a]:
        return None
    if emission(tokens, stop, a, y) != tuple(emitted):
        return None
    return a, y


# ---------------------------------------------------------------------- one round's law


def outcome_law(accept: F, draws: F, bonus: F, reject: F | None = None) -> F:
    """(M+1) x V law of (a, y) from acceptance probabilities, draw rows and the bonus row.

    ``reject`` (default 1 - accept) lets interval bounds pass their own extreme.
    """
    return outcome_laws(accept, draws, bonus, reject)


def outcome_laws(accept: F, draws: F, bonus: F, reject: F | None = None) -> F:
    """:func:`outcome_law` of a batch: ... x M acceptances, ... x M x V draw rows, ... x V bonus rows ->
    ... x (M+1) x V, for any leading axes.

    One pass of numpy for every family of a round (or of many rounds): they differ only in these three inputs.
    Every operation is row-wise, so a law is the same to the last bit whatever else shares its batch.
    """
    lead, m = accept.shape[:-1], accept.shape[-1]
    reach = np.ones((*lead, m + 1))
    np.cumprod(accept, axis=-1, out=reach[..., 1:])
    law = np.empty((*lead, m + 1, bonus.shape[-1]))
    np.multiply((reach[..., :m] * (1.0 - accept if reject is None else reject))[..., None], draws,
                out=law[..., :m, :])
    np.multiply(reach[..., m:], bonus, out=law[..., m, :])
    return law


def _draw_bounds(low: F, high: F, p: F) -> tuple[F, F]:
    """Bounds on the normalised residual from bounds on its unnormalised entries (row-wise)."""
    r_lo, r_hi = np.maximum(0.0, low), np.maximum(0.0, high)
    sum_lo, sum_hi = r_lo.sum(axis=-1, keepdims=True), r_hi.sum(axis=-1, keepdims=True)
    lower = np.divide(r_lo, r_lo + (sum_hi - r_hi), out=np.zeros_like(r_lo), where=r_lo > 0)
    upper = np.divide(r_hi, r_hi + (sum_lo - r_lo), out=np.ones_like(r_hi), where=(r_hi + sum_lo - r_lo) > 0)
    vanishing = sum_lo <= 0
    if vanishing.any():
        # D-RES-1-like fallbacks draw from p: anything on p's support is possible then.
        upper = np.where(vanishing & (p > 0), 1.0, upper)
        lower = np.where(vanishing, 0.0, lower)
    return lower, np.minimum(upper, 1.0)


def _normalised(rows: F) -> F:
    total = rows.sum(axis=-1, keepdims=True)
    if (total > 0).all():  # the common case, without the masked divide's cost (the same quotients)
        quotients: F = rows / total
        return quotients
    normalised: F = np.divide(rows, total, out=np.zeros_like(rows), where=total > 0)
    return normalised


def _at_tokens(rows: F, x: Ints) -> F:
    """``rows[..., i, x[..., i]]``: each position's entry at its proposed token."""
    if x.ndim == 1:  # one round: plain indexing costs less than take_along_axis (the same entries)
        entries: F = rows[np.arange(x.size), x]
        return entries
    taken: F = np.take_along_axis(rows, x[..., None], axis=-1)[..., 0]
    return taken


@dataclass
class _Derived:
    """A round's (or a stack of rounds') exact law and its interval bounds on (a, y), before cells."""

    px: F
    qx: F
    alpha: F
    residual: F
    z: F
    draws: F
    exact: F
    lower: F
    upper: F


def _spread(tolerance: Tolerance) -> tuple[float, float]:
    """(e^-rho, e^rho): the factors every entry of p may be off by."""
    return math.exp(-tolerance.rho), math.exp(tolerance.rho)


def _derive(p: F, q: F, x: Ints, spread: tuple[F | float, F | float], ambiguous: npt.NDArray[np.bool_] | None
            ) -> _Derived:
    """The exact law and its per-outcome bounds over every null member, for one round or a stack of them.

    The bounds are interval arithmetic: alpha' lies in [min(1, p(x) e^-rho / q(x)), min(1, p(x) e^rho / q(x))];
    the residual entry R'(y) in [max(0, p(y) e^-rho - q(y)), max(0, p(y) e^rho - q(y))], normalised against the
    other entries' extreme sums; the bonus row in [p e^-rho, p e^rho]. When the residual could vanish (sum of
    lower entries 0) the draw is bounded only by [0, 1] on p's support.

    ``spread`` is (e^-rho, e^rho): numbers, or arrays broadcasting over the stack. Everything is row-wise.
    """
    m = x.shape[-1]
    px, qx = _at_tokens(p[..., :m, :], x), _at_tokens(q, x)
    alpha = np.minimum(1.0, px / qx)
    residual = np.maximum(0.0, p[..., :m, :] - q)
    z = residual.sum(axis=-1)
    # Z = 0 leaves the draft without a distribution; D-RES-1 (the reference) draws from p then.
    draws = np.where((z > 0)[..., None], _normalised(residual), p[..., :m, :])
    exact = outcome_laws(alpha, draws, p[..., m, :])
    down, up = spread
    p_lo, p_hi = p * down, p * up
    if ambiguous is not None:  # a tie group shares one value: kept or dropped, never another value
        group = np.where(ambiguous, p, 0.0).max(axis=-1, keepdims=True)
        p_lo = np.where(ambiguous, 0.0, p_lo)
        p_hi = np.where(ambiguous, group * up, p_hi)
    alpha_lo = np.minimum(1.0, _at_tokens(p_lo[..., :m, :], x) / qx)
    alpha_hi = np.minimum(1.0, _at_tokens(p_hi[..., :m, :], x) / qx)
    r_lo, r_hi = _draw_bounds(p_lo[..., :m, :] - q, p_hi[..., :m, :] - q, p_hi[..., :m, :])
    lower = outcome_laws(alpha_lo, r_lo, p_lo[..., m, :], reject=1.0 - alpha_hi)
    upper = outcome_laws(alpha_hi, r_hi, np.minimum(1.0, p_hi[..., m, :]), reject=1.0 - alpha_lo)
    return _Derived(px, qx, alpha, residual, z, draws, exact, np.minimum(lower, exact), np.maximum(upper, exact))


@dataclass
class RoundLaw:
    """Everything the harness knows about one rule-2 round before its verdict."""

    p: F
    """(M+1) x V exact target rows: p[1..M+1]."""
    q: F
    """M x V draft rows exactly as published (binary32 values)."""
    tokens: tuple[int, ...]
    stop: frozenset[int] = frozenset()
    variants: dict[str, F] = field(default_factory=dict)
    """Alternative p rows (same shape as ``p``) for the profile families."""
    tolerance: Tolerance = field(default_factory=Tolerance)
    ambiguous: npt.NDArray[np.bool_] | None = None
    """(M+1) x V: tokens tied at the top-k boundary, which an IUT may keep or drop (see :func:`topk_ties`)."""

    def __post_init__(self) -> None:
        self.x: Ints = np.asarray(self.tokens, dtype=np.int64)
        self._take(_derive(self.p, self.q, self.x, _spread(self.tolerance), self.ambiguous))

    def _take(self, derived: _Derived) -> None:
        """Keep the derived arrays and put the law and its bounds on cells."""
        self.px, self.qx, self.alpha = derived.px, derived.qx, derived.alpha
        self.residual, self.z, self.draws, self.exact = derived.residual, derived.z, derived.draws, derived.exact
        self.labels, self.cells = self._cells()
        self.exact_cells = self.on_cells(self.exact)
        self.lower_cells, self.upper_cells = self.on_cells(derived.lower), self.on_cells(derived.upper)
        self.possible = self.upper_cells > 0
        self.possible_cells = np.flatnonzero(self.possible)
        """The cells' indices where :attr:`possible`, ascending."""
        self.lower_mass = float(self.lower_cells.sum())
        self.exact_mass = float(self.exact_cells.sum())

    @property
    def m(self) -> int:
        return len(self.tokens)

    # ------------------------------------------------------------------ tolerance

    def tv_bound(self) -> float:
        """The most total variation the tolerance allows (reported, not used by the test)."""
        return float(min(1.0, 0.5 * (self.upper_cells - self.lower_cells).sum()))

    # ------------------------------------------------------------------ observations

    def emission(self, a: int, y: int) -> tuple[int, ...]:
        """§6.3: the accepted tokens and y, truncated after the first stop token."""
        return emission(self.tokens, self.stop, a, y)

    def _cells(self) -> tuple[Ints, int]:
        m, v = self.m, self.p.shape[1]
        labels = np.arange((m + 1) * v, dtype=np.int64).reshape(m + 1, v)
        first = next((i for i, token in enumerate(self.tokens) if token in self.stop), None)
        if first is None:  # no stop token proposed: every outcome is its own cell
            return labels, labels.size
        # Every outcome that emits x[1..first+1] and stops there is one cell.
        labels[first + 1:] = labels[first, self.tokens[first]]
        _, inverse = np.unique(labels.ravel(), return_inverse=True)
        return inverse.reshape(m + 1, v).astype(np.int64), int(inverse.max()) + 1

    def on_cells(self, law: F) -> F:
        """A law on (a, y) (shape (M+1) x V, or K of them: K x (M+1) x V) summed onto the cells."""
        batch = law.shape[:-2]
        flat = law.reshape(-1, self.labels.size)
        if self.cells == self.labels.size:  # no outcomes merged: the labels are the identity
            return flat.reshape(*batch, self.cells).astype(np.float64, copy=True)
        labels = self.labels.ravel()
        rows = [np.bincount(labels, weights=row, minlength=self.cells) for row in flat]
        return np.stack(rows).reshape(*batch, self.cells).astype(np.float64)

    def cell_of(self, emitted: Sequence[int]) -> int | None:
        """The cell of an observed emission, or None if no outcome of rule 2 emits it."""
        outcome = outcome_of(self.tokens, self.stop, self.p.shape[1], emitted)
        return None if outcome is None else int(self.labels[outcome])


# ---------------------------------------------------------------------- many rounds at once


def _shape_key(law: RoundLaw) -> tuple[object, ...]:
    """Rounds that can share one stack: the same M, vocabulary and profile variants."""
    return law.m, law.p.shape[-1], tuple(law.variants)


@dataclass
class _Stack:
    """The rows of rounds of one shape, stacked on a leading axis: what the families read (see :data:`_Rows`)."""

    p: F
    q: F
    x: Ints
    px: F
    qx: F
    alpha: F
    residual: F
    draws: F

    @property
    def m(self) -> int:
        return int(self.x.shape[-1])


_Rows = RoundLaw | _Stack
"""What the alternative families read: one round, or a stack of rounds (a leading axis each);
both hold ``p``, ``q``, ``x``, ``px``, ``qx``, ``alpha``, ``residual``, ``draws`` and ``m``."""

LawArguments = tuple[F, F, tuple[int, ...], frozenset[int], dict[str, F], Tolerance, "npt.NDArray[np.bool_] | None"]
""":class:`RoundLaw`'s constructor arguments, in order."""

FamilyLaws = tuple[list[str], F]
""":func:`alternative_matrix`'s answer: the families' names and their laws on the cells, one row each."""


def _unfinished(arguments: LawArguments) -> RoundLaw:
    """A :class:`RoundLaw` holding its arguments and nothing derived yet (:meth:`RoundLaw._take` finishes it)."""
    law = RoundLaw.__new__(RoundLaw)
    law.p, law.q, law.tokens, law.stop, law.variants, law.tolerance, law.ambiguous = arguments
    law.x = np.asarray(law.tokens, dtype=np.int64)
    return law


def laws_with_alternatives(rounds: Sequence[LawArguments]) -> list[tuple[RoundLaw, FamilyLaws]]:
    """Each round's :class:`RoundLaw` (from its constructor's arguments) and :func:`alternative_matrix`, computed a
    stack of rounds of one shape at a time.

    numpy's cost per call is most of a round's; rounds of one shape share every call, and the families read the
    stack the laws were derived on. Every operation is row-wise, so each law and matrix equals, to the last bit,
    what the round gives alone.
    """
    laws = [_unfinished(arguments) for arguments in rounds]
    groups: dict[tuple[object, ...], list[int]] = {}
    for index, law in enumerate(laws):
        groups.setdefault(_shape_key(law), []).append(index)
    answers: dict[int, tuple[RoundLaw, FamilyLaws]] = {}
    for members in groups.values():
        group = [laws[i] for i in members]
        if len(group) == 1:  # one round: the constructor's own path, without a stack's indexing
            law = group[0]
            law._take(_derive(law.p, law.q, law.x, _spread(law.tolerance), law.ambiguous))
            answers[members[0]] = (law, alternative_matrix(law))
            continue
        p, q, x = (np.stack([getattr(law, name) for law in group]) for name in ("p", "q", "x"))
        down, up = (np.asarray(factors)[:, None, None] for factors in zip(*(_spread(law.tolerance) for law in group),
                                                                          strict=True))
        ambiguous = None
        if any(law.ambiguous is not None for law in group):
            ambiguous = np.stack([np.zeros(law.p.shape, dtype=bool) if law.ambiguous is None else law.ambiguous
                                  for law in group])
        derived = _derive(p, q, x, (down, up), ambiguous)
        for k, law in enumerate(group):
            law._take(_Derived(*(getattr(derived, name)[k] for name in _Derived.__dataclass_fields__)))
        stack = _Stack(p, q, x, derived.px, derived.qx, derived.alpha, derived.residual, derived.draws)
        variants = {name: np.stack([law.variants[name] for law in group]) for name in group[0].variants}
        names, stacked = _family_laws(stack, variants)
        for index, law, family_laws in zip(members, group, stacked, strict=True):
            answers[index] = (law, (names, law.on_cells(family_laws)))
    return [answers[index] for index in range(len(laws))]


# ---------------------------------------------------------------------- alternative families


Parts = tuple[F, F, F]
"""A family's (acceptance probabilities M, draw rows M x V, bonus row V): its law is their :func:`outcome_law`.

Every family reads a round's rows through :data:`_Rows` and works on any leading axes: one round, or a stack."""


def _family_rows(law: _Rows, p: F, *, draw_only: bool = False) -> Parts:
    """The law of an engine that uses rows ``p`` (for the draw only, or for everything)."""
    m = law.m
    accept = law.alpha if draw_only else np.minimum(1.0, _at_tokens(p[..., :m, :], law.x) / law.qx)
    rest = np.maximum(0.0, p[..., :m, :] - law.q)
    draws = np.where((rest.sum(axis=-1) > 0)[..., None], _normalised(rest), _normalised(p[..., :m, :]))
    return accept, draws, _normalised(p[..., m, :])


def _uniform_reused(law: _Rows) -> Parts:
    """One r for the test and the draw: given a rejection r lies in [alpha, 1), so y is a CDF slice."""
    draws = law.draws
    cumulative = np.cumsum(draws, axis=-1)
    upper = cumulative / np.maximum(cumulative[..., -1:], 1e-300)
    lower = np.concatenate([np.zeros_like(upper[..., :1]), upper[..., :-1]], axis=-1)
    start = law.alpha[..., None]
    overlap = np.maximum(np.minimum(upper, 1.0) - np.maximum(lower, start), 0.0)
    sliced = np.where((law.alpha < 1.0)[..., None], _normalised(overlap), draws)
    return law.alpha, sliced, law.p[..., law.m, :]


def _accept_with_p(law: _Rows) -> Parts:
    """Exact-match verification (or q taken as one-hot): accept with p(x), else emit a fresh y != x."""
    without = law.p[..., :law.m, :].copy()
    np.put_along_axis(without, law.x[..., None], 0.0, axis=-1)
    return law.px, _normalised(without), law.p[..., law.m, :]


FAMILIES: dict[str, Callable[[_Rows], Parts]] = {
    "residual-from-p": lambda law: (law.alpha, _normalised(law.p[..., :law.m, :]), law.p[..., law.m, :]),
    "residual-softmax": lambda law: (
        law.alpha, _normalised(np.exp(law.residual - law.residual.max(axis=-1, keepdims=True))),
        law.p[..., law.m, :]),
    "bonus-from-q": lambda law: (law.alpha, law.draws, _normalised(law.q[..., -1, :])),
    "bonus-from-p[M]": lambda law: (law.alpha, law.draws, law.p[..., law.m - 1, :]),
    "rows-shifted": lambda law: _family_rows(law, np.concatenate([law.p[..., 1:, :], law.p[..., -1:, :]], axis=-2)),
    "uniform-reused": _uniform_reused,
    "accept-with-p(x)": _accept_with_p,
    "ratio-inverted": lambda law: (np.minimum(1.0, law.qx / np.maximum(law.px, 1e-300)), law.draws,
                                   law.p[..., law.m, :]),
}
"""Alternative laws, each the exact law of one class of engine bug on this round (as its parts)."""


def _family_laws(law: _Rows, variants: Mapping[str, F]) -> tuple[list[str], F]:
    """Every family's law on (a, y): names, and an array ... x families x (M+1) x V."""
    parts = {name: build(law) for name, build in FAMILIES.items()}
    for name, rows in variants.items():
        parts[f"profile:{name}"] = _family_rows(law, rows)
        parts[f"profile:{name}:draw-only"] = _family_rows(law, rows, draw_only=True)
    axis = law.x.ndim - 1  # the families' axis comes after the stack's, if any
    accept, draws, bonus = (np.stack(column, axis=axis) for column in zip(*parts.values(), strict=True))
    return list(parts), outcome_laws(accept, draws, bonus)


def alternative_matrix(law: RoundLaw) -> FamilyLaws:
    """Every family's law on ``law``'s cells, one row each (profile families only where the profile makes them
    differ), computed in one batch."""
    names, laws = _family_laws(law, law.variants)
    return names, law.on_cells(laws)


def alternatives(law: RoundLaw) -> dict[str, F]:
    """:func:`alternative_matrix` by family name."""
    names, matrix = alternative_matrix(law)
    return dict(zip(names, matrix, strict=True))


# ---------------------------------------------------------------------- robust e-values


def robust_mean(lower: F, upper: F, g: F) -> float:
    """sup of E_P[g] over laws P on the cells with lower <= P <= upper (a fractional knapsack)."""
    base = float(np.dot(lower, g))
    remaining = max(0.0, 1.0 - float(lower.sum()))
    order = np.argsort(-g, kind="stable")
    room = (upper - lower)[order]
    taken = np.clip(remaining - (np.cumsum(room) - room), 0.0, room)
    return base + float(np.dot(taken, g[order]))


def _robust_means(lower: F, upper: F, g: F, lower_mass: float | None = None) -> F:
    """:func:`robust_mean` of every row of ``g`` at once (the same knapsack, row-wise).

    ``lower_mass`` is the sum of the lower bounds over every cell, when ``lower`` holds only some of them.
    """
    remaining = max(0.0, 1.0 - float(lower.sum() if lower_mass is None else lower_mass))
    order = np.argsort(-g, axis=1)  # ties in g add the same amount in any order
    room = (upper - lower)[order]
    # remaining - (cumsum - room), clipped to [0, room]: in place, as numpy's per-call cost is most of this
    taken = np.cumsum(room, axis=1)
    np.subtract(taken, room, out=taken)
    np.subtract(remaining, taken, out=taken)
    np.maximum(taken, 0.0, out=taken)
    np.minimum(taken, room, out=taken)
    ordered = g[np.arange(g.shape[0])[:, None], order]
    means: F = g @ lower + np.einsum("ij,ij->i", taken, ordered)
    return means


@dataclass
class Component:
    name: str
    log_wealth: float = 0.0
    power_log: float = 0.0
    """Sum over rounds of E_A[log factor]: the expected log-wealth if the IUT followed this law."""
    power_miss: float = 0.0
    """Sum over rounds of log P_A(no impossible cell): log of the chance of no decisive event."""


class _Wealth(Protocol):
    log_wealth: float


def _mean_log_wealth(components: Iterable[_Wealth]) -> float:
    """log of the average of the components' wealths (0 with no component: an e-process starts at 1)."""
    values = [component.log_wealth for component in components]
    if not values:
        return 0.0
    top = max(values)
    return top + math.log(sum(math.exp(value - top) for value in values) / len(values))


class AveragedEProcess:
    """An e-process that is the average of its components' test martingales: under the null its expectation
    stays at most 1, so rejecting when it reaches 1/alpha is a level-alpha test at any stopping time (Ville).
    A decisive event (an outcome impossible under the null) rejects outright."""

    alpha: float
    components: Mapping[str, _Wealth]
    decisive: str

    @property
    def threshold(self) -> float:
        return math.log(1.0 / self.alpha)

    @property
    def log_e(self) -> float:
        return math.inf if self.decisive else _mean_log_wealth(self.components.values())

    @property
    def rejected(self) -> bool:
        return bool(self.decisive) or self.log_e >= self.threshold


@dataclass
class Rule2EProcess(AveragedEProcess):
    """The sequential test of one case: feed it each round's law and observed cell, in a fixed order."""

    alpha: float
    rng: random.Random
    components: dict[str, Component] = field(default_factory=dict)
    rounds: int = 0
    decisive: str = ""
    max_log_e: float = -math.inf
    _pit_counts: list[float] = field(default_factory=lambda: [0.0] * PIT_BINS)
    _memory: dict[bytes, list[int]] = field(default_factory=dict)
    _log_e: float = 0.0
    """The average of the components' wealths as of the last round (the test reads it several times a round)."""
    explained_by: tuple[str, ...] = ()
    """The alternative families under which the decisive outcome is possible (none: no family explains it, or
    the emission is no rule-2 outcome at all): what the impossible outcome says about the bug."""

    @property
    def log_e(self) -> float:
        return math.inf if self.decisive else self._log_e

    def update(self, law: RoundLaw, cell: int | None, what: str = "",
               family_laws: FamilyLaws | None = None) -> None:
        """One round: ``cell`` is the observed cell (None: an emission no rule-2 outcome produces).

        ``family_laws`` is the round's :func:`alternative_matrix`, when it was computed with other rounds'."""
        self.rounds += 1
        if cell is None or not law.possible[cell]:
            if not self.decisive:
                self.decisive = (f"{what}: an outcome that no verifier within the tolerance can produce (exact "
                                 f"probability {_prob(law, cell)})")
                if cell is not None:
                    names, matrix = family_laws or alternative_matrix(law)
                    self.explained_by = tuple(name for name, chance in zip(names, matrix[:, cell].tolist(),
                                                                           strict=True) if chance > 0)
                self.decisive += (f"; possible under the alternatives {', '.join(self.explained_by)}"
                                  if self.explained_by else "; possible under none of the alternatives")
            return
        # Every component's bet at once, one row each of one matrix: numpy's per-call cost is paid once per
        # round, not once per component. Only the cells some null member can produce take part: elsewhere
        # upper = lower = 0, so a bet there adds nothing to any mean (and often most cells are such).
        names, live_bets, totals = self._bets(law, cell, family_laws or alternative_matrix(law))
        possible = law.possible_cells
        upper = law.upper_cells[possible]
        g = _ratio(live_bets, upper)
        norms = _robust_means(law.lower_cells[possible], upper, g, law.lower_mass)
        at = int(np.searchsorted(possible, cell))
        factors = np.log(np.maximum(g[:, at], 1e-300) / norms)
        # Power bookkeeping (reported, not tested): E_A[log factor] and log P_A(no impossible cell) per row.
        positive = live_bets > 0
        logs = np.log(np.maximum(g, 1e-300) / norms[:, None], where=positive, out=np.zeros_like(g))
        expected = np.einsum("ij,ij->i", live_bets, logs)
        miss = live_bets.sum(axis=1) / np.maximum(totals, 1e-300)
        misses = np.log(np.clip(miss, 1e-300, 1.0))
        for name, factor, power, missed in zip(names, factors.tolist(), expected.tolist(), misses.tolist(),
                                               strict=True):
            component = self.components.get(name)
            if component is None:
                component = self.components[name] = Component(name)
            component.log_wealth += factor
            component.power_log += power
            component.power_miss += missed
        self._remember(law, cell)
        self._log_e = _mean_log_wealth(self.components.values())
        self.max_log_e = max(self.max_log_e, self._log_e)

    def _bets(self, law: RoundLaw, cell: int, family_laws: FamilyLaws) -> tuple[list[str], F, F]:
        """The components' bets on the possible cells, one row each, and each row's total over every cell: every
        family mixed with the exact law at each weight, the memory bet and the PIT histogram bet."""
        names, matrix = family_laws
        possible = law.possible_cells
        weights = np.asarray(MIX_WEIGHTS)[None, :, None]
        exact = law.exact_cells[possible]
        mixed = ((1 - weights) * exact + weights * matrix[:, possible][:, None, :]).reshape(-1, possible.size)
        mixed_totals = ((1 - weights[..., 0]) * law.exact_mass + weights[..., 0] * matrix.sum(axis=1)[:, None]).ravel()
        seen = self._memory.get(_law_key(law), [])
        # Observed cells are possible ones: the empirical law lives on them.
        empirical = np.bincount(seen, minlength=law.cells)[possible] / len(seen) if seen else exact
        memory = 0.5 * exact + 0.5 * empirical
        pit = self._pit_bet(law, cell)
        bets = np.concatenate([mixed, memory[None], pit[possible][None]])
        totals = np.concatenate([mixed_totals, [0.5 * law.exact_mass + 0.5, float(pit.sum())]])
        labels = [f"{name}@{weight}" for name in names for weight in MIX_WEIGHTS]
        return [*labels, "memory", "pit-histogram"], bets, totals

    def _pit_bet(self, law: RoundLaw, cell: int) -> F:
        """Nonparametric component: a histogram bet on the randomised PIT (cells by ascending exact probability).

        Under the exact law u is uniform; the bet spreads each cell's exact
        probability over the histogram's bins, which is again a distribution
        on the cells. The PIT of this round's outcome is recorded afterwards.
        """
        base = law.exact_cells / law.exact_cells.sum()
        order = np.lexsort((np.arange(law.cells), base))
        starts = np.empty(law.cells)
        starts[order] = np.cumsum(base[order]) - base[order]
        total = sum(self._pit_counts)
        bins = PIT_BINS * np.asarray([(count + 0.5) / (total + PIT_BINS / 2) for count in self._pit_counts])
        ends = starts + base
        overlap = np.maximum(np.minimum(ends[:, None], _PIT_EDGES[None, 1:])
                             - np.maximum(starts[:, None], _PIT_EDGES[None, :-1]), 0.0)
        u = min(float(starts[cell] + self.rng.random() * base[cell]), 1.0 - 1e-12)
        self._pit_counts[min(PIT_BINS - 1, int(u * PIT_BINS))] += 1
        bet: F = overlap @ bins
        return bet

    def _remember(self, law: RoundLaw, cell: int) -> None:
        self._memory.setdefault(_law_key(law), []).append(cell)

    def forget_outcomes(self) -> None:
        """Drop the outcomes kept for the memory bet (a test that is over needs them no more; they are large)."""
        self._memory.clear()

    # ------------------------------------------------------------------ reporting

    def strongest(self, count: int = 3) -> list[Component]:
        return sorted(self.components.values(), key=lambda c: -c.log_wealth)[:count]

    def summary(self, budget: int) -> str:
        """The evidence: e-value, rounds, stopping reason and the power analysis."""
        reason = ("decisive event: " + self.decisive if self.decisive else
                  "e-value reached 1/alpha" if self.rejected else f"round budget {budget} exhausted")
        lines = [f"rounds {self.rounds}; log e-value {self._fmt(self.log_e)} (max {self._fmt(self.max_log_e)}), "
                 f"threshold log(1/alpha) = {self.threshold:.2f} (alpha = {self.alpha:.3g}); stopped: {reason}",
                 "strongest components: " + ", ".join(f"{c.name} {c.log_wealth:.2f}" for c in self.strongest())]
        lines.append(self.power_statement())
        return "\n".join(lines)

    def power_statement(self) -> str:
        """For each bug family: would this run have rejected an IUT that followed its law?"""
        families: dict[str, tuple[float, float]] = {}
        penalty = math.log(max(len(self.components), 1))
        for component in self.components.values():
            family = component.name.split("@")[0]
            if component.name in ("memory", "pit-histogram"):
                continue
            best = families.get(family, (-math.inf, 0.0))
            families[family] = (max(best[0], component.power_log - penalty), component.power_miss)
        parts = []
        for family, (expected, miss) in sorted(families.items()):
            verdict = "yes" if expected >= self.threshold or miss <= math.log(self.alpha) else "no"
            parts.append(f"{family}: E[log e] {expected:.1f}, P(no impossible event) {math.exp(miss):.1e} -> {verdict}")
        return "power (an IUT following each family's law over these rounds): " + "; ".join(parts)

    @staticmethod
    def _fmt(value: float) -> str:
        return "inf" if value == math.inf else f"{value:.2f}"


def _ratio(alternative: F, upper: F) -> F:
    """The bet alternative / upper: its mean is <= 1 under every null member, since P <= upper cell-wise.

    ``alternative`` may hold one bet per row.
    """
    return np.divide(alternative, upper, out=np.zeros_like(alternative), where=upper > 0)


def _prob(law: RoundLaw, cell: int | None) -> str:
    return "0 (not a rule-2 emission)" if cell is None else f"{law.exact_cells[cell]:.3g}"


def _law_key(law: RoundLaw) -> bytes:
    return law.exact_cells.tobytes() + bytes(str(law.tokens), "ascii")


def case_alpha(total: float, cases: int) -> float:
    """Bonferroni: each of ``cases`` statistical tests gets total / cases."""
    return total / max(cases, 1)


def sample_cell(law: RoundLaw, matrix: F, rng: np.random.Generator) -> int:
    """Draw an outcome from ``matrix`` (a law on (a, y)) and return its cell (for simulations)."""
    flat = matrix.ravel() / matrix.sum()
    return int(law.labels.ravel()[rng.choice(flat.size, p=flat)])


__all__ = [
    "DEFAULT_ALPHA",
    "DEFAULT_RHO",
    "FAMILIES",
    "AveragedEProcess",
    "Component",
    "FamilyLaws",
    "LawArguments",
    "Parts",
    "RoundLaw",
    "Rule2EProcess",
    "Tolerance",
    "alternative_matrix",
    "alternatives",
    "case_alpha",
    "emission",
    "in_order",
    "laws_with_alternatives",
    "outcome_law",
    "outcome_laws",
    "outcome_of",
    "profile_variants",
    "robust_mean",
    "sample_cell",
    "target_row",
    "top_p_first",
    "topk_ties",
]
