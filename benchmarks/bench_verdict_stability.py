"""Verdict stability: the reference roles, served as separate processes, certified again and again, idle and busy.

P1-JUDGE-5 says time is not conformance: a verdict must not flip with the
machine's load. This script certifies the reference verifier, drafter and
router exactly as a vendor certifies its own (``pki init --iut ROLE``, the
printed ``serve ROLE`` command as a child process, ``certify --target``), N
times each, half of them under a CPU hog (busy processes this script starts
and stops, enough to hold the load average at ``--hog-factor`` times the
core count), and prints per role: runs, verdict flips (a case whose verdict
differs between runs), the wall time of each run, and every case that was not
PASSED with its findings (an INFORMATIONAL case — a lost answer resent, P1-JUDGE-6 — counts as passed, and
its coming and going between runs is no flip). ``--goaway`` adds verifier runs behind the
hypercorn-like keep-alive limit (``keepalive_verifier.py``: GOAWAY(NO_ERROR)
naming a last stream, the admitted streams abandoned, later frames answered
with GOAWAY(PROTOCOL_ERROR)); every other run of it is busy too.

    python benchmarks/bench_verdict_stability.py [--runs 10] [--roles verifier,drafter,router] [--goaway 2]

Exit status 0 when every run PASSED with no flips, 1 otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sdcp_conformance.testing.children import running, stop

CLI = [sys.executable, "-m", "sdcp_conformance.cli"]
READY_TIMEOUT_S = 120.0
CERTIFY_TIMEOUT_S = 1800.0
BAD = ("FAILED", "ERROR", "XPASS", "INCOMPLETE")


@contextlib.contextmanager
def served(role: str, folder: Path, keepalive: int | None) -> Iterator[Path]:
    """``pki init FOLDER --iut ROLE`` and its printed ``serve`` command as a child (or, with ``keepalive``, the
    reference verifier behind the hypercorn-like keep-alive limit, ``keepalive_verifier.py``); yields the target
    file."""
    made = subprocess.run([*CLI, "pki", "init", str(folder), "--iut", role], capture_output=True, text=True,
                          timeout=120, check=True)
    printed = next(line.strip() for line in made.stdout.splitlines()
                   if line.strip().startswith(f"sdcp-conformance serve {role}"))
    command = [*CLI, *shlex.split(printed)[1:]]
    if keepalive is not None:
        command = [sys.executable, str(Path(__file__).with_name("keepalive_verifier.py")), "--target",
                   str(folder / "target.toml"), "--goaway-after", str(keepalive)]
    with running(command, folder / "serve.log", timeout_s=READY_TIMEOUT_S):
        yield folder / "target.toml"


class Hog:
    """Busy processes holding the load average near ``factor`` times the core count: that many runnable processes,
    less the two the certification itself keeps busy (the harness and the IUT)."""

    def __init__(self, factor: float) -> None:
        self.count = max(1, round(factor * (os.cpu_count() or 1)) - 2)
        self.processes: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> Hog:
        spin = "import time\nwhile True:\n    sum(range(10000))\n"
        self.processes = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(self.count)]
        return self

    def __exit__(self, *exc: object) -> None:
        for process in self.processes:
            stop(process)


def certify(target: Path, reports: Path, seed: int) -> tuple[int, dict[str, Any], float, float]:
    """One ``certify --target`` run; (exit status, report.json, wall seconds, 1-minute load average at its end)."""
    started = time.perf_counter()
    done = subprocess.run([*CLI, "certify", "--target", str(target), "--seed", str(seed), "--report-dir",
                           str(reports)], capture_output=True, text=True, timeout=CERTIFY_TIMEOUT_S)
    took = time.perf_counter() - started
    found = reports / "report.json"
    report = json.loads(found.read_text(encoding="utf-8")) if found.exists() else {}
    if not report:
        print(f"    no report (exit {done.returncode}): {done.stderr.strip()[-400:]}")
    lost = sum(1 for case in report.get("results", []) for finding in case.get("findings", [])
               if finding.get("row") == "P1-JUDGE-6/LOST-ANSWER")
    if lost:
        print(f"    {lost} lost answer(s) resent (P1-JUDGE-6, INFORMATIONAL)")
    return done.returncode, report, took, os.getloadavg()[0]


def _bad_cases(report: dict[str, Any]) -> list[str]:
    lines = []
    for case in report.get("results", []):
        if case.get("verdict") in ("PASSED", "SKIPPED", "XFAIL", "INFORMATIONAL"):
            continue
        lines.append(f"{case['verdict']} {case['id']} ({case.get('run', 'main')})")
        lines.extend(f"        [{f['severity']}] {f['row']}: {f['message'][:300]}" for f in case.get("findings", []))
    return lines


def run_role(role: str, runs: int, hog_factor: float, seed: int, keepalive: int | None, label: str) -> bool:
    verdicts: dict[str, set[str]] = defaultdict(set)
    walls: dict[bool, list[float]] = {False: [], True: []}
    statuses: list[str] = []
    clean = True
    with tempfile.TemporaryDirectory(prefix=f"stability-{role}-") as tmp:
        folder = Path(tmp) / "pki"
        with served(role, folder, keepalive) as target:
            for index in range(runs):
                busy = index % 2 == 1
                with Hog(hog_factor) if busy else contextlib.nullcontext():
                    code, report, took, load = certify(target, Path(tmp) / f"run-{index}", seed + index)
                status = report.get("run", {}).get("status", f"no report (exit {code})")
                statuses.append(status)
                walls[busy].append(took)
                for case in report.get("results", []):
                    # An INFORMATIONAL lost answer (P1-JUDGE-6) comes and goes with the server's timing: a pass.
                    seen = "PASSED" if case["verdict"] == "INFORMATIONAL" else case["verdict"]
                    verdicts[f"{case['id']} ({case.get('run', 'main')})"].add(seen)
                bad = _bad_cases(report)
                clean &= status == "PASSED" and not bad
                print(f"  {label} run {index + 1}/{runs} {'busy' if busy else 'idle'}: {status} in {took:.0f} s "
                      f"(load average {load:.1f}), exit {code}", flush=True)
                for line in bad:
                    print(f"    {line}", flush=True)
    flips = sorted(case for case, seen in verdicts.items() if len(seen) > 1)
    print(f"{label}: {runs} runs, {statuses.count('PASSED')} PASSED, {len(flips)} verdict flips"
          + (f" ({', '.join(flips[:10])})" if flips else ""))
    for busy, times in walls.items():
        if times:
            print(f"  {'busy' if busy else 'idle'} wall time: median {statistics.median(times):.0f} s, "
                  f"min {min(times):.0f} s, max {max(times):.0f} s over {len(times)} runs")
    return clean and not flips


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="certifications per role (half under the hog)")
    parser.add_argument("--roles", default="verifier,drafter,router")
    parser.add_argument("--hog-factor", type=float, default=3.5, help="busy processes per core while busy")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--goaway", type=int, default=0, metavar="N",
                        help="also N verifier runs behind the hypercorn-like keep-alive limit")
    parser.add_argument("--goaway-after", type=int, default=40, help="requests per connection in that mode")
    args = parser.parse_args()
    ok = True
    for role in [name.strip() for name in args.roles.split(",") if name.strip()]:
        ok &= run_role(role, args.runs, args.hog_factor, args.seed, None, role)
    if args.goaway:
        ok &= run_role("verifier", args.goaway, args.hog_factor, args.seed, args.goaway_after,
                       f"verifier behind a keep-alive limit of {args.goaway_after} requests")
    print("stable" if ok else "NOT stable")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
