"""Rule 2 preserves the target distribution exactly (draft §6.4, [LEVIATHAN], [CHEN]).

Two computations, both in exact rational arithmetic over small V and M:

* the closed form: enumerate every draft x ~ q, accept with probability
  min(1, p/q), otherwise draw from max(0, p - q) normalized;
* the implementation: for every draft and every cell of the uniforms' space
  in which the outcome is constant, call :func:`rule2` with a representative
  uniform and weight the outcome by the cell's exact length.

Both must give the same law of emitted tokens, and completing an emitted
sequence autoregressively from p must give exactly the target's own law.
Probabilities are dyadic (k/16) so that the binary64 and binary32 values the
implementation sees are exactly the rationals used here.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Callable
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdcp_conformance.protocol.rules import rule2

Row = tuple[Fraction, ...]
Prefix = tuple[int, ...]
RowFn = Callable[[Prefix], Row]
Law = dict[Prefix, Fraction]


def row(*sixteenths: int) -> Row:
    assert sum(sixteenths) == 16
    return tuple(Fraction(k, 16) for k in sixteenths)


def rotated(base: Row, shift: int) -> Row:
    shift %= len(base)
    return base[shift:] + base[:shift]


# ------------------------------------------------------------ closed form


def closed_form_law(p: RowFn, q: RowFn, m: int) -> Law:
    """The law of the emitted tokens of one rule-2 round, from the textbook argument."""
    law: Law = defaultdict(Fraction)

    def visit(prefix: Prefix, weight: Fraction) -> None:
        target = p(prefix)
        if len(prefix) == m:
            for token, mass in enumerate(target):
                law[(*prefix, token)] += weight * mass
            return
        draft, rejected = q(prefix), Fraction(0)
        for token, q_mass in enumerate(draft):
            if q_mass == 0:
                continue
            accept = min(Fraction(1), target[token] / q_mass)
            visit((*prefix, token), weight * q_mass * accept)
            rejected += q_mass * (1 - accept)
        if rejected:
            rest = [max(Fraction(0), a - b) for a, b in zip(target, draft, strict=True)]
            for token, mass in enumerate(rest):
                law[(*prefix, token)] += weight * rejected * mass / sum(rest)

    visit((), Fraction(1))
    return {seq: mass for seq, mass in law.items() if mass}


def autoregressive(p: RowFn, sequence: Prefix, start: int) -> Fraction:
    """P(sequence[start:] | sequence[:start]) when each token is drawn from p."""
    mass = Fraction(1)
    for k in range(start, len(sequence)):
        mass *= p(sequence[:k])[sequence[k]]
    return mass


def assert_completion_is_the_target(law: Law, p: RowFn, m: int, vocab: int) -> None:
    """Completing every emitted sequence from p must give p's own law of M+1 tokens."""
    assert sum(law.values()) == 1
    for full in itertools.product(range(vocab), repeat=m + 1):
        completed = sum(
            (law.get(full[:length], Fraction(0)) * autoregressive(p, full, length)) for length in range(1, m + 2)
        )
        assert completed == autoregressive(p, full, 0), full


# ------------------------------------------------------------ implementation


class CellUniforms:
    """Returns the scripted uniform for each (i, purpose); any other request is an error."""

    def __init__(self, values: dict[tuple[int, int], float]) -> None:
        self.values = values

    def uniform(self, i: int, purpose: int) -> float:
        return self.values[(i, purpose)]


Probes = list[float]
"""Uniforms at both ends (and the middle) of one cell: the outcome must be the same at all."""


def draw_cells(weights: Row) -> list[tuple[Probes, Fraction]]:
    """Probes and exact length of each non-empty cell of the inverse-CDF draw from ``weights``."""
    total, below, cells = sum(weights), Fraction(0), []
    for mass in weights:
        if mass:
            low, high = below / total, (below + mass) / total
            probes = [float(low), float((low + high) / 2), math.nextafter(float(high), 0.0)]
            cells.append((probes, mass / total))
        below += mass
    return cells


def implementation_law(p: RowFn, q: RowFn, m: int, vocab: int) -> Law:
    """The law of ``rule2``'s output, integrating over drafts and uniform cells exactly."""
    law: Law = defaultdict(Fraction)
    for draft in itertools.product(range(vocab), repeat=m):
        q_rows = [q(draft[:k]) for k in range(m)]
        weight = Fraction(1)
        for k, q_row in enumerate(q_rows):
            weight *= q_row[draft[k]]
        if not weight:
            continue
        p_rows = [p(draft[:k]) for k in range(m + 1)]
        for outcome, mass in _branches(p_rows, q_rows, draft):
            law[outcome] += weight * mass
    return {seq: mass for seq, mass in law.items() if mass}


def _branches(p_rows: list[Row], q_rows: list[Row], draft: Prefix) -> list[tuple[Prefix, Fraction]]:
    """Run rule2 in every uniform cell: first rejection at each position, or none."""
    run = _Runner(p_rows, q_rows, draft)
    results: list[tuple[Prefix, Fraction]] = []
    accept_probes: list[Probes] = []
    accepted_mass = Fraction(1)
    for i, token in enumerate(draft, start=1):
        threshold = min(Fraction(1), p_rows[i - 1][token] / q_rows[i - 1][token])
        if threshold < 1:  # the reject cell [threshold, 1) is non-empty
            reject = [float(threshold), math.nextafter(1.0, 0.0)]
            rest = tuple(max(Fraction(0), a - b) for a, b in zip(p_rows[i - 1], q_rows[i - 1], strict=True))
            for probes, length in draw_cells(rest):
                outcome = run([*accept_probes, reject], (i, 1), probes)
                results.append((outcome, accepted_mass * (1 - threshold) * length))
        accepted_mass *= threshold
        if not accepted_mass:
            return results
        accept_probes.append([0.0, math.nextafter(float(threshold), 0.0)])
    for probes, length in draw_cells(p_rows[-1]):
        outcome = run(accept_probes, (len(draft) + 1, 1), probes)
        results.append((outcome, accepted_mass * length))
    return results


class _Runner:
    """Calls rule2 at every combination of probes of one cell; all must agree."""

    def __init__(self, p_rows: list[Row], q_rows: list[Row], draft: Prefix) -> None:
        self.p = [[float(v) for v in r] for r in p_rows]
        self.q = [[float(v) for v in r] for r in q_rows]
        self.draft = draft

    def __call__(self, tests: list[Probes], draw: tuple[int, int], probes: Probes) -> Prefix:
        outcomes = set()
        for combo in itertools.product(*tests, probes):
            script = {(k, 0): r for k, r in enumerate(combo[:-1], start=1)}
            script[draw] = combo[-1]
            outcomes.add(tuple(rule2(self.p, self.q, self.draft, CellUniforms(script)).emitted))
        assert len(outcomes) == 1, outcomes
        return outcomes.pop()


# ------------------------------------------------------------ cases

P_BASE = row(8, 4, 4, 0)
CASES: dict[str, tuple[RowFn, RowFn, int, int]] = {
    "q-disjoint-from-p": (lambda _: row(8, 8, 0, 0), lambda _: row(0, 0, 8, 8), 1, 4),
    "q-equals-p": (lambda _: row(10, 4, 2), lambda _: row(10, 4, 2), 1, 3),
    "q-peaked-on-a-low-p-token": (lambda _: row(10, 4, 2), lambda _: row(1, 1, 14), 1, 3),
    "zeros-in-p": (lambda _: row(0, 8, 8, 0), lambda _: row(4, 4, 4, 4), 1, 4),
    "zeros-in-q": (lambda _: row(4, 4, 4, 4), lambda _: row(0, 8, 8, 0), 1, 4),
    "m2-context-dependent": (
        lambda prefix: rotated(P_BASE, sum(prefix)),
        lambda prefix: rotated(row(2, 6, 4, 4), 2 * sum(prefix) + len(prefix)),
        2,
        4,
    ),
    "m2-q-equals-p": (
        lambda prefix: rotated(row(6, 7, 3), len(prefix) + sum(prefix)),
        lambda prefix: rotated(row(6, 7, 3), len(prefix) + sum(prefix)),
        2,
        3,
    ),
    "m2-disjoint": (
        lambda prefix: rotated(row(8, 8, 0, 0), len(prefix)),
        lambda prefix: rotated(row(0, 0, 8, 8), len(prefix)),
        2,
        4,
    ),
}


@pytest.mark.parametrize("name", CASES)
def test_closed_form_law_preserves_the_target(name: str) -> None:
    p, q, m, vocab = CASES[name]
    assert_completion_is_the_target(closed_form_law(p, q, m), p, m, vocab)


@pytest.mark.parametrize("name", CASES)
def test_rule2_implementation_has_the_closed_form_law(name: str) -> None:
    p, q, m, vocab = CASES[name]
    law = implementation_law(p, q, m, vocab)
    assert law == closed_form_law(p, q, m)
    assert_completion_is_the_target(law, p, m, vocab)


def test_first_token_law_equals_p_for_a_single_position() -> None:
    p, q, m, _ = CASES["q-peaked-on-a-low-p-token"]
    law = implementation_law(p, q, m, 3)
    first: dict[int, Fraction] = defaultdict(Fraction)
    for sequence, mass in law.items():
        first[sequence[0]] += mass
    assert [first[t] for t in range(3)] == list(p(()))


def sixteenths(vocab: int) -> st.SearchStrategy[Row]:
    cuts = st.lists(st.integers(0, 16), min_size=vocab - 1, max_size=vocab - 1).map(sorted)
    return cuts.map(lambda c: row(*(b - a for a, b in zip([0, *c], [*c, 16], strict=True))))


@settings(derandomize=True, max_examples=60, deadline=None)
@given(data=st.data(), vocab=st.integers(2, 4), m=st.integers(1, 2))
def test_rule2_is_exact_for_generated_dyadic_rows(data: st.DataObject, vocab: int, m: int) -> None:
    prefixes = [pre for n in range(m + 1) for pre in itertools.product(range(vocab), repeat=n)]
    p_table = {pre: data.draw(sixteenths(vocab)) for pre in prefixes}
    q_table = {pre: data.draw(sixteenths(vocab)) for pre in prefixes if len(pre) < m}
    law = implementation_law(p_table.__getitem__, q_table.__getitem__, m, vocab)
    assert law == closed_form_law(p_table.__getitem__, q_table.__getitem__, m)
    assert_completion_is_the_target(law, p_table.__getitem__, m, vocab)
