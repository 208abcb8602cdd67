"""What ``certify`` shows while it runs and when it is asked only to list: progress, case lists, interruptions.

On a terminal the progress is a live bar (done/total, the case running,
verdict tallies); in a log (CI, a pipe) it is one line per finished case,
since a redrawn bar leaves nothing readable there and the wait on the
first line tells a reader (or a test) that cases are running.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.text import Text

from sdcp_conformance.harness.case import Case
from sdcp_conformance.harness.runner import CaseResult, RunReport


class LiveProgress:
    """A rich progress bar fed by the runner's per-case callback: done/total, the case running, verdict tallies."""

    def __init__(self, console: Console, order: Sequence[str]) -> None:
        self.order = list(order)
        self.tally: dict[str, int] = {}
        self.progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                                 MofNCompleteColumn(), TimeElapsedColumn(), console=console, transient=False)
        self.task = self.progress.add_task(self._describe(0), total=len(self.order))

    def _describe(self, done: int) -> str:
        current = f"running {self.order[done]}" if done < len(self.order) else "done"
        counts = " ".join(f"{verdict} {count}" for verdict, count in sorted(self.tally.items()))
        return f"{current:34} {counts}"

    def __call__(self, result: CaseResult) -> None:
        self.tally[result.verdict.value] = self.tally.get(result.verdict.value, 0) + 1
        done = int(self.progress.tasks[0].completed) + 1
        self.progress.update(self.task, completed=done, description=self._describe(done))

    def __enter__(self) -> LiveProgress:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.__exit__(None, None, None)


class LineProgress:
    """One line per finished case (``[  3/185] PASSED VER-… (0.4 s)``), for logs."""

    def __init__(self, console: Console, order: Sequence[str]) -> None:
        self.console = console
        self.total = len(order)
        self.done = 0

    def __call__(self, result: CaseResult) -> None:
        from sdcp_conformance.report.console import VERDICT_STYLES

        self.done += 1
        width = len(str(self.total))
        line = Text(f"[{self.done:>{width}}/{self.total}] ")
        line.append(result.verdict.value, style=VERDICT_STYLES.get(result.verdict, ""))
        run = "" if result.run == "main" else f" ({result.run})"
        line.append(f" {result.case.id}{run} ({result.duration_s:.1f} s)")
        self.console.print(line, soft_wrap=True, highlight=False)

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class Collecting:
    """Keeps every finished result (so an interrupted run still reports them) and forwards it."""

    def __init__(self, forward: Callable[[CaseResult], None]) -> None:
        self.forward = forward
        self.results: list[CaseResult] = []
        self.started = time.time()

    def __call__(self, result: CaseResult) -> None:
        self.results.append(result)
        self.forward(result)


def progress_for(console: Console, order: Sequence[str]) -> LiveProgress | LineProgress:
    return LiveProgress(console, order) if console.is_terminal else LineProgress(console, order)


def interrupted_report(collected: Collecting, *, seed: int, selected: Sequence[Case], strict: bool,
                       selectors: Sequence[str], environment: dict[str, Any]) -> RunReport:
    """The partial report of a run stopped by Ctrl-C: the cases that finished, nothing else."""
    areas = tuple(dict.fromkeys(case.area for case in selected))
    return RunReport(seed, list(collected.results), collected.started, time.time(), environment, areas=areas,
                     strict=strict, selectors=tuple(selectors))


def case_lines(cases: Sequence[Case]) -> list[str]:
    """``certify --list``: ID, role, area, level and title per case, in aligned plain columns (never cut)."""
    if not cases:
        return []
    widths = [max(len(getattr(case, name) if name != "level" else case.level.value) for case in cases)
              for name in ("id", "role", "area", "level")]
    lines = []
    for case in cases:
        cells = (case.id, case.role, case.area, case.level.value)
        lines.append("  ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True))
                     + f"  {case.title}")
    return lines


__all__ = ["Collecting", "LineProgress", "LiveProgress", "case_lines", "interrupted_report", "progress_for"]
