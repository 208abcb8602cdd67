"""What ``sdcp-conformance fuzz`` shows, for every role's campaign: the live table, the closing summary, the
deviations, the replay verdict, values in CBOR diagnostic notation (``h'…'`` for bytes, as transcripts do)."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.markup import escape
from rich.table import Table

_BYTES_REPR = re.compile(r"""\bb(?:'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")""")


def cbor_text(text: str) -> str:
    """``text`` with every Python bytes literal (``b'\\x01…'``) rewritten as CBOR diagnostic ``h'01…'``."""
    def hexed(match: re.Match[str]) -> str:
        try:
            value = ast.literal_eval(match.group(0))
        except (ValueError, SyntaxError):
            return match.group(0)
        return f"h'{value.hex()}'" if isinstance(value, bytes) else match.group(0)

    return _BYTES_REPR.sub(hexed, text)


LAST: dict[str, Any] = {"stats": None}
"""The latest stats the campaign reported (what an interrupted run prints)."""


def run_live(console: Console, campaign: Any, config: Any) -> Any:
    def show(stats: Any) -> None:
        LAST["stats"] = stats
        if console.is_terminal:
            live.update(table(stats))

    with Live(table(None), console=console, refresh_per_second=4, transient=False,
              auto_refresh=console.is_terminal) as live:
        result = campaign.run_campaign(config, progress=show)
        live.update(table(result.stats, finished=True, failure=result.failure))  # ends on the summary's counts
    if not console.is_terminal:
        console.print()  # a log's last render of the table ends without a newline
    return result


def table(stats: Any, *, finished: bool = False, failure: Any = None) -> Table:
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
    failure = failure if finished else stats.failure
    if failure is None and getattr(stats, "flaky", False):
        table.add_row("failure", "FLAKY: seen, but not again on the same steps (details below)")
    elif failure is None:
        table.add_row("failure", "none" if finished else "none yet")
    else:
        table.add_row("failure", cbor_text(failure.message.splitlines()[0])[:100] + " (details below)")
    return table


def counts(console: Console, stats: Any, *, requested: int | None) -> None:
    """The campaign's counts, worded as the live table words them."""
    if hasattr(stats, "messages"):
        console.print(f"{stats.messages} messages in {stats.elapsed:.0f} s ({stats.rate:.0f}/s): "
                      f"{stats.server_errors} 5xx, {stats.dropped} dropped, {stats.canary_rounds} canary rounds, "
                      f"status counts {dict(sorted(stats.by_status.items()))}", highlight=False, soft_wrap=True)
        return
    asked = ""
    if requested is not None and stats.examples != requested:
        asked = (f" ({requested} asked for; Hypothesis also ran the example database's saved examples and, "
                 "after a failure, its shrinking attempts)")
    console.print(f"{stats.examples} examples run{asked}, {stats.steps} steps in {stats.elapsed:.0f} s",
                  highlight=False, soft_wrap=True)


FLAKY_NOTE = ("[red]FLAKY[/red]: a failure was seen but did not happen again on the same steps (a nondeterministic "
              "bug in the IUT); its steps are below when they were kept")


def summary(console: Console, result: Any, *, requested: int | None = None) -> None:
    stats = result.stats
    counts(console, stats, requested=requested)
    deviations(console, stats.judge)
    seen_flaky = getattr(stats, "flaky", False)
    if seen_flaky:
        console.print(FLAKY_NOTE)
    if result.failure is None:
        if not seen_flaky:
            console.print("[green]no failure found[/green]")
        return
    failure = result.failure
    flaky = " [red]flaky: it did not fail again on replay[/red]" if failure.flaky else ""
    console.print(f"[red]FAILURE[/red] ({failure.level} {failure.row}, {len(failure.steps)} steps after "
                  f"shrinking){flaky}:")
    console.print(cbor_text(failure.message), markup=False, soft_wrap=True)
    for step in failure.steps:
        console.print(f"  {cbor_text(step.describe())}", markup=False, soft_wrap=True)
    if result.saved is not None:
        console.print(f"saved: {result.saved}", markup=False, soft_wrap=True)
        console.print(f"replay: {result.iut.replay_command(result.saved)}", markup=False, soft_wrap=True)


def deviations(console: Console, judge: Any) -> None:
    """NON-STRICT / INFORMATIONAL findings, one line per requirement row with a count and one example."""
    examples: dict[str, Any] = {}
    for finding in judge.deviations:
        examples.setdefault(finding.row, finding)
    for row, count in judge.summary().items():
        finding = examples[row]
        console.print(f"{finding.severity.value} {row} x{count}: {cbor_text(finding.message)[:160]}", markup=False,
                      soft_wrap=True)


def replay_line(result: Any, path: Path) -> str:
    """The result line of a replay (console markup): ``fixed`` only when the recorded IUT no longer fails."""
    where = escape(result.against.describe())
    if result.failure is not None:
        against = f" against {where}" if result.other else ""
        return f"[red]still fails[/red]{against} ({result.failure.level}) after {len(result.failure.steps)} steps:"
    if result.other:
        return (f"{escape(str(path))} does not fail against {where} ({result.replayed} steps replayed); it failed "
                f"against another IUT, {escape(result.recorded_iut.describe())}, so this says nothing of a fix")
    return (f"[green]fixed[/green]: {escape(str(path))} no longer fails against {where} ({result.replayed} steps "
            "replayed)")


def replay(console: Console, result: Any, path: Path) -> None:
    console.print(replay_line(result, path), highlight=False, soft_wrap=True)
    failure = result.failure
    if failure is None:
        return
    console.print(cbor_text(failure.message), markup=False, soft_wrap=True)
    if failure.transcript:
        console.print(failure.transcript, markup=False, soft_wrap=True)
    sys.exit(1)


__all__ = ["FLAKY_NOTE", "LAST", "cbor_text", "counts", "deviations", "replay", "replay_line", "run_live", "summary",
           "table"]
