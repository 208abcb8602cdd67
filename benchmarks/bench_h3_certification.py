"""A full verifier certification over HTTP/3 against the same over HTTP/2, on the same machine, in one run.

Run: ``python benchmarks/bench_h3_certification.py [--repeat R] [--select SELECTOR ...]``. Each run certifies the
embedded reference verifier with every case of the catalogue (or the selection), its listeners and the harness's
parties serving HTTP/3 only (``http = "3"``) or HTTP/2 only (``http = "2"``). The runs alternate (HTTP/3, HTTP/2,
HTTP/3, …) with the same seed, so a change in the machine's load touches both alike. It prints each run's wall
time and status, each version's median, and the ratio HTTP/3 : HTTP/2 (issue 44: at most 1.5).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from sdcp_conformance.harness.certify import certify

VERSIONS = ("3", "2")
SEED = 44
LIMIT = 1.5


async def one_run(http: str, selectors: list[str]) -> tuple[float, str, int]:
    """Seconds, run status and number of cases of one certification serving ``http``."""
    started = time.perf_counter()
    report = await certify(selectors=selectors, seed=SEED, http=http)  # type: ignore[arg-type]
    return time.perf_counter() - started, report.status, len(report.results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2, help="runs per version (default 2)")
    parser.add_argument("--select", action="append", default=[], help="case selector (default: every case)")
    options = parser.parse_args()
    seconds: dict[str, list[float]] = {version: [] for version in VERSIONS}
    for attempt in range(options.repeat):
        for version in VERSIONS:
            elapsed, status, cases = asyncio.run(one_run(version, options.select))
            seconds[version].append(elapsed)
            print(f"run {attempt + 1} HTTP/{version}: {elapsed:7.1f} s  {status}  ({cases} results)", flush=True)
    h3, h2 = statistics.median(seconds["3"]), statistics.median(seconds["2"])
    print(f"median HTTP/3 {h3:.1f} s, HTTP/2 {h2:.1f} s; ratio HTTP/3 : HTTP/2 = {h3 / h2:.2f} "
          f"({'within' if h3 / h2 <= LIMIT else 'OVER'} the {LIMIT}x of issue 44)")


if __name__ == "__main__":
    main()
