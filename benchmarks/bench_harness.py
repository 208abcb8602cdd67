"""Rounds per second the harness drives, side by side: fast stand-in verifiers, the reference, and the transport bound.

Run: ``python benchmarks/bench_harness.py [--stat ID ...] [--ordinary SELECTOR ...] [--reps N] [--seed N]
[--h2load-requests N] [--no-python-standin] [--no-separate-reference] [--no-embedded-reference] [--no-profile]``
(h2load: ``apt-get install -y nghttp2-client``; the Node.js stand-in: ``apt-get install -y nodejs npm``). In one
run it measures (issue 16):

* **the statistical driver** (``suites/verifier/rule2_stats.py``): the selected ``VER-6.4-RULE2-STAT-*`` cases,
  one at a time (``--reps`` runs each, interleaved across the verifiers; medians printed), then all of them at once
  as a certification runs them (``run_catalogue``, 4 jobs). A round is a proposal answered with a verdict, counted
  in the case's transcript (``harness_drive.py`` says how the runs are ordered and warmed up);
* **ordinary cases** (default: rule 1, fencing, idempotency, those that need only ``bigram``), one at a time;
* against (a) the **stand-in on Node.js** (``tests.standins.standin_node``: a verifier in JavaScript on
  Node's HTTP/2, which is nghttp2, so that a round costs the IUT little and the harness's own limit shows),
  (b) the **Python stand-in** (``tests.standins.standin_verifier``: the reference's session machine on
  the bigram closed form, no torch), each in its own process, (c) the **reference** verifier in its own process
  (``serve verifier --model bigram``) and (d) the **embedded** reference (in this process, as ``certify`` runs
  it), whose scoring passes are timed;
* the **transport bound**: h2load's requests/s on the project's HTTP/2 server (a trivial handler, in a child
  process, one connection, as many streams as the driver keeps in flight) divided by the HTTP exchanges a round
  costs, counted in the transcripts (the proposal, and the IUT's q_rows GET and commit-log GET / PUT / read-back
  GET on the harness's cache);
* the harness's **CPU per round**: this process's and its rule-2 judge process's (``harness/rule2_judging.py``),
  each read apart; a separate IUT's CPU is read from ``/proc`` too;
* a **profile** of where the harness process's own time goes (cProfile over the STAT cases against the first
  stand-in, grouped by module: ``harness_profile.py``; the judge process is not profiled), and the time to write
  the reports of those cases.

It prints ratios: rounds/s against the Node.js stand-in over the transport bound (issue 16 asks >= 0.6), and
against the reference, what limits it. The machine's load average is printed before and after: the figures are
only as quiet as the machine was.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # the checkout's root: the stand-ins of tests/standins/

from harness_bound import TransportBound, measure_transport
from harness_drive import JOBS, ROUND_KINDS, Drive, Measured, design_names, drive_all
from harness_iuts import exchanges, load_average, verdicts
from harness_profile import IDLE, by_group, top_functions

from sdcp_conformance.harness.case import Case, Catalogue
from sdcp_conformance.harness.certify import default_catalogue
from sdcp_conformance.oracle.rule2_designs import design

TRANSPORT_GROUPS = ("server (H2Server)", "client (IutLink, H2Client)", "TLS and sockets (asyncio transports)",
                    "event loop (asyncio)")
"""The profile's groups that are the harness's share of moving a round's bytes (its cache serves four exchanges,
its client sends one): what is left when the harness does nothing else."""

STAT_CASES = ("VER-6.4-RULE2-STAT-001", "VER-6.4-RULE2-STAT-003", "VER-6.4-RULE2-STAT-008")
ORDINARY = ("rule-1", "fencing", "idempotency")
VERIFIERS = (("stand-in, Node.js (own process)", "node"), ("stand-in, Python (own process)", "standin"),
             ("reference (own process)", "reference"), ("reference (embedded)", "embedded"))


def _rate(rounds: float, seconds: float) -> float:
    return rounds / seconds if seconds > 0 else float("nan")


def _median(runs: Sequence[Measured], value: Callable[[Measured], float]) -> float:
    return statistics.median(value(m) for m in runs)


def _iut_ms(runs: Sequence[Measured]) -> str:
    if any(m.took.iut_cpu_s is None for m in runs):
        return "(in-proc)"
    return f"{_median(runs, lambda m: 1000 * (m.took.iut_cpu_s or 0.0) / m.rounds):.2f}"


def _bound_of(runs: Sequence[Measured], bound: TransportBound) -> float:
    """Rounds/s the transport allows: h2load's rate at the case's streams over the exchanges of a round."""
    return bound.rate(runs[0].sessions) / _median(runs, lambda m: m.round_exchanges)


def print_transport(bound: TransportBound) -> None:
    print("\ntransport: h2load -c 1 on the project's HTTP/2 server (trivial handler, TLS 1.3, no client "
          "certificate), median of the interleaved runs before and after driving the verifiers")
    print(f"{'streams':>9} {'h2load req/s':>13} {'server CPU ms/req':>18} {'H2Client req/s':>15} {'ratio':>6}")
    for streams, rate in sorted(bound.rates.items()):
        spread = "/".join(f"{r:.0f}" for r, _ in bound.runs[streams])
        python = bound.python_rate(streams)
        print(f"{streams:>9} {rate:>13.0f} {bound.server_cpu_ms[streams]:>18.3f} {python:>15.0f} {python / rate:>6.2f}"
              f"   h2load runs {spread}")
    print("  (H2Client: the project's client, with its certificate, on the same server: two Python processes doing "
          "nothing but HTTP/2, as a round's exchanges between a Python harness and a Python IUT are)")


def print_exchanges(drive: Drive) -> None:
    kinds: Counter[str] = Counter()
    rounds = 0
    for measured in drive.stat:
        kinds.update(exchanges(measured.result))
        rounds += measured.rounds
    per = ", ".join(f"{kind} {kinds[kind] / rounds:.2f}" for kind in ROUND_KINDS)
    setup = ", ".join(f"{kind} {count}" for kind, count in sorted(kinds.items()) if kind not in ROUND_KINDS)
    print(f"\nHTTP exchanges per statistical round ({drive.label}, {rounds} rounds): {per} "
          f"= {sum(kinds[k] for k in ROUND_KINDS) / rounds:.2f}; set-up besides: {setup}")


def print_stat(drives: Sequence[Drive], bound: TransportBound) -> None:
    reps = len(next(iter(drives[0].by_case().values())))
    print(f"\nstatistical driver, one case at a time: medians of {reps} interleaved runs (rounds = verdicts; "
          "bound = h2load at the case's streams / exchanges per round)")
    print(f"{'verifier':<31} {'case':<23} {'sess':>4} {'rounds':>6} {'wall s':>6} {'rounds/s (min-max)':>19} "
          f"{'harness CPU ms/r':>16} {'of it judge':>11} {'IUT CPU ms/r':>12} {'bound r/s':>9} {'ratio':>6}")
    for drive in drives:
        for case_id, runs in drive.by_case().items():
            rates = [_rate(m.rounds, m.took.wall_s) for m in runs]
            failed = [m.result.verdict.value for m in runs if m.result.verdict.value != "PASSED"]
            limit = _bound_of(runs, bound)
            print(f"{drive.label:<31} {case_id:<23} {runs[0].sessions:>4} {runs[0].rounds:>6} "
                  f"{_median(runs, lambda m: m.took.wall_s):>6.2f} "
                  f"{statistics.median(rates):>7.1f} ({min(rates):>4.0f}-{max(rates):>4.0f}) "
                  f"{_median(runs, lambda m: 1000 * m.took.cpu_s / m.rounds):>16.2f} "
                  f"{_median(runs, lambda m: 1000 * m.took.judge_cpu_s / m.rounds):>11.2f} {_iut_ms(runs):>12} "
                  f"{limit:>9.0f} {statistics.median(rates) / limit:>6.2f}" + (f"  {failed}" if failed else ""))
        if drive.together is not None:
            report, took = drive.together
            rounds = sum(verdicts(r) for r in report.results if r.case.area == "rule-2")
            streams = min(32, sum(runs[0].sessions for runs in drive.by_case().values()))
            limit = bound.rate(streams) / statistics.mean(m.round_exchanges for m in drive.stat)
            iut = f"{1000 * took.iut_cpu_s / rounds:.2f}" if took.iut_cpu_s is not None else "(in-proc)"
            print(f"{drive.label:<31} {f'together, {JOBS} jobs, ' + report.status:<23} {streams:>4} {rounds:>6} "
                  f"{took.wall_s:>6.2f} {_rate(rounds, took.wall_s):>7.1f} {'':>11} "
                  f"{1000 * took.cpu_s / rounds:>16.2f} {1000 * took.judge_cpu_s / rounds:>11.2f} {iut:>12} "
                  f"{limit:>9.0f} {_rate(rounds, took.wall_s) / limit:>6.2f}")


def print_ordinary(drives: Sequence[Drive]) -> None:
    print("\nordinary cases, one at a time, interleaved across the verifiers (rounds = verdicts)")
    print(f"{'verifier':<31} {'cases':>5} {'passed':>6} {'rounds':>6} {'exchanges':>9} {'wall s':>7} "
          f"{'rounds/s':>8} {'harness CPU ms/r':>16} {'IUT CPU ms/r':>12}")
    for drive in drives:
        rounds = sum(m.rounds for m in drive.ordinary)
        wall = sum(m.took.wall_s for m in drive.ordinary)
        cpu = sum(m.took.cpu_s for m in drive.ordinary)
        traffic = sum(len(m.result.transcript) for m in drive.ordinary)
        passed = sum(m.result.verdict.value == "PASSED" for m in drive.ordinary)
        iut_all = [m.took.iut_cpu_s for m in drive.ordinary]
        iut = f"{1000 * sum(x or 0.0 for x in iut_all) / rounds:.2f}" if None not in iut_all else "(in-proc)"
        print(f"{drive.label:<31} {len(drive.ordinary):>5} {passed:>6} {rounds:>6} {traffic:>9} {wall:>7.2f} "
              f"{_rate(rounds, wall):>8.1f} {1000 * cpu / max(1, rounds):>16.2f} {iut:>12}")
    slow = sorted(drives[0].ordinary, key=lambda m: -m.took.wall_s)[:4]
    print("  slowest against the " + drives[0].label + ": " + ", ".join(
        f"{m.case.id} {m.took.wall_s:.2f} s ({m.rounds} rounds)" for m in slow))


def print_reference(embedded: Drive, standin: Drive) -> None:
    print(f"\nwhat limits the {embedded.label}: its scoring passes (timed inside its batcher), medians")
    print(f"{'case':<23} {'rounds/s':>8} {'vs stand-in':>11} {'items/pass':>10} {'score ms/r':>10} "
          f"{'score CPU ms/r':>14} {'% of wall':>9} {'reference CPU ms/r':>18}")
    standin_runs = standin.by_case()
    for case_id, runs in embedded.by_case().items():
        rate = _median(runs, lambda m: _rate(m.rounds, m.took.wall_s))
        other = standin_runs.get(case_id, runs)
        harness = _median(other, lambda m: m.took.cpu_s / m.rounds)

        def scoring(m: Measured) -> tuple[float, float, float, float]:
            tally = m.took.scoring
            assert tally is not None
            return tally.items / max(1, tally.passes), tally.wall_s / m.rounds, tally.cpu_s / m.rounds, \
                tally.wall_s / m.took.wall_s

        items, wall, cpu, share = (statistics.median(values) for values in zip(*map(scoring, runs), strict=True))
        own = 1000 * (_median(runs, lambda m: m.took.cpu_s / m.rounds) - harness)
        print(f"{case_id:<23} {rate:>8.1f} {rate / _median(other, lambda m: _rate(m.rounds, m.took.wall_s)):>11.2f} "
              f"{items:>10.1f} {1000 * wall:>10.2f} {1000 * cpu:>14.2f} {100 * share:>9.0f} {own:>18.2f}")
    print("  (reference CPU ms/r: the embedded process's CPU per round minus the harness's own against the stand-in)")


def _ms_per_round(drive: Drive) -> dict[str, float]:
    """The profile's busy groups scaled to the CPU per round measured without the profiler (ms per round)."""
    assert drive.profile is not None
    groups = by_group(drive.profile[0])
    busy = sum(seconds for group, seconds in groups.items() if group != IDLE)
    unprofiled = statistics.median((m.took.cpu_s - m.took.judge_cpu_s) / m.rounds for m in drive.stat)
    return {group: 1000 * unprofiled * seconds / busy for group, seconds in groups.items() if group != IDLE}


def print_profile(drive: Drive, count: int) -> None:
    assert drive.profile is not None
    stats, rounds, took = drive.profile
    groups = by_group(stats)
    scaled = _ms_per_round(drive)
    total = sum(scaled.values())
    unprofiled = statistics.median((m.took.cpu_s - m.took.judge_cpu_s) / m.rounds for m in drive.stat)
    print(f"\nprofile of the harness process against the {drive.label} (cProfile, the STAT cases again: {rounds} "
          f"rounds, {took.wall_s:.1f} s wall under the profiler); shares scaled to the median {1000 * unprofiled:.2f} "
          "ms CPU per round of the harness process measured without it")
    print(f"{'group':<54} {'share':>6} {'ms/round':>9}")
    for group, ms in scaled.items():
        print(f"{group:<54} {100 * ms / total:>5.1f}% {ms:>9.3f}")
    print(f"{'(' + IDLE + ', not work; profiled)':<54} {'':>6} {1000 * groups.get(IDLE, 0.0) / rounds:>9.3f}")
    print(f"top {count} project functions by own time (profiled seconds, calls):")
    for name, seconds, calls in top_functions(stats, count):
        print(f"  {seconds:7.3f} s {calls:>8}  {name}")
    if drive.reports is not None and drive.together is not None:
        took_reports, profile = drive.reports
        written = sum(verdicts(r) for r in drive.together[0].results)
        print(f"writing the reports of the 'together' run ({len(drive.together[0].results)} results, {written} "
              f"rounds): {took_reports.wall_s:.2f} s wall, {took_reports.cpu_s:.2f} s CPU = "
              f"{1000 * took_reports.cpu_s / written:.2f} ms CPU per round")
        groups = by_group(profile)
        busy = sum(groups.values())
        print("  under the profiler: " + ", ".join(f"{group} {100 * seconds / busy:.0f}%"
                                                   for group, seconds in list(groups.items())[:5]))
        print("  top functions: " + "; ".join(f"{name} {seconds:.2f} s"
                                              for name, seconds, _ in top_functions(profile, 6)))


def _ratio(drive: Drive, bound: TransportBound) -> tuple[float, float, float]:
    """(rounds/s, ratio to the bound, the bound's rounds/s) of the STAT cases one at a time, medians summed."""
    cases = drive.by_case()
    wall = sum(_median(runs, lambda m: m.took.wall_s) for runs in cases.values())
    rounds = sum(runs[0].rounds for runs in cases.values())
    allowed = sum(runs[0].rounds / _bound_of(runs, bound) for runs in cases.values())
    return _rate(rounds, wall), allowed / wall, rounds / allowed


def print_summary(standin: Drive, python: Drive | None, embedded: Drive | None, bound: TransportBound) -> None:
    cases = standin.by_case()
    wall = sum(_median(runs, lambda m: m.took.wall_s) for runs in cases.values())
    rounds = sum(runs[0].rounds for runs in cases.values())
    rate, ratio, limit = _ratio(standin, bound)
    exchanges = statistics.median(m.round_exchanges for m in standin.stat)
    python_floor = sum(runs[0].rounds * exchanges / bound.python_rate(runs[0].sessions) for runs in cases.values())
    print("\nsummary")
    print(f"  against the {standin.label}, STAT cases one at a time: {rate:.1f} rounds/s = {ratio:.2f} x the "
          f"transport bound of {limit:.0f} rounds/s (target >= 0.60: {'met' if ratio >= 0.6 else 'NOT met'})")
    if python is not None:
        rate_py, ratio_py, _ = _ratio(python, bound)
        print(f"  against the {python.label}: {rate_py:.1f} rounds/s = {ratio_py:.2f} x the bound (a Python IUT pays "
              "as much per round for HTTP/2 as the harness does, so it sets the pace)")
    print(f"  the same exchanges with the project's H2Client instead of h2load (both ends Python, no work per round) "
          f"allow {rounds / python_floor:.0f} rounds/s = {(rounds / python_floor) / limit:.2f} x the h2load bound")
    cpu = statistics.median(m.took.cpu_s / m.rounds for m in standin.stat)
    judge = statistics.median(m.took.judge_cpu_s / m.rounds for m in standin.stat)
    iut = statistics.median((m.took.iut_cpu_s or 0.0) / m.rounds for m in standin.stat)
    print(f"  harness CPU per round against the {standin.label}: {1000 * cpu:.2f} ms = its process "
          f"{1000 * (cpu - judge):.2f} ms + its rule-2 judge process {1000 * judge:.2f} ms; the stand-in's own: "
          f"{1000 * iut:.2f} ms; wall per round {1000 * wall / rounds:.2f} ms (0.6 x the bound needs "
          f"{1000 / (0.6 * limit):.2f} ms; the three processes share 2 cores: {1000 * (cpu + iut) / 2:.2f} ms of CPU "
          "per core per round)")
    own = 1 / (cpu - judge)
    print(f"  the harness process alone, never waiting (its judge and the IUT on cores of their own), would allow "
          f"{own:.0f} rounds/s = {own / limit:.2f} x the bound")
    if standin.profile is not None:
        transport = sum(_ms_per_round(standin).get(group, 0.0) for group in TRANSPORT_GROUPS)
        print(f"  of the harness process's CPU per round, moving the round's bytes (server, client, TLS, event loop) "
              f"takes {transport:.2f} ms and the rest (drafting, encoding, judging verdicts, cache app) "
              f"{1000 * (cpu - judge) - transport:.2f} ms")
    if embedded is not None:
        e_cases = embedded.by_case()
        e_wall = sum(_median(runs, lambda m: m.took.wall_s) for runs in e_cases.values())
        e_rounds = sum(runs[0].rounds for runs in e_cases.values())
        scoring = sum(_median(runs, lambda m: m.took.scoring.wall_s if m.took.scoring else 0.0)
                      for runs in e_cases.values())
        e_cpu = statistics.median(m.took.cpu_s / m.rounds for m in embedded.stat)
        e_judge = statistics.median(m.took.judge_cpu_s / m.rounds for m in embedded.stat)
        print(f"  against the {embedded.label}: {_rate(e_rounds, e_wall):.1f} rounds/s "
              f"({_rate(e_rounds, e_wall) / rate:.2f} x the {standin.label}'s); its scoring passes take "
              f"{100 * scoring / e_wall:.0f} % of the wall time ({1000 * scoring / e_rounds:.2f} ms per round); "
              f"harness and reference share one process: {1000 * (e_cpu - e_judge):.2f} ms CPU per round "
              f"(at most {1 / (e_cpu - e_judge):.0f} rounds/s on one core), the judge process {1000 * e_judge:.2f} ms")


def _cases(catalogue: Catalogue, stat: Sequence[str], ordinary: Sequence[str]) -> tuple[list[Case], list[Case]]:
    chosen = [case for case in catalogue.select(ordinary) if set(case.requires) <= {"model:bigram"}]
    return catalogue.select(stat), [case for case in chosen if case.id != catalogue.sanity_id]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stat", nargs="+", default=list(STAT_CASES), help="statistical cases (IDs)")
    parser.add_argument("--ordinary", nargs="+", default=list(ORDINARY), help="ordinary cases (IDs or areas)")
    parser.add_argument("--reps", type=int, default=3, help="runs of each STAT case against each verifier")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--h2load-requests", type=int, default=8000)
    parser.add_argument("--repeat", type=int, default=3, help="h2load runs per level, before and after")
    parser.add_argument("--no-python-standin", action="store_true")
    parser.add_argument("--no-separate-reference", action="store_true")
    parser.add_argument("--no-embedded-reference", action="store_true")
    parser.add_argument("--no-profile", action="store_true")
    parser.add_argument("--top", type=int, default=15, help="project functions listed from the profile")
    args = parser.parse_args()
    if shutil.which("h2load") is None:
        sys.exit("h2load not found: apt-get install -y nghttp2-client")
    catalogue = default_catalogue("verifier")
    cases = _cases(catalogue, args.stat, args.ordinary)
    verifiers = [VERIFIERS[0]]
    verifiers += [] if args.no_python_standin else [VERIFIERS[1]]
    verifiers += [] if args.no_separate_reference else [VERIFIERS[2]]
    verifiers += [] if args.no_embedded_reference else [VERIFIERS[3]]
    before = load_average()
    print(f"load average before: {before} (2 cores shared with other work); seed {args.seed}; "
          f"STAT cases {', '.join(c.id for c in cases[0])}; {len(cases[1])} ordinary cases")
    sessions = [design(name).sessions for name in design_names(cases[0])]
    streams = sorted({1, *sessions, min(32, sum(sessions))})
    with tempfile.TemporaryDirectory(prefix="bench-harness-") as tmp:
        work = Path(tmp)
        bound = measure_transport(work / "before", streams, args.h2load_requests, args.repeat)
        drives = asyncio.run(drive_all(verifiers, cases, catalogue, args.seed, args.reps, work,
                                       profile=not args.no_profile))
        bound = bound.merged(measure_transport(work / "after", streams, args.h2load_requests, args.repeat))
    embedded = next((drive for drive in drives if drive.label == VERIFIERS[3][0]), None)
    python = next((drive for drive in drives if drive.label == VERIFIERS[1][0]), None)
    print_transport(bound)
    print_exchanges(drives[0])
    print_stat(drives, bound)
    print_ordinary(drives)
    if embedded is not None:
        print_reference(embedded, drives[0])
    if drives[0].profile is not None:
        print_profile(drives[0], args.top)
    print_summary(drives[0], python, embedded, bound)
    print(f"\nload average before {before}, after {load_average()}")


if __name__ == "__main__":
    main()
