"""The drafter sampling tests over many seeds: false-alarm rate and rounds-to-reject per alternative family.

    python benchmarks/bench_drafter_sampling.py                 # 100 null seeds, 40 per alternative
    python benchmarks/bench_drafter_sampling.py --null-seeds 400 --alt-seeds 100

The simulated drafters (:mod:`sdcp_conformance.oracle.drafter_simulation`) draw from the bigram closed forms
exactly as the certification's sampling cases see the embedded drafter: two interleaved sessions at
temperatures 0.125 and 1, M = 8, the played verifier accepting everything and steering the first position's
context (DRF-5.2-EXACT-ROW-001), or one seeded session at temperature 1 (DRF-6.4-NOT-HMAC-001). Each test has
the alpha the certification gives it (1e-6 split over the two cases); Ville's inequality bounds its false
alarms by that alpha whatever the seed, so the null rows below should show none, and the distance of the
largest log e-value from the threshold says how far from a false alarm the null runs stayed.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

from sdcp_conformance.oracle.drafter_sampling import DRAFTER_ALPHA
from sdcp_conformance.oracle.drafter_simulation import KINDS, simulate
from sdcp_conformance.oracle.statistics import case_alpha
from sdcp_conformance.suites.drafter.sampling import (
    EXACT_PROFILES,
    EXACT_ROUNDS,
    HMAC_ROUNDS,
    STATISTICAL_CASES,
)

M = 8
ALPHA = case_alpha(DRAFTER_ALPHA, STATISTICAL_CASES)
EXACT = [tuple(sorted(profile.items())) for profile in EXACT_PROFILES]
HMAC = [(("temperature_milli", 1000),)]


def _quantile(values: list[int], q: float) -> float:
    ordered = sorted(values)
    return float(ordered[min(len(ordered) - 1, int(q * len(ordered)))])


def run_null(seeds: int, *, hmac: bool) -> str:
    alarms, margins, started = 0, [], time.perf_counter()
    for seed in range(seeds):
        test = simulate("exact", seed=10_000 + seed, alpha=ALPHA, rounds=HMAC_ROUNDS if hmac else EXACT_ROUNDS,
                        m=M, profiles=HMAC if hmac else EXACT, hmac_seed=7 + seed if hmac else None)
        alarms += test.rejected
        margins.append(test.threshold - test.max_log_e)
    name = "not-hmac" if hmac else "exact-row"
    return (f"{name:10} null (a correct drafter)     seeds {seeds:4}  false alarms {alarms:3} "
            f"({alarms / seeds:.3f}; bound {ALPHA:.1e})  smallest gap to log(1/alpha) {min(margins):6.2f} "
            f"(median {statistics.median(margins):6.2f})  [{time.perf_counter() - started:5.1f} s]")


def run_alternative(kind: str, seeds: int) -> str:
    hmac = kind == "hmac"
    rounds_needed, caught, started = [], 0, time.perf_counter()
    budget = HMAC_ROUNDS if hmac else EXACT_ROUNDS
    for seed in range(seeds):
        test = simulate(kind, seed=20_000 + seed, alpha=ALPHA, rounds=budget, m=M, profiles=HMAC if hmac else EXACT,
                        hmac_seed=7 + seed if hmac else None)
        if test.rejected:
            caught += 1
            rounds_needed.append(test.rounds)
    stats = (f"rounds to reject: median {statistics.median(rounds_needed):5.1f}, p90 "
             f"{_quantile(rounds_needed, 0.9):5.1f}, max {max(rounds_needed):4d}" if rounds_needed else
             "never rejected")
    return (f"{'not-hmac' if hmac else 'exact-row':10} {kind:26} seeds {seeds:4}  rejected {caught:3} "
            f"({caught / seeds:.2f}) within {budget} rounds; {stats}  [{time.perf_counter() - started:5.1f} s]")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--null-seeds", type=int, default=100)
    parser.add_argument("--alt-seeds", type=int, default=40)
    args = parser.parse_args()
    print(f"alpha per case {ALPHA:.1e} (log(1/alpha) = {math.log(1 / ALPHA):.2f}); M = {M}; exact-row budget "
          f"{EXACT_ROUNDS} rounds ({EXACT_ROUNDS * M} draws), not-hmac budget {HMAC_ROUNDS} rounds")
    print(run_null(args.null_seeds, hmac=False))
    print(run_null(args.null_seeds, hmac=True))
    for kind in KINDS:
        if kind != "exact":
            print(run_alternative(kind, args.alt_seeds))


if __name__ == "__main__":
    main()
