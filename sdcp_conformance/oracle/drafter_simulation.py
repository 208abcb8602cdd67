"""Simulated drafters for the exact-row test: the correct one and one per alternative family (for benchmarks).

Everything is computed from the bigram closed forms, as the harness computes
it in a certification: the draft model's row after a token under the
sampling profile (the row a correct drafter publishes, as binary32), the
untempered draft row, the target's p, and the steering of the first
position's context by the additional token the played verifier emits
(:func:`steering_tokens`). ``benchmarks/bench_drafter_sampling.py`` runs
these drafters over many seeds to measure the test's false-alarm rate and
how many rounds each bug takes to be caught.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

from sdcp_conformance.models.bigram import VOCAB_SIZE, bigram_logits
from sdcp_conformance.oracle.drafter_sampling import ExactRowTest, F, hmac_alternatives, invert, round_alternatives
from sdcp_conformance.protocol.rng import verify_uniform
from sdcp_conformance.protocol.sampling import target_distribution

Profile = tuple[tuple[str, int], ...]


def profile_key(sampling: Mapping[str, int] | None) -> Profile:
    return tuple(sorted((key, value) for key, value in (sampling or {}).items() if key != "seed"))


@cache
def row(model: str, last: int, profile: Profile) -> tuple[float, ...]:
    """The rule-2 distribution of ``model`` after ``last`` under ``profile`` (binary64)."""
    return tuple(target_distribution(bigram_logits(last, model), dict(profile), 2).tolist())


def row_array(model: str, last: int, profile: Profile) -> F:
    return np.asarray(row(model, last, profile))


def published(model: str, last: int, profile: Profile) -> F:
    """The row a correct drafter publishes: the profile's distribution as binary32, widened back."""
    return row_array(model, last, profile).astype(np.float32).astype(np.float64)


@cache
def steering_tokens(draft: str, target: str, profile: Profile, count: int = 8) -> tuple[int, ...]:
    """D-JUDGE-D6: the additional tokens the played verifier emits in the sampling case — the ``count`` tokens
    after which the draft row and the target row differ most (KL(p || q)), so the first position of every
    proposal is drawn where a drafter sampling the target's p instead of its row is most visible."""
    scores = []
    for token in range(VOCAB_SIZE):
        p, q = row_array(target, token, profile), row_array(draft, token, profile)
        live = p > 0
        scores.append((float(np.sum(p[live] * np.log(p[live] / np.maximum(q[live], 1e-300)))), token))
    return tuple(token for _, token in sorted(scores, reverse=True)[:count])


@dataclass(frozen=True)
class Knowledge:
    """What the harness computes for one position: the rows at the drafter's context."""

    model: F
    untempered: F
    target: F


def knowledge(draft: str, target: str, last: int, profile: Profile) -> Knowledge:
    return Knowledge(row_array(draft, last, profile), row_array(draft, last, ()), row_array(target, last, profile))


Drafter = Callable[[int, int, list[int], random.Random], tuple[list[int], F]]
"""``drafter(round, first_context_token, [], rng)`` → (tokens, published rows)."""


def make_drafter(kind: str, draft: str, target: str, profile: Profile, m: int, *, seed: int = 0,
                 session: bytes = bytes(16)) -> Drafter:
    """A drafter of ``kind``: ``exact`` or one of the bugs the families model."""
    fixed_uniforms = [random.Random(f"reused:{seed}").random() for _ in range(m)]

    def draw(rnd: int, first: int, _unused: list[int], rng: random.Random) -> tuple[list[int], F]:
        tokens: list[int] = []
        rows = np.empty((m, VOCAB_SIZE))
        last = first
        for i in range(m):
            q = published(draft, last, profile)
            rows[i] = q
            if kind == "greedy":
                token = int(np.argmax(q))
            elif kind == "untempered":
                token = invert(row_array(draft, last, ()), rng.random())
            elif kind == "temperature*2":
                hot = dict(profile)
                hot["temperature_milli"] = 2 * hot.get("temperature_milli", 1000)
                token = invert(row_array(draft, last, profile_key(hot)), rng.random())
            elif kind == "target-p":
                token = invert(row_array(target, last, profile), rng.random())
            elif kind == "fixed-order":
                token = invert(q, 0.5)
            elif kind == "reused-uniforms":
                token = invert(q, fixed_uniforms[i])
            elif kind == "hmac":
                token = invert(q, verify_uniform(seed, session, rnd, i + 1, 0))
            elif kind == "row-shifted":
                token = invert(q, rng.random())
                rows[i] = published(draft, token, profile)  # publishes the row for the next position
            else:
                token = invert(q, rng.random())
            tokens.append(token)
            last = token
        return tokens, rows

    return draw


KINDS = ("exact", "greedy", "untempered", "temperature*2", "row-shifted", "target-p", "fixed-order",
         "reused-uniforms", "hmac")


def simulate(kind: str, *, seed: int, alpha: float, rounds: int, m: int, profiles: Sequence[Profile],
             draft: str = "bigram-draft-near", target: str = "bigram", hmac_seed: int | None = None) -> ExactRowTest:
    """Run the exact-row test (or, with ``hmac_seed``, the HMAC test) against a simulated drafter.

    Rounds cycle through ``profiles`` (one session per profile, as the sampling case interleaves them).
    """
    rng = random.Random(seed)
    sessions = [bytes(rng.randbytes(16)) for _ in profiles]
    drafters = [make_drafter(kind, draft, target, profile, m, seed=hmac_seed or 0, session=session)
                for profile, session in zip(profiles, sessions, strict=True)]
    test = ExactRowTest(alpha, random.Random(f"pit:{seed}"), nonparametric=hmac_seed is None)
    for rnd in range(1, rounds + 1):
        which = (rnd - 1) % len(profiles)
        profile, session_round = profiles[which], (rnd - 1) // len(profiles) + 1
        steer = steering_tokens(draft, target, profile)
        first = steer[rng.randrange(len(steer))]
        tokens, rows = drafters[which](session_round, first, [], rng)
        if hmac_seed is not None:
            alternatives = hmac_alternatives(rows, hmac_seed, sessions[which], session_round)
        else:
            contexts = [first, *tokens[:-1]]
            known = [knowledge(draft, target, last, profile) for last in contexts]
            alternatives = round_alternatives(rows, np.stack([k.model for k in known]),
                                              np.stack([k.untempered for k in known]),
                                              np.stack([k.target for k in known]))
        test.observe_round(rows, tokens, alternatives)
        if test.rejected:
            break
    return test


__all__ = ["KINDS", "Knowledge", "knowledge", "make_drafter", "profile_key", "published", "row", "row_array",
           "simulate", "steering_tokens"]
