"""Calibration of the rule-2 statistical test: false alarms, rounds to reject each mutant, the optimal bound.

(a) False-alarm rate at a loose alpha (0.05 for the whole certification,
    split over the designs as the suite does) over many runs of every design
    against a fast in-process simulation of the reference's rule 2 (the
    reference's own ``protocol.rules.rule2`` with numpy uniforms), plus a few
    certifications of the real embedded reference verifier; with a Wilson
    95 % interval.
(b) For each engine-level rule-2 mutant: the rounds (counted rounds) the test
    needs to reject at alpha = 1e-6 on the mutant's killing design, over
    repeated simulated runs (median and 90th percentile).
(c) The fewest rounds an optimal test that knows the mutant's exact law would
    need: Wald's SPRT on the exact log-likelihood ratio log(A/P0) (stopping at
    log(1/alpha), or at once on an outcome P0 forbids), on the same outcomes,
    and the KL-based approximation log(1/alpha) / KL; printed with the ratio.

Usage: ``python benchmarks/bench_rule2_calibration.py [--runs 200] [--reps 30] [--iut-runs 2]``
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import random
import statistics
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from sdcp_conformance.models.bigram import bigram_logits
from sdcp_conformance.mutants.verifier.rule2_stats import ENGINES, Engine
from sdcp_conformance.oracle.rule2_designs import DESIGNS, Design, design, draft_round, drafter_uniforms, sampling_for
from sdcp_conformance.oracle.statistics import RoundLaw, Rule2EProcess, Tolerance, alternatives, case_alpha
from sdcp_conformance.protocol.rules import RuleOutcome, truncate
from sdcp_conformance.protocol.rules import rule2 as reference_rule2

KILLING_DESIGN = {
    "rule2-residual-softmax": "low-peak", "rule2-bonus-from-q": "q-equals-p", "rule2-bonus-from-p-m": "q-equals-p",
    "rule2-uniform-reused": "plus-minus", "rule2-q-one-hot": "plus-minus", "rule2-exact-match": "plus-minus",
    "rule2-ratio-inverted": "plus-minus", "rule2-draw-untempered": "profile-and-policy",
    "rule2-top-p-before-top-k": "profile-and-policy", "rule2-tempered-in-place": "profile-and-policy",
    "rule2-rows-off-by-one": "plus-minus", "rule2-temperature-after-top-p": "step-order",
}
FAMILY = {
    "rule2-residual-softmax": "residual-softmax", "rule2-bonus-from-q": "bonus-from-q",
    "rule2-bonus-from-p-m": "bonus-from-p[M]", "rule2-uniform-reused": "uniform-reused",
    "rule2-q-one-hot": "accept-with-p(x)", "rule2-exact-match": "accept-with-p(x)",
    "rule2-ratio-inverted": "ratio-inverted", "rule2-draw-untempered": "profile:untempered:draw-only",
    "rule2-top-p-before-top-k": "profile:top-p-before-top-k",
    "rule2-tempered-in-place": "profile:tempered-per-position", "rule2-rows-off-by-one": "rows-shifted",
    "rule2-temperature-after-top-p": "profile:temperature-after-top-p",
}
"""The exact law of each mutant, as the oracle's alternative families state it."""


class _Uniforms:
    def __init__(self, generator: np.random.Generator) -> None:
        self._generator = generator

    def uniform(self, i: int, purpose: int) -> float:
        return float(self._generator.random())


Observer = Callable[[RoundLaw, int | None], bool]
"""Called with each counted round's law and observed cell; returns True to stop."""


def simulate(plan: Design, engine: Engine | None, seed: int, observe: Observer, budget: int | None = None) -> int:
    """Drive ``plan`` against the reference's rule 2 (engine None) or a mutant engine; returns rounds sent."""
    rng, generator = random.Random(seed), np.random.default_rng(seed)
    contexts = [list(plan.prompt(i)) for i in range(plan.sessions)]
    local = [0] * plan.sessions
    sent, limit = 0, budget if budget is not None else plan.rounds
    shared: list[float] | None = None
    while sent < limit:
        shared = drafter_uniforms(rng, plan.m) if plan.identical else None
        for index in range(plan.sessions):
            profile = sampling_for(plan, local[index] + 1)
            drafted = draft_round(plan, contexts[index], profile, plan.m, shared or drafter_uniforms(rng, plan.m),
                                  Tolerance())
            outcome = _outcome(drafted.law, contexts[index], profile, engine, generator)
            kept, finished = truncate(outcome.emitted, plan.stop, 10**9, 0)
            sent += 1
            if drafted.counted and observe(drafted.law, drafted.law.cell_of(kept)):
                return sent
            contexts[index] = list(plan.prompt(index)) if finished else [*contexts[index], *kept]
            local[index] = 0 if finished else local[index] + 1
    return sent


def _outcome(law: RoundLaw, context: Sequence[int], profile: object, engine: Engine | None,
             generator: np.random.Generator) -> RuleOutcome:
    if engine is None:
        return reference_rule2(law.p, law.q, list(law.tokens), _Uniforms(generator))
    logits = np.stack([bigram_logits([*context, *law.tokens[:i]][-1]) for i in range(law.m + 1)])
    return engine(logits, dict(profile), law.q, list(law.tokens), _Uniforms(generator))  # type: ignore[call-overload]


# ---------------------------------------------------------------------- (a) false alarms


def clean_run(args: tuple[int, float]) -> bool:
    """One simulated certification of every design at total alpha; True on any false alarm."""
    seed, alpha = args
    for number, plan in enumerate(DESIGNS):
        test = Rule2EProcess(case_alpha(alpha, len(DESIGNS)), random.Random(seed * 100 + number))

        def observe(law: RoundLaw, cell: int | None, test: Rule2EProcess = test) -> bool:
            test.update(law, cell)
            return test.rejected

        simulate(plan, None, seed * 100 + number, observe)
        if test.rejected:
            return True
    return False


def wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    centre = (successes + z * z / 2) / (n + z * z)
    half = z * math.sqrt(successes * (n - successes) / n + z * z / 4) / (n + z * z)
    return max(0.0, centre - half), min(1.0, centre + half)


async def real_iut_runs(runs: int, alpha: float) -> int:
    from sdcp_conformance.harness.certify import certify

    os.environ["SDCP_RULE2_ALPHA"] = str(alpha)
    alarms = 0
    for seed in range(runs):
        report = await certify(selectors=["VER-6.4-RULE2-STAT"], seed=1000 + seed)
        alarms += any(result.verdict.value == "FAILED" for result in report.results)
    return alarms


# ---------------------------------------------------------------------- (b) and (c) mutants


def rounds_to_reject(args: tuple[str, int, float]) -> tuple[int | None, int | None, float]:
    """Our test's counted rounds to reject, the exact-law SPRT's, and the mean KL per round seen."""
    name, seed, alpha = args
    plan = design(KILLING_DESIGN[name])
    test = Rule2EProcess(case_alpha(alpha, len(DESIGNS)), random.Random(seed))
    ours: list[int | None] = [None]
    sprt: list[int | None] = [None]
    llr = [0.0]
    kls: list[float] = []
    counted = [0]

    def observe(law: RoundLaw, cell: int | None) -> bool:
        counted[0] += 1
        exact, alternative = law.exact_cells, alternatives(law).get(FAMILY[name], law.exact_cells)
        kls.append(_kl(alternative, exact))
        if sprt[0] is None:
            forbidden = cell is None or exact[cell] <= 0
            llr[0] += math.inf if forbidden else math.log(max(float(alternative[cell]), 1e-300) / float(exact[cell]))
            if llr[0] >= math.log(1 / alpha):
                sprt[0] = counted[0]
        if ours[0] is None:
            test.update(law, cell)
            if test.rejected:
                ours[0] = counted[0]
        return ours[0] is not None and sprt[0] is not None

    simulate(plan, ENGINES[name], seed, observe, budget=4000)
    return ours[0], sprt[0], statistics.fmean(kls) if kls else 0.0


def _kl(alternative: np.ndarray, exact: np.ndarray) -> float:
    live = alternative > 0
    if (exact[live] <= 0).any():
        return math.inf
    return float(np.sum(alternative[live] * np.log(alternative[live] / exact[live])))


def _quantile(values: Sequence[int], q: float) -> float:
    ordered = sorted(values)
    return float(ordered[min(len(ordered) - 1, int(q * len(ordered)))])


def report_mutants(reps: int, alpha: float, pool: ProcessPoolExecutor) -> None:
    print(f"\n(b)+(c) rounds to reject at alpha = {alpha:g} (counted rounds; {reps} runs each; "
          "optimal = SPRT with the exact law)")
    print(f"{'mutant':28} {'design':20} {'ours med':>8} {'p90':>6} {'SPRT med':>8} {'KL bound':>8} {'ratio':>6}")
    for name in ENGINES:
        results = list(pool.map(rounds_to_reject, [(name, seed, alpha) for seed in range(reps)]))
        ours = [r[0] if r[0] is not None else 4000 for r in results]
        sprt = [r[1] if r[1] is not None else 4000 for r in results]
        kl = statistics.fmean(r[2] for r in results)
        bound = "inf" if kl == math.inf else (f"{math.log(1 / alpha) / kl:.1f}" if kl > 0 else "-")
        median_ours, median_sprt = statistics.median(ours), statistics.median(sprt)
        print(f"{name:28} {KILLING_DESIGN[name]:20} {median_ours:8.0f} {_quantile(ours, 0.9):6.0f} "
              f"{median_sprt:8.0f} {bound:>8} {median_ours / max(median_sprt, 1):6.2f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=200, help="simulated certifications for (a)")
    parser.add_argument("--reps", type=int, default=30, help="runs per mutant for (b) and (c)")
    parser.add_argument("--iut-runs", type=int, default=2, help="certifications of the real embedded reference")
    parser.add_argument("--loose-alpha", type=float, default=0.05)
    parser.add_argument("--alpha", type=float, default=1e-6)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    started = time.perf_counter()
    with ProcessPoolExecutor(args.workers) as pool:
        alarms = sum(pool.map(clean_run, [(seed, args.loose_alpha) for seed in range(args.runs)]))
        low, high = wilson(alarms, args.runs)
        print(f"(a) simulated reference: {alarms} false alarms in {args.runs} certifications at alpha = "
              f"{args.loose_alpha} -> rate {alarms / args.runs:.3f} (95 % CI {low:.3f}..{high:.3f})", flush=True)
        if args.iut_runs:
            real = asyncio.run(real_iut_runs(args.iut_runs, args.loose_alpha))
            print(f"(a) real embedded reference: {real} false alarms in {args.iut_runs} certifications", flush=True)
        report_mutants(args.reps, args.alpha, pool)
    print(f"\ntotal {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
