"""Adversarial drafting designs for the rule-2 statistical test: how the harness, as drafter, picks q.

Each design states the failures it targets. A design is pure (no I/O): the
suite drives it against the IUT, the calibration benchmark against a
simulation. The drafter obeys §5.2 ("The drafter MUST sample each proposed
token from exactly the row it publishes"): every token is drawn, by inverse
CDF with the harness's own seeded random numbers, from the binary32 row that
is published.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, cached_property

import numpy as np
import numpy.typing as npt

from sdcp_conformance.models.bigram import EOS_TOKEN, FIRST_WORD, VOCAB_SIZE, bigram_logits
from sdcp_conformance.oracle import rule2 as plain
from sdcp_conformance.oracle.statistics import (
    DEFAULT_RHO,
    LawArguments,
    RoundLaw,
    Tolerance,
    outcome_of,
    profile_variants,
    target_row,
    topk_ties,
)

F = npt.NDArray[np.float64]
MODEL = "bigram"


@dataclass(frozen=True)
class Design:
    """One adversarial way of drafting, and the budget of its case."""

    name: str
    targets: str
    q_kind: str
    m: int
    sampling: Mapping[str, int]
    sessions: int
    rounds: int
    """Round budget of the case (all sessions together)."""
    stop: tuple[int, ...] = ()
    policy: tuple[int, Mapping[str, int]] | None = None
    """(rounds after which a session's profile changes, the new profile) — §6.6."""
    identical: bool = False
    """All sessions share one prompt and the drafter's uniforms, so equal states propose equal tokens."""
    prompts: tuple[tuple[int, ...], ...] = field(default=())

    def prompt(self, index: int) -> tuple[int, ...]:
        if self.identical:
            return (5, 9, 14)
        return self.prompts[index % len(self.prompts)] if self.prompts else (5, 9, FIRST_WORD + (17 * index) % 120)


# ---------------------------------------------------------------------- q rows


def _one_hot(token: int) -> F:
    row = np.zeros(VOCAB_SIZE)
    row[token] = 1.0
    return row


def _low_token(p: F, context: Sequence[int]) -> int:
    """One of the eight least probable non-special tokens of p (still in p's support)."""
    candidates = [t for t in np.argsort(p, kind="stable") if t >= FIRST_WORD and p[t] > 0][:8]
    return int(candidates[(context[-1] * 5) % len(candidates)])


def _signs(context: Sequence[int]) -> F:
    return np.asarray([1.0 if (t + context[-1]) % 2 else -1.0 for t in range(VOCAB_SIZE)])


EXCLUDED_SPREAD = 4
"""How many of the tokens p's truncation excludes first the ``beyond-support`` drafter puts mass on."""


def _excluded_first(p: F, context: Sequence[int], sampling: Mapping[str, int]) -> F:
    """Equal mass on the :data:`EXCLUDED_SPREAD` tokens that p excludes but that are the most probable without
    top-k and top-p: the tokens a wrong order of §4.1's steps keeps first (p itself if p excludes none)."""
    untruncated = target_row(MODEL, context, {"temperature_milli": sampling.get("temperature_milli", 1000)})
    excluded = [int(t) for t in np.argsort(-untruncated, kind="stable") if p[t] == 0.0][:EXCLUDED_SPREAD]
    if not excluded:
        return p
    row = np.zeros(VOCAB_SIZE)
    row[excluded] = 1.0 / len(excluded)
    return row


def draft_row(kind: str, context: Sequence[int], sampling: Mapping[str, int]) -> F:
    """The design's q after ``context`` (float64; it is published as binary32)."""
    p = target_row(MODEL, context, sampling)
    if kind == "p":
        row = p
    elif kind == "mode-boost":
        row = 0.5 * p + 0.5 * _one_hot(int(np.argmax(p)))
    elif kind == "low-peak":
        row = 0.1 * p + 0.9 * _one_hot(_low_token(p, context))
    elif kind == "plus-minus":
        row = p * (1.0 + 0.2 * _signs(context))
    elif kind == "draft-near":
        row = target_row("bigram-draft-near", context, sampling)
    elif kind == "stop-boost":
        row = 0.6 * p + 0.4 * _one_hot(EOS_TOKEN)
    elif kind == "beyond-support":
        row = 0.5 * p + 0.5 * _excluded_first(p, context, sampling)
    else:
        raise ValueError(f"unknown q kind {kind!r}")
    normalised: F = row / row.sum()
    return normalised


def published(row: F) -> F:
    """§5.2: what the verifier reads back — binary32 values."""
    return np.asarray(row, dtype=np.float32).astype(np.float64)


# ---------------------------------------------------------------------- fragile rows


@cache
def fragile(last: int, profile: tuple[tuple[str, int], ...], rho: float = DEFAULT_RHO) -> bool:
    """Whether an IUT within the tolerance could cut top-p after ``last`` differently.

    A top-p running sum within the tolerance of the threshold could keep one
    token more or less, and a tie straddling the cut is broken by P1-SAMP-1 (a
    profile choice): rounds touching such rows are not counted by the test
    (decided before the verdict, so the test stays valid). Top-k ties are in
    the tolerance model instead (:func:`~sdcp_conformance.oracle.statistics.topk_ties`).
    """
    sampling = dict(profile)
    top_p = sampling.get("top_p_milli", 1000)
    if top_p >= 1000:
        return False
    probs = np.asarray(plain.distribution(bigram_logits(last, MODEL).tolist(),
                                          {key: value for key, value in sampling.items() if key != "top_p_milli"}, 2))
    ordered = np.sort(probs)[::-1]
    running = np.cumsum(ordered)
    j = int(np.searchsorted(running, top_p / 1000))
    margin = 4 * math.expm1(rho)
    near = abs(running[min(j, running.size - 1)] - top_p / 1000) <= margin or (
        j > 0 and abs(running[j - 1] - top_p / 1000) <= margin)
    tied = j + 1 < ordered.size and ordered[j] == ordered[j + 1] and ordered[j] > 0
    return bool(near or tied)


def _profile_key(sampling: Mapping[str, int]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted((key, value) for key, value in sampling.items() if key != "seed"))


def avoid_fragile(row: F, sampling: Mapping[str, int]) -> F:
    """q with no mass on tokens whose own row would be fragile (keeps later positions countable)."""
    kept = row * _robust_tokens(_profile_key(sampling))
    return kept / kept.sum() if kept.sum() > 0 else row


@cache
def _robust_tokens(key: tuple[tuple[str, int], ...]) -> F:
    """1 for every token whose own row is not fragile under the profile, 0 for the others."""
    mask = np.asarray([0.0 if fragile(t, key) else 1.0 for t in range(VOCAB_SIZE)])
    mask.setflags(write=False)
    return mask


# ---------------------------------------------------------------------- proposals


@dataclass(frozen=True)
class RoundSpec:
    """What fixes a drafted round's exact law: a few small values, so the law can be rebuilt wherever the test runs.

    Under the bigram closed form of :data:`MODEL` every row of a round (q, p, the profile variants, the top-k
    ties) depends on the context only through its last token, so the law is a function of these fields alone;
    :meth:`law` rebuilds it the same way in any process.
    """

    q_kind: str
    stop: tuple[int, ...]
    profile: tuple[tuple[str, int], ...]
    """The sampling profile without its seed (sorted items)."""
    last: int
    """The last token of the context the proposal extends."""
    tokens: tuple[int, ...]
    rho: float

    def law(self) -> RoundLaw:
        return RoundLaw(*self.law_arguments())

    def law_arguments(self) -> LawArguments:
        """:class:`RoundLaw`'s arguments for this round (:func:`laws_with_alternatives` takes many rounds' at once)."""
        sampling = dict(self.profile)
        positions = [_position(self.q_kind, token, self.profile) for token in (self.last, *self.tokens)]
        m = len(self.tokens)
        contexts = [[self.last, *self.tokens[:i]] for i in range(m + 1)]  # each row needs only its last token
        ties = np.stack([position.ties for position in positions])
        return (np.stack([position.p for position in positions]),
                np.stack([position.q for position in positions[:m]]), self.tokens, frozenset(self.stop),
                profile_variants(MODEL, contexts, sampling), Tolerance(self.rho), ties if ties.any() else None)

    def outcome(self, emitted: Sequence[int]) -> tuple[int, int] | None:
        """The rule-2 outcome (a, y) that emits ``emitted``, or None if none does (no law needed)."""
        return outcome_of(self.tokens, frozenset(self.stop), VOCAB_SIZE, emitted)


@dataclass(frozen=True)
class DraftedRound:
    """A proposal: the tokens, the published rows, and what fixes the exact law of its outcome."""

    tokens: tuple[int, ...]
    q: F
    spec: RoundSpec
    counted: bool
    """False when a row is fragile: the round is sent but the test ignores it."""

    @cached_property
    def law(self) -> RoundLaw:
        """The exact law of the outcome, built on first use (the harness's test builds it from :attr:`spec`)."""
        return self.spec.law()


@dataclass(frozen=True)
class _Position:
    """What a design knows about one position, a function of the token before it (bigram closed form)."""

    q: F
    """The published row (binary32 values)."""
    cumulative: F
    """Its running sums in ascending id (P1-SAMP-2's order), over their total."""
    p: F
    ties: npt.NDArray[np.bool_]
    fragile: bool


@cache
def _position(kind: str, last: int, profile: tuple[tuple[str, int], ...]) -> _Position:
    sampling = dict(profile)
    row = draft_row(kind, [last], sampling)
    if sampling.get("top_p_milli", 1000) < 1000:
        row = avoid_fragile(row, sampling)
    row = published(row)
    running = np.cumsum(row)  # a sequential sum, as P1-SAMP-2 takes it
    arrays = (row, running / running[-1], target_row(MODEL, [last], sampling), topk_ties(MODEL, [last], sampling))
    for array in arrays:
        array.setflags(write=False)
    return _Position(*arrays, fragile=fragile(last, profile))


def _draw(position: _Position, u: float) -> int:
    """P1-SAMP-2 on the published row: the smallest k with u < (d[0]+...+d[k]) / sum(d)."""
    return min(int(np.searchsorted(position.cumulative, u, side="right")), position.q.size - 1)


def draft_round(design: Design, context: Sequence[int], sampling: Mapping[str, int], m: int,
                uniforms: Sequence[float], tolerance: Tolerance) -> DraftedRound:
    """Sample M tokens from the published rows with the drafter's ``uniforms``; the round's law follows from them.

    Every row here depends on the context only through its last token (the bigram closed form of
    :data:`MODEL`), so each position's rows are computed once per (design kind, token, profile).
    """
    key = _profile_key(sampling)
    tokens: list[int] = []
    positions: list[_Position] = []
    for i in range(m):
        position = _position(design.q_kind, tokens[-1] if tokens else context[-1], key)
        tokens.append(_draw(position, uniforms[i]))
        positions.append(position)
    positions.append(_position(design.q_kind, tokens[-1], key))  # p[M+1]'s row
    truncating = sampling.get("top_p_milli", 1000) < 1000
    counted = not truncating or not any(position.fragile for position in positions)
    q = np.stack([position.q for position in positions[:m]])
    spec = RoundSpec(design.q_kind, design.stop, key, context[-1], tuple(tokens), tolerance.rho)
    return DraftedRound(tuple(tokens), q, spec, counted)


def sampling_for(design: Design, session_round: int) -> Mapping[str, int]:
    """The profile of a session's round (1-based) under the design's policy change (§6.6)."""
    if design.policy is not None and session_round > design.policy[0]:
        return design.policy[1]
    return design.sampling


def drafter_uniforms(rng: random.Random, m: int) -> list[float]:
    return [rng.random() for _ in range(m)]


T1 = {"temperature_milli": 1000}
TRUNCATED = {"temperature_milli": 1000, "top_k": 4, "top_p_milli": 600}
AFTER_POLICY = {"temperature_milli": 500, "top_k": 20}
STEP_ORDER = {"temperature_milli": 500, "top_k": 16, "top_p_milli": 750}
"""Temperature 1/2 (an exact scaling) with top-k and top-p: after many contexts every wrong order of §4.1's steps
keeps more tokens than §4.1's p, each its own number (the seeded case VER-6.4-RULE2-012 uses ten of them)."""

DESIGNS: tuple[Design, ...] = (
    Design("q-equals-p", "bonus draws (bonus from q or from p[M], rows off by one) and the acceptance law "
           "(exact-match, one-hot q): every token should be accepted", "p", 4, T1, 6, 240),
    Design("mode-boost", "residual draws: residual from p or softmax-normalised, ratio inverted — q exceeds p "
           "on p's mode, so the residual excludes the most likely token", "mode-boost", 3, T1, 6, 240),
    Design("low-peak", "q peaked on a low-p token: acceptance nearly never, residual draws almost every round "
           "(ratio inverted, q one-hot, softmax residual)", "low-peak", 2, T1, 6, 200),
    Design("plus-minus", "q(x) 20 % above or below p(x): the clamp, the ratio's direction, a uniform reused "
           "for the test and the draw", "plus-minus", 3, T1, 6, 240),
    Design("long-high-acceptance", "M = 8 with a close drafter: rows off by one, p[M] for the bonus, bonus from "
           "q, p modified between positions", "draft-near", 8, T1, 6, 200),
    Design("profile-and-policy", "top-k 4 with top-p 0.6, then a policy change to temperature 1/2 "
           "and top-k 20 (§6.6): transforms on one side only, in another order, applied repeatedly, or the policy "
           "ignored", "draft-near", 4, TRUNCATED, 6, 240, policy=(20, AFTER_POLICY)),
    Design("stop-in-proposals", "stop tokens inside proposals: truncation after the first stop token changes "
           "only what is observed, not the law", "stop-boost", 4, T1, 8, 200, stop=(EOS_TOKEN,)),
    Design("many-sessions", "twelve sessions at once with different contexts and top-k 8: rows of two sessions "
           "swapped inside a batch", "plus-minus", 4, {"temperature_milli": 1000, "top_k": 8}, 12, 240),
    Design("identical-sessions", "twelve sessions with one prompt and shared drafter randomness: unseeded "
           "sessions sharing one random stream repeat each other's outcomes", "plus-minus", 3, T1, 12, 240,
           identical=True),
    Design("step-order", "temperature 1/2 with top-k 16 and top-p 0.75, q half on the tokens p excludes first: "
           "temperature applied after top-p, top-p before top-k or before everything keep some of them",
           "beyond-support", 2, STEP_ORDER, 6, 240),
)


def design(name: str) -> Design:
    return next(d for d in DESIGNS if d.name == name)


__all__ = [
    "AFTER_POLICY",
    "DESIGNS",
    "EXCLUDED_SPREAD",
    "MODEL",
    "STEP_ORDER",
    "T1",
    "TRUNCATED",
    "Design",
    "DraftedRound",
    "RoundSpec",
    "avoid_fragile",
    "design",
    "draft_round",
    "draft_row",
    "drafter_uniforms",
    "fragile",
    "published",
    "sampling_for",
]
