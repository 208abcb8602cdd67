"""The console summary of a run: verdict counts, counts per area, the cases that need attention, the replay line."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table

from sdcp_conformance.harness.case import Verdict
from sdcp_conformance.harness.runner import RunReport
from sdcp_conformance.report.json_report import areas

VERDICT_ORDER = tuple(Verdict)
VERDICT_STYLES = {
    Verdict.PASSED: "green", Verdict.FAILED: "bold red", Verdict.NON_STRICT: "yellow",
    Verdict.INFORMATIONAL: "cyan", Verdict.SKIPPED: "dim", Verdict.ERROR: "bold magenta",
    Verdict.XFAIL: "blue", Verdict.XPASS: "bold red",
}
MESSAGE_LINES = 6
"""How much of a failure message the summary shows; report.json and junit.xml hold all of it."""


def replay_command(seed: int, *, target: Path | str | None = None, selectors: Sequence[str] = (),
                   expected_failures: Path | str | None = None, role: str | None = None,
                   strict: bool = False) -> str:
    """The command line that reruns the same cases in the same order."""
    words = ["sdcp-conformance", "certify", "--seed", str(seed)]
    if target is not None:
        words += ["--target", str(target)]
    elif role is not None and role != "verifier":
        words += ["--role", role]
    if strict:
        words.append("--strict")
    for selector in selectors:
        words += ["--only", selector]
    if expected_failures is not None:
        words += ["--expected-failures", str(expected_failures)]
    return shlex.join(words)


def _styled(verdict: str) -> str:
    style = VERDICT_STYLES.get(Verdict(verdict), "")
    return f"[{style}]{verdict}[/]" if style else verdict


def verdict_table(report: RunReport) -> Table:
    counts = report.counts()
    table = Table(title="Verdicts")
    table.add_column("verdict")
    table.add_column("cases", justify="right")
    for verdict in VERDICT_ORDER:
        if counts.get(verdict.value):
            table.add_row(_styled(verdict.value), str(counts[verdict.value]))
    table.add_row("[bold]total[/]", str(len(report.results)))
    return table


def area_table(report: RunReport) -> Table:
    per_area = areas(report)
    present = [v.value for v in VERDICT_ORDER if any(v.value in counts for counts in per_area.values())]
    table = Table(title="Per area")
    table.add_column("area")
    for verdict in present:
        table.add_column(_styled(verdict), justify="right")
    for area, counts in per_area.items():
        table.add_row(area, *[str(counts.get(verdict, "")) for verdict in present])
    return table


def attention_table(report: RunReport) -> Table | None:
    """FAILED, ERROR and XPASS cases with their messages; then NON-STRICT ones (they do not fail the run)."""
    flagged = [r for r in report.results if r.counts_as_failure]
    flagged += [r for r in report.results if r.verdict is Verdict.NON_STRICT]
    if not flagged:
        return None
    table = Table(title="Cases that need attention", show_lines=True)
    table.add_column("case")
    table.add_column("verdict")
    table.add_column("message")
    for result in flagged:
        lines = result.message.splitlines()
        shown = "\n".join(lines[:MESSAGE_LINES]) + ("\n…" if len(lines) > MESSAGE_LINES else "")
        label = result.case.id if result.run == "main" else f"{result.case.id} ({result.run})"
        table.add_row(label, _styled(result.verdict.value), shown, style=None)
    return table


def skipped_table(report: RunReport) -> Table | None:
    """Every SKIPPED case with its reason: a skip is never silent (P1-JUDGE-3)."""
    skipped = report.skipped()
    if not skipped:
        return None
    table = Table(title="Skipped cases")
    table.add_column("case")
    table.add_column("reason")
    for result in skipped:
        label = result.case.id if result.run == "main" else f"{result.case.id} ({result.run})"
        table.add_row(label, result.message)
    return table


STATUS_STYLES = {"PASSED": "bold green", "FAILED": "bold red", "INCOMPLETE": "bold yellow"}


def print_summary(console: Console, report: RunReport, *, replay: str, reports: Sequence[Path] = ()) -> None:
    console.print(verdict_table(report))
    console.print(area_table(report))
    for table in (attention_table(report), skipped_table(report)):
        if table is not None:
            console.print(table)
    console.print(f"seed {report.seed}; the same order again: [bold]{replay}[/]", highlight=False, soft_wrap=True)
    for path in reports:
        console.print(f"wrote {path}", highlight=False)
    status = report.status
    for reason in report.incomplete_reasons():
        console.print(f"incomplete: {reason}", highlight=False, soft_wrap=True)
    scope = f" (partial: only {', '.join(report.selectors)})" if report.selectors else ""
    strict = " under --strict" if report.strict else ""
    console.print(f"certification [{STATUS_STYLES[status]}]{status}[/]{scope}{strict} "
                  f"({report.finished - report.started:.1f} s)", highlight=False)


__all__ = ["MESSAGE_LINES", "STATUS_STYLES", "VERDICT_STYLES", "area_table", "attention_table", "print_summary",
           "replay_command", "skipped_table", "verdict_table"]
