"""``sdcp-conformance fuzz --role router``: the failover campaign from the command line.

A campaign runs a number of examples (``--examples``) or for a time
(``--budget``, in chunks of :data:`CHUNK` examples); the first violation is
shrunk by Hypothesis and saved as a replay file, whose command is printed.
``--replay FILE`` runs a saved schedule once against the router it failed
against and says ``fixed`` when it no longer fails (another router only with
``--against-other-iut``, and then never ``fixed``). Exit status: 0 clean, 1 a violation (a PROFILE-level one only
under ``--strict``), 130 interrupted.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from rich.console import Console

from sdcp_conformance.fuzz.rules.failover import (
    FailoverConfig,
    FailoverResult,
    replay_failover,
    run_failover_campaign,
)
from sdcp_conformance.fuzz.scaffold import FuzzFailure
from sdcp_conformance.harness.target import TargetConfig

CHUNK = 20
DEFAULT_EXAMPLES = 40


def fuzz_router(console: Console, *, target: TargetConfig | None, replay_path: Path | None, budget: str | None,
                examples: int | None, seed: int, database: Any, mutant: str | None, out: Path, strict: bool,
                step_count: int, other_iut: bool = False) -> int:
    """Run (or replay) the failover campaign; returns the exit status."""
    from sdcp_conformance.cli.fuzz_display import replay_line
    from sdcp_conformance.fuzz.campaign import parse_budget

    if replay_path is not None:
        replayed = replay_failover(replay_path, target=target, mutant=mutant, other_iut=other_iut)
        console.print(replay_line(replayed, replay_path), highlight=False, soft_wrap=True)
        if replayed.failure is None:
            return 0
        _failure(console, replayed.failure)
        return 1
    steps = min(step_count, 10)
    try:
        if budget is None:
            result = run_failover_campaign(FailoverConfig(target, mutant, examples or DEFAULT_EXAMPLES, seed, steps,
                                                          database, out))
        else:
            result = _for_a_while(parse_budget(budget), target, mutant, seed, steps, database, out)
    except KeyboardInterrupt:
        console.print("interrupted")
        return 130
    stats = result.stats
    console.print(f"{stats.examples} examples, {stats.steps} steps, {stats.failovers} completed failovers in "
                  f"{stats.elapsed:.0f} s")
    if result.failure is None:
        console.print("[green]no violation found[/green]")
        return 0
    console.print(f"[red]VIOLATION[/red] ({result.failure.level}), shortest history: {len(result.failure.steps)} "
                  "steps")
    _failure(console, result.failure)
    if result.saved is not None:
        console.print(f"saved: {result.saved}", markup=False)
        console.print(f"replay: {result.iut.replay_command(result.saved)}", markup=False, soft_wrap=True)
    return 1 if strict or result.failure.level != "PROFILE" else 0


def _for_a_while(seconds: float, target: TargetConfig | None, mutant: str | None, seed: int, steps: int,
                 database: Any, out: Path) -> FailoverResult:
    started, round_ = time.monotonic(), 0
    while True:
        result = run_failover_campaign(FailoverConfig(target, mutant, CHUNK, seed + round_, steps, database, out))
        if result.failure is not None or time.monotonic() - started >= seconds:
            return result
        round_ += 1


def _failure(console: Console, failure: FuzzFailure) -> None:
    console.print(failure.message, markup=False)
    for step in failure.steps:
        console.print(f"  {step.describe()}", markup=False)


__all__ = ["CHUNK", "DEFAULT_EXAMPLES", "fuzz_router"]
