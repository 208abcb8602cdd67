"""Rule-2 mutants that only statistics can see: each a class of speculative-sampling bug real engines shipped.

Every engine here is a pure function of the target's logits rows, the round's
sampling profile, the published q rows, the proposed tokens and the uniform
source, so the same code runs inside a mutant verifier (through
:class:`EngineSession`) and in the calibration benchmark's simulation. Each
reproduces ONE mistake; everything else follows §6.4 and P1-SAMP-1/2.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from sdcp_conformance.mutants.base import MutantSession, VerifierMutant
from sdcp_conformance.mutants.verifier import CATALOGUE
from sdcp_conformance.protocol.messages import Sampling
from sdcp_conformance.protocol.rng import PURPOSE_ACCEPT, PURPOSE_DRAW, SystemUniforms, UniformSource, verify_uniform
from sdcp_conformance.protocol.rules import RuleOutcome, residual
from sdcp_conformance.protocol.sampling import draw_token, target_distribution
from sdcp_conformance.reference.verifier.ports import ScoreItem, TargetModel
from sdcp_conformance.reference.verifier.session import Ticket

F = npt.NDArray[np.float64]
Profile = Mapping[str, int] | None
Engine = Callable[[F, Profile, F, Sequence[int], UniformSource], RuleOutcome]
"""engine(logits (M+1 x V), profile, q rows (M x V), tokens, uniforms) -> outcome."""


def rows(logits: F, profile: Profile) -> F:
    """p[1..M+1] as §4.1 builds them (the reference's own sampling code: only the planted bug differs)."""
    return np.stack([target_distribution(row, profile, 2) for row in logits])


def speculative(p: F, q: F, tokens: Sequence[int], uniforms: UniformSource, *,
                draw_rows: F | None = None, accept_q: F | None = None,
                residual_of: Callable[[F, F], F] = residual, reuse: bool = False) -> RuleOutcome:
    """§6.4 rule 2 with switchable parts: the rows drawn from, the q of the ratio, the residual, one r reused."""
    draws = p if draw_rows is None else draw_rows
    ratio_q = q if accept_q is None else accept_q
    for i, token in enumerate(tokens, start=1):
        r = uniforms.uniform(i, PURPOSE_ACCEPT)
        if not r < min(1.0, p[i - 1, token] / ratio_q[i - 1, token]):
            u = r if reuse else uniforms.uniform(i, PURPOSE_DRAW)
            extra = draw_token(residual_of(draws[i - 1], q[i - 1]), u)
            return RuleOutcome(i - 1, [*tokens[: i - 1], extra])
    m = len(tokens)
    return RuleOutcome(m, [*tokens, draw_token(draws[m], uniforms.uniform(m + 1, PURPOSE_DRAW))])


# ---------------------------------------------------------------------- the engines


def residual_softmax(logits: F, profile: Profile, q: F, tokens: Sequence[int], u: UniformSource) -> RuleOutcome:
    """The residual max(0, p - q) normalised with a softmax instead of by its sum."""
    def softmaxed(p_row: F, q_row: F) -> F:
        rest = np.maximum(0.0, p_row - q_row)
        weights: F = np.exp(rest - rest.max())
        normalised: F = weights / weights.sum()
        return normalised
    return speculative(rows(logits, profile), q, tokens, u, residual_of=softmaxed)


def bonus_from_q(logits: F, profile: Profile, q: F, tokens: Sequence[int], u: UniformSource) -> RuleOutcome:
    """After full acceptance the additional token is drawn from the last draft row q[M]."""
    p = rows(logits, profile)
    draws = p.copy()
    draws[len(tokens)] = q[-1]
    return speculative(p, q, tokens, u, draw_rows=_bonus_only(p, draws, len(tokens)))


def bonus_from_p_m(logits: F, profile: Profile, q: F, tokens: Sequence[int], u: UniformSource) -> RuleOutcome:
    """After full acceptance the additional token is drawn from p[M] instead of p[M+1]."""
    p = rows(logits, profile)
    draws = p.copy()
    draws[len(tokens)] = p[len(tokens) - 1]
    return speculative(p, q, tokens, u, draw_rows=_bonus_only(p, draws, len(tokens)))


def _bonus_only(p: F, draws: F, m: int) -> F:
    """Rows for the draw: the residual rows stay p's, only the bonus row is replaced."""
    result = p.copy()
    result[m] = draws[m]
    return result


def uniform_reused(logits: F, profile: Profile, q: F, tokens: Sequence[int], u: UniformSource) -> RuleOutcome:
    """The acceptance test's r is reused to draw the additional token after a rejection."""
    return speculative(rows(logits, profile), q, tokens, u, reuse=True)


def q_one_hot(logits: F, profile: Profile, q: F, tokens: Sequence[int], u: UniformSource) -> RuleOutcome:
    """The ratio and residual use q as one-hot on the proposed token (greedy-drafter code path)."""
    one_hot = np.zeros_like(q)
    one_hot[np.arange(len(tokens)), list(tokens)] = 1.0
    return speculative(rows(logits, profile), one_hot, tokens, u)


def exact_match(logits: F, profile: Profile, q: F, tokens: Sequence[int], u: UniformSource) -> RuleOutcome:
    """Accept x[i] when a fresh sample from p[i] equals it; otherwise emit that sample and stop."""
    p = rows(logits, profile)
    for i, token in enumerate(tokens, start=1):
        sample = draw_token(p[i - 1], u.uniform(i, PURPOSE_DRAW))
        if sample != token:
            return RuleOutcome(i - 1, [*tokens[: i - 1], sample])
    m = len(tokens)
    return RuleOutcome(m, [*tokens, draw_token(p[m], u.uniform(m + 1, PURPOSE_DRAW))])


def ratio_inverted(logits: F, profile: Profile, q: F, tokens: Sequence[int], u: UniformSource) -> RuleOutcome:
    """r < min(1, q(x) / p(x)): the ratio upside down."""
    p = rows(logits, profile)
    for i, token in enumerate(tokens, start=1):
        ratio = q[i - 1, token] / p[i - 1, token] if p[i - 1, token] > 0 else np.inf
        if not u.uniform(i, PURPOSE_ACCEPT) < min(1.0, ratio):
            extra = draw_token(residual(p[i - 1], q[i - 1]), u.uniform(i, PURPOSE_DRAW))
            return RuleOutcome(i - 1, [*tokens[: i - 1], extra])
    m = len(tokens)
    return RuleOutcome(m, [*tokens, draw_token(p[m], u.uniform(m + 1, PURPOSE_DRAW))])


def draw_untempered(logits: F, profile: Profile, q: F, tokens: Sequence[int], u: UniformSource) -> RuleOutcome:
    """Temperature applied on one side only: the acceptance test uses it, the residual and bonus draws do not."""
    untempered = {**(profile or {}), "temperature_milli": 1000}
    return speculative(rows(logits, profile), q, tokens, u, draw_rows=rows(logits, untempered))


def top_p_before_top_k(logits: F, profile: Profile, q: F, tokens: Sequence[int], u: UniformSource) -> RuleOutcome:
    """Temperature, then top-p, then top-k (§4.1 says temperature, top-k, top-p)."""
    settings = dict(profile or {})
    if not settings.get("top_k") or settings.get("top_p_milli", 1000) >= 1000:
        return speculative(rows(logits, profile), q, tokens, u)
    nucleus = rows(logits, {key: value for key, value in settings.items() if key != "top_k"})
    p = np.zeros_like(nucleus)
    for index, row in enumerate(nucleus):
        kept = np.argsort(-row, kind="stable")[: settings["top_k"]]
        p[index, kept] = row[kept] / row[kept].sum()
    return speculative(p, q, tokens, u)


def temperature_after_top_p(logits: F, profile: Profile, q: F, tokens: Sequence[int], u: UniformSource
                            ) -> RuleOutcome:
    """Top-k, then top-p on the untempered distribution, then temperature (§4.1: temperature, top-k, top-p)."""
    settings = dict(profile or {})
    if settings.get("temperature_milli", 1000) in (0, 1000) or settings.get("top_p_milli", 1000) >= 1000:
        return speculative(rows(logits, profile), q, tokens, u)
    kept = rows(logits, {**settings, "temperature_milli": 1000}) > 0.0  # the cut, made before the temperature
    tempered = rows(logits, {"temperature_milli": settings["temperature_milli"]})
    p = np.where(kept, tempered, 0.0)
    return speculative(p / p.sum(axis=1, keepdims=True), q, tokens, u)


def tempered_in_place(logits: F, profile: Profile, q: F, tokens: Sequence[int], u: UniformSource) -> RuleOutcome:
    """The logits buffer is divided by the temperature in place once per position: row i sees T^i."""
    settings = dict(profile or {})
    temperature = settings.get("temperature_milli", 1000) / 1000
    if temperature in (0.0, 1.0):
        return speculative(rows(logits, profile), q, tokens, u)
    scaled = np.stack([row / temperature ** index for index, row in enumerate(logits)])
    return speculative(rows(scaled, profile), q, tokens, u)


def rows_off_by_one(logits: F, profile: Profile, q: F, tokens: Sequence[int], u: UniformSource) -> RuleOutcome:
    """Position i is judged against the logits row after x[i] (one row late); the bonus row is right."""
    p = rows(logits, profile)
    shifted = np.concatenate([p[1:], p[-1:]])
    return speculative(shifted, q, tokens, u)


# ---------------------------------------------------------------------- inside a verifier


class EngineSession(MutantSession):
    """A session machine whose rule 2 is an :data:`Engine`; rule 1 stays the reference's."""

    engine: Engine = staticmethod(uniform_reused)

    def target_rows(self, logits: npt.ArrayLike, sampling: Sampling | None) -> F:
        self._logits = np.asarray(logits, dtype=np.float64)
        self._profile = sampling.to_obj() if sampling is not None else None
        return super().target_rows(logits, sampling)

    def accept(self, ticket: Ticket, p_rows: F, q_rows: F | None, uniforms: UniformSource) -> RuleOutcome:
        if not ticket.needs_q or q_rows is None:
            return super().accept(ticket, p_rows, q_rows, uniforms)
        return type(self).engine(self._logits, self._profile, q_rows, list(ticket.proposal.tokens), uniforms)


def engine_session(engine: Engine) -> type[MutantSession]:
    name = "".join(part.title() for part in engine.__name__.split("_"))
    return type(name, (EngineSession,), {"engine": staticmethod(engine), "__doc__": engine.__doc__})


class SharedStream:
    """Unseeded values from one fixed-key stream per (round, i, purpose): every session draws the same ones."""

    def __init__(self, round_number: int) -> None:
        self.round = round_number

    def uniform(self, i: int, purpose: int) -> float:
        return verify_uniform(0, bytes(16), self.round, i, purpose)


class SharedStreamSession(MutantSession):
    """Unseeded sessions share one random stream (a PRNG seeded with a constant per session)."""

    def accept(self, ticket: Ticket, p_rows: F, q_rows: F | None, uniforms: UniformSource) -> RuleOutcome:
        if isinstance(uniforms, SystemUniforms):
            uniforms = SharedStream(ticket.proposal.round)
        return super().accept(ticket, p_rows, q_rows, uniforms)


class SwappedBatchModel:
    """Scores a batch but hands the first two items each other's rows (an index bug in the batch gather)."""

    def __init__(self, inner: TargetModel) -> None:
        self._inner = inner

    @property
    def vocab_size(self) -> int:
        return self._inner.vocab_size

    @property
    def model_sha256(self) -> bytes:
        return self._inner.model_sha256

    @property
    def tokenizer_sha256(self) -> bytes:
        return self._inner.tokenizer_sha256

    def score(self, items: Sequence[ScoreItem]) -> list[F]:
        results = self._inner.score(items)
        if len(results) >= 2 and np.shape(results[0]) == np.shape(results[1]):
            results[0], results[1] = results[1], results[0]
        return results

    def forget(self, session: bytes) -> None:
        self._inner.forget(session)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def swapped_batch(model: TargetModel) -> TargetModel:
    return SwappedBatchModel(model)


# ---------------------------------------------------------------------- the mutants

_RULE2 = "For each position, draw r uniformly from [0, 1). Accept x[i] if r < min(1, p[i](x[i]) / q[i](x[i]))"
_RESIDUAL = "the additional token is drawn from the normalized residual distribution max(0, p[i] - q[i])"
_BONUS = "If all M tokens are accepted, the additional token is drawn from p[M+1]."
_Q_ROW = "where q[i] is the row of q_rows for position i, that is, the draft distribution from which x[i] was sampled"
_PURPOSE = "where purpose is 0 for the acceptance test and 1 for drawing the additional token"
_P = "p is the target model's next-token distribution after applying temperature, top-k, and top-p in that order"
_TARGET = "In both, p[i] is the target distribution at proposed position i"
_BATCH = "It MAY batch proposals of many sessions into one pass."
_CSPRNG = "Without a seed, the verifier uses a cryptographically secure random number generator."

ENGINES: dict[str, Engine] = {
    "rule2-residual-softmax": residual_softmax,
    "rule2-bonus-from-q": bonus_from_q,
    "rule2-bonus-from-p-m": bonus_from_p_m,
    "rule2-uniform-reused": uniform_reused,
    "rule2-q-one-hot": q_one_hot,
    "rule2-exact-match": exact_match,
    "rule2-ratio-inverted": ratio_inverted,
    "rule2-draw-untempered": draw_untempered,
    "rule2-top-p-before-top-k": top_p_before_top_k,
    "rule2-tempered-in-place": tempered_in_place,
    "rule2-rows-off-by-one": rows_off_by_one,
    "rule2-temperature-after-top-p": temperature_after_top_p,
}
"""The engine of each engine-level mutant (the benchmark simulates these directly)."""

_VIOLATES = {
    "rule2-residual-softmax": _RESIDUAL, "rule2-bonus-from-q": _BONUS, "rule2-bonus-from-p-m": _BONUS,
    "rule2-uniform-reused": _PURPOSE, "rule2-q-one-hot": _Q_ROW, "rule2-exact-match": _RULE2,
    "rule2-ratio-inverted": _RULE2, "rule2-draw-untempered": _P, "rule2-top-p-before-top-k": _P,
    "rule2-tempered-in-place": _P, "rule2-rows-off-by-one": _TARGET, "rule2-temperature-after-top-p": _P,
}

RULE2_STAT_MUTANTS: tuple[VerifierMutant, ...] = (
    *(VerifierMutant(name, "rule-2", (engine.__doc__ or "").strip().split("\n")[0], "6.4", _VIOLATES[name],
                     session=engine_session(engine)) for name, engine in ENGINES.items()),
    VerifierMutant("rule2-batch-rows-swapped", "rule-2", "the first two sessions of a scoring batch get each other's "
                   "rows", "6.3", _BATCH, wrap_model=swapped_batch),
    VerifierMutant("rule2-shared-stream", "rule-2", "unseeded sessions share one random stream (same values per "
                   "round)", "6.4", _CSPRNG, session=SharedStreamSession),
)
"""The statistical rule-2 mutants (each an engine's, and two bugs around the engine)."""
CATALOGUE.add(*RULE2_STAT_MUTANTS)


__all__ = [
    "ENGINES",
    "RULE2_STAT_MUTANTS",
    "Engine",
    "EngineSession",
    "SharedStream",
    "SharedStreamSession",
    "SwappedBatchModel",
    "bonus_from_p_m",
    "bonus_from_q",
    "draw_untempered",
    "engine_session",
    "exact_match",
    "q_one_hot",
    "ratio_inverted",
    "residual_softmax",
    "rows",
    "rows_off_by_one",
    "speculative",
    "swapped_batch",
    "temperature_after_top_p",
    "tempered_in_place",
    "top_p_before_top_k",
    "uniform_reused",
]
