"""Wall time of the verifier certification as 1, 2 and 3 shards run side by side on this machine, and an estimate
for N CI workers from the recorded per-case durations.

    python benchmarks/bench_shards.py [--repeats 3] [--max-shards 3]

Each configuration starts its N ``certify --shard K/N`` processes at once
(what N CI workers do, here on one machine) and is timed from the first
start to the last exit; configurations alternate within each repeat, and
the medians are printed with their ratio to one shard. On a 2-core machine
the processes compete for the cores, so the measured speed-up is bounded by
2 and the torch start-up (about 5 s per process) is paid N times; the
estimate below says what separate machines would give.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sdcp_conformance.harness.certify import default_catalogue
from sdcp_conformance.harness.shards import recorded_durations, shard_cases

SEED = "1"


def run_shards(count: int, folder: Path, *extra: str) -> float:
    started = time.perf_counter()
    processes = [subprocess.Popen([sys.executable, "-m", "sdcp_conformance.cli", "certify", "--seed", SEED,
                                   "--shard", f"{k}/{count}", "--report-dir", str(folder / f"{count}-{k}"), *extra],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                 for k in range(1, count + 1)]
    codes = [process.wait(timeout=900) for process in processes]
    elapsed = time.perf_counter() - started
    if any(codes):
        raise SystemExit(f"{count} shards: exit codes {codes}")
    return elapsed


def largest_share(count: int) -> float:
    """The largest shard's share of the suite's recorded case time, for ``count`` shards."""
    catalogue = default_catalogue()
    durations = recorded_durations(catalogue)
    cases = list(catalogue.cases.values())
    loads = [sum(durations.get(c.id, 0.0) for c in shard_cases(cases, k, count, durations, catalogue.sanity_id)
                 if c.id != catalogue.sanity_id) for k in range(1, count + 1)]
    return max(loads) / sum(loads)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-shards", type=int, default=3)
    args = parser.parse_args()
    counts = list(range(1, args.max_shards + 1))
    times: dict[int, list[float]] = {count: [] for count in counts}
    startup: list[float] = []
    with tempfile.TemporaryDirectory(prefix="bench-shards-") as work:
        for repeat in range(args.repeats):
            startup.append(run_shards(1, Path(work) / f"s{repeat}", "--only", "sanity"))
            for count in counts if repeat % 2 == 0 else reversed(counts):
                times[count].append(run_shards(count, Path(work) / f"r{repeat}"))
                print(f"repeat {repeat + 1}: {count} shard(s) {times[count][-1]:.1f} s", flush=True)
    base = statistics.median(times[1])
    print("\nshards  median wall (s)  vs 1 shard   (this machine, all shards side by side)")
    for count in counts:
        median = statistics.median(times[count])
        print(f"{count:>6}  {median:>15.1f}  {median / base:>9.2f}x")
    fixed = statistics.median(startup)
    print(f"\nstart-up and the sanity case alone (certify --only sanity): {fixed:.1f} s")
    print("estimate for N separate CI machines like this one: start-up + the 1-shard case time x the largest "
          "shard's share of the recorded durations")
    for count in (1, 2, 3, 4, 6, 8):
        share = largest_share(count)
        print(f"{count:>6}  {fixed + (base - fixed) * share:>6.1f} s  (largest shard {share:.0%} of the case time)")


if __name__ == "__main__":
    main()
