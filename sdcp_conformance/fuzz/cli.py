"""``sdcp-conformance fuzz``: stateful or message fuzzing of a verifier, with a live display and replay files.

Hypothesis is imported when the command runs, not when the command line
loads, so the other commands work without it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.live import Live
from rich.table import Table

from sdcp_conformance.errors import InvalidArgument

DEFAULT_OUT = Path(".sdcp-fuzz") / "failures"
DEFAULT_DATABASE = str(Path(".sdcp-fuzz") / "examples")


@click.command("fuzz")
@click.option("--target", "target_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Target TOML file (default: the embedded reference verifier).")
@click.option("--budget", help="Fuzz for this long (e.g. 90s, 10m, 1h).")
@click.option("--examples", type=int, help="Number of examples (default 100, or 1000 messages).")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--database", default=DEFAULT_DATABASE, show_default=True,
              help="Example database: a directory, a redis:// URL, or '' for none.")
@click.option("--replay", "replay_path", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Replay a saved failure; reports 'fixed' if it no longer fails.")
@click.option("--messages", is_flag=True, help="Fuzz single hostile messages instead of protocol sequences.")
@click.option("--api", "api", is_flag=True, help="Fuzz every verifier resource with schemathesis (OpenAPI 3.1).")
@click.option("--mutant", help="Run the embedded reference with this planted bug (see the mutant catalogue).")
@click.option("--steps", "step_count", type=int, default=12, show_default=True, help="Steps per stateful example.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_OUT, show_default=True,
              help="Where failures are saved as replay files.")
@click.option("--strict", is_flag=True, default=False,
              help="NON-STRICT findings (profile-only or SHOULD deviations) are failures too.")
def fuzz(target_file: Path | None, budget: str | None, examples: int | None, seed: int, database: str,
         replay_path: Path | None, messages: bool, api: bool, mutant: str | None, step_count: int,
         out: Path, strict: bool) -> None:
    """Fuzz a verifier IUT: Hypothesis-generated sessions (or --messages), shrunk failures saved for replay."""
    console = Console()
    try:
        from sdcp_conformance.fuzz import campaign
        from sdcp_conformance.harness.target import load_target

        target = load_target(target_file) if target_file is not None else None
        if replay_path is not None:
            _replay(console, campaign.replay_file(replay_path, target=target, mutant=mutant), replay_path)
            return
        if budget is not None and examples is not None:
            raise InvalidArgument("give --budget or --examples, not both")
        if api:
            from sdcp_conformance.fuzz.api import run_command

            sys.exit(run_command(console, target=target, mutant=mutant, examples=examples, seed=seed,
                                 budget_s=campaign.parse_budget(budget) if budget is not None else None))
        config = campaign.CampaignConfig(
            target=target, mutant=mutant, examples=examples, seed=seed, messages=messages, step_count=step_count,
            budget_s=campaign.parse_budget(budget) if budget is not None else None, out=out,
            database=_database(database), strict=strict)
        result = _run_live(console, campaign, config)
    except InvalidArgument as exc:
        raise click.UsageError(str(exc)) from exc
    _summary(console, result)
    if result.failure is not None or getattr(result.stats, "flaky", False):
        sys.exit(1)


def _database(spec: str) -> Any:
    from sdcp_conformance.fuzz.database import open_database

    return open_database(spec)


def _run_live(console: Console, campaign: Any, config: Any) -> Any:
    with Live(_table(None), console=console, refresh_per_second=4, transient=False) as live:
        return campaign.run_campaign(config, progress=lambda stats: live.update(_table(stats)))


def _table(stats: Any) -> Table:
    table = Table(title="sdcp-conformance fuzz", show_header=False)
    if stats is None:
        table.add_row("starting", "the environment")
        return table
    elapsed = max(stats.elapsed, 1e-9)
    if hasattr(stats, "messages"):
        table.add_row("messages", f"{stats.messages} ({stats.messages / elapsed:.0f}/s)")
        table.add_row("5xx / dropped", f"{stats.server_errors} / {stats.dropped}")
        table.add_row("canary rounds", str(stats.canary_rounds))
        table.add_row("NON-STRICT findings", str(len(stats.judge.deviations)))
    else:
        table.add_row("examples", str(stats.examples))
        table.add_row("steps", f"{stats.steps} ({stats.steps / elapsed:.0f}/s)")
        table.add_row("NON-STRICT findings", str(len(stats.judge.deviations)))
    table.add_row("elapsed", f"{elapsed:.0f} s")
    table.add_row("failure", "none yet" if stats.failure is None else stats.failure.message[:100])
    return table


def _summary(console: Console, result: Any) -> None:
    stats = result.stats
    if hasattr(stats, "messages"):
        console.print(f"{stats.messages} messages in {stats.elapsed:.0f} s ({stats.rate:.0f}/s): "
                      f"{stats.server_errors} 5xx, {stats.dropped} dropped, {stats.canary_rounds} canary rounds, "
                      f"status counts {dict(sorted(stats.by_status.items()))}")
    else:
        console.print(f"{stats.examples} examples, {stats.steps} steps in {stats.elapsed:.0f} s")
    _deviations(console, stats.judge)
    if getattr(stats, "flaky", False):
        console.print("[red]FLAKY[/red]: a failure was seen but did not happen again on the same steps (a "
                      "nondeterministic bug in the IUT); its steps are below when they were kept")
    if result.failure is None:
        console.print("[green]no failure found[/green]")
        return
    failure = result.failure
    flaky = " [red]flaky: it did not fail again on replay[/red]" if failure.flaky else ""
    console.print(f"[red]FAILURE[/red] ({failure.level} {failure.row}, {len(failure.steps)} steps after "
                  f"shrinking){flaky}:")
    console.print(failure.message, markup=False)
    for step in failure.steps:
        console.print(f"  {step.describe()}", markup=False)
    if result.saved is not None:
        from sdcp_conformance.fuzz.replay import replay_command

        console.print(f"saved: {result.saved}\nreplay: {replay_command(result.saved)}", markup=False)


def _deviations(console: Console, judge: Any) -> None:
    """NON-STRICT / INFORMATIONAL findings, one line per requirement row with a count and one example."""
    examples: dict[str, Any] = {}
    for finding in judge.deviations:
        examples.setdefault(finding.row, finding)
    for row, count in judge.summary().items():
        finding = examples[row]
        console.print(f"{finding.severity.value} {row} x{count}: {finding.message[:160]}", markup=False,
                      soft_wrap=True)


def _replay(console: Console, result: Any, path: Path) -> None:
    if result.fixed:
        console.print(f"[green]fixed[/green]: {path} no longer fails ({len(result.recorded.steps)} steps replayed)")
        return
    failure = result.failure
    console.print(f"[red]still fails[/red] ({failure.level}) after {len(failure.steps)} steps:", )
    console.print(failure.message, markup=False)
    if failure.transcript:
        console.print(failure.transcript, markup=False)
    sys.exit(1)


__all__ = ["fuzz"]
