"""The console view of a run: verdict counts, counts per area, then every case that needs attention, explained.

It renders the report document (:mod:`~sdcp_conformance.report.json_report`),
so ``certify`` and ``report show DIR`` print the same thing. After the two
summary tables comes one block per FAILED, ERROR, XPASS, NON-STRICT, XFAIL
case (and every case of an INCOMPLETE or interrupted run's sanity check):
its ID and verdict, the quoted sentence, why, expected vs actual, each
finding with its row's sentence, the last messages of its transcript in CBOR
diagnostic notation, and the command that reruns just that case. SKIPPED
cases are listed with their reasons.

D-RPT-3: every detail line is printed with ``soft_wrap`` (never folded by
the console), and no detail sits in a table cell, so an 80-column CI log
keeps URIs and commands whole and copy-pasteable; the summary tables hold
only short words and counts.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from sdcp_conformance.judge import Verdict

VERDICT_ORDER = tuple(Verdict)
VERDICT_STYLES = {
    Verdict.PASSED: "green", Verdict.FAILED: "bold red", Verdict.NON_STRICT: "yellow",
    Verdict.INFORMATIONAL: "cyan", Verdict.SKIPPED: "dim", Verdict.INCOMPLETE: "bold yellow",
    Verdict.ERROR: "bold magenta",
    Verdict.XFAIL: "blue", Verdict.XPASS: "bold red",
}
ATTENTION = ("FAILED", "ERROR", "XPASS", "INCOMPLETE", "NON-STRICT", "XFAIL")
"""Verdicts explained case by case, in this order."""
TRANSCRIPT_TAIL = 4
"""How many of a case's last exchanges the console shows; report.json and the HTML report hold all."""
BODY_LIMIT = 800
"""Characters of one message body the console shows (the rest is in report.json)."""
MESSAGE_LINES = 12
STATUS_STYLES = {"PASSED": "bold green", "FAILED": "bold red", "INCOMPLETE": "bold yellow",
                 "INTERRUPTED": "bold yellow"}


# --------------------------------------------------------------------------- commands


def replay_command(seed: int, *, target: Path | str | None = None, selectors: Sequence[str] = (),
                   expected_failures: Path | str | None = None, role: str | None = None,
                   strict: bool = False, mutant: str | None = None, excluded: Sequence[str] = ()) -> str:
    """The command line that reruns the same cases in the same order."""
    words = ["sdcp-conformance", "certify", "--seed", str(seed)]
    if target is not None:
        words += ["--target", str(target)]
    elif role is not None and role != "verifier" and mutant is None:
        words += ["--role", role]
    if mutant is not None:
        words += ["--mutant", mutant]
    if strict:
        words.append("--strict")
    for selector in selectors:
        words += ["--only", selector]
    for selector in excluded:
        words += ["--exclude", selector]
    if expected_failures is not None:
        words += ["--expected-failures", str(expected_failures)]
    return shlex.join(words)


def rerun_command(run: Mapping[str, Any], case_id: str) -> str:
    """``sdcp-conformance certify … --only ID --seed S``: just this case, with the run's seed."""
    words = ["sdcp-conformance", "certify"]
    if run.get("target"):
        words += ["--target", str(run["target"])]
    elif run.get("mutant"):
        words += ["--mutant", str(run["mutant"])]
    elif run.get("role") and run["role"] != "verifier":
        words += ["--role", str(run["role"])]
    if run.get("strict"):
        words.append("--strict")
    if run.get("expected_failures"):
        words += ["--expected-failures", str(run["expected_failures"])]
    words += ["--only", case_id, "--seed", str(run["seed"])]
    return shlex.join(words)


def run_replay(run: Mapping[str, Any]) -> str:
    return replay_command(int(run["seed"]), target=run.get("target"), selectors=run.get("selectors") or (),
                          expected_failures=run.get("expected_failures"), role=run.get("role"),
                          strict=bool(run.get("strict")), mutant=run.get("mutant"),
                          excluded=run.get("excluded") or ())


# --------------------------------------------------------------------------- tables


def _styled(verdict: str) -> str:
    style = VERDICT_STYLES.get(Verdict(verdict), "")
    return f"[{style}]{verdict}[/]" if style else verdict


def verdict_table(document: Mapping[str, Any]) -> Table:
    counts = document["counts"]
    table = Table(title="Verdicts")
    table.add_column("verdict")
    table.add_column("cases", justify="right")
    for verdict in VERDICT_ORDER:
        if counts.get(verdict.value):
            table.add_row(_styled(verdict.value), str(counts[verdict.value]))
    table.add_row("[bold]total[/]", str(len(document["results"])))
    return table


def area_table(document: Mapping[str, Any]) -> Table:
    per_area: Mapping[str, Mapping[str, int]] = document["areas"]
    present = [v.value for v in VERDICT_ORDER if any(v.value in counts for counts in per_area.values())]
    table = Table(title="Per area")
    table.add_column("area", no_wrap=True)
    for verdict in present:
        table.add_column(_styled(verdict), justify="right")
    for area, counts in per_area.items():
        table.add_row(area, *[str(counts.get(verdict, "")) for verdict in present])
    return table


# --------------------------------------------------------------------------- case blocks


def _line(console: Console, text: str | Text, indent: int = 0) -> None:
    if isinstance(text, str):
        text = Text(text)
    console.print(Text(" " * indent) + text, soft_wrap=True, highlight=False)


def _clip(text: str, limit: int = BODY_LIMIT) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text) - limit} more characters in report.json)"


def attention_records(document: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The records to explain, worst verdicts first, then in run order."""
    results = document["results"]
    return [record for verdict in ATTENTION for record in results if record["verdict"] == verdict]


def _label(record: Mapping[str, Any]) -> str:
    return record["id"] if record.get("run", "main") == "main" else f"{record['id']} ({record['run']})"


def render_entry(entry: Mapping[str, Any]) -> list[str]:
    """One transcript exchange as the harness's Entry renders it (bodies in CBOR diagnostic notation)."""
    arrow = "→" if entry.get("direction") == "to-iut" else "←"
    lines = [f"#{entry.get('sequence')} {entry.get('party')} {arrow} {entry.get('method')} {entry.get('target')}"]
    if entry.get("request_body"):
        lines.append(f"    body: {_clip(str(entry['request_body']))}")
    status = entry.get("status")
    lines.append(f"    answer: {status if status is not None else '—'} {_clip(str(entry.get('response_body') or ''))}"
                 .rstrip())
    if entry.get("note"):
        lines.append(f"    note: {entry['note']}")
    return lines


def print_case(console: Console, record: Mapping[str, Any], run: Mapping[str, Any],
               tail: int = TRANSCRIPT_TAIL) -> None:
    verdict = record["verdict"]
    head = Text()
    head.append(f"{verdict} ", style=VERDICT_STYLES.get(Verdict(verdict), ""))
    head.append(_label(record), style="bold")
    head.append(f"  ({record.get('role', '')}, {record.get('area')}, §{record.get('section')}, {record.get('level')})")
    console.print()
    _line(console, head)
    if record.get("title"):
        _line(console, f"case: {record['title']}", 2)
    _line(console, f'sentence: "{record.get("quote", "")}"', 2)
    message = str(record.get("message") or "")
    lines = message.splitlines() or [""]
    _line(console, f"why: {lines[0]}", 2)
    for extra in lines[1:MESSAGE_LINES]:
        _line(console, extra, 7)
    if len(lines) > MESSAGE_LINES:
        _line(console, f"… ({len(lines) - MESSAGE_LINES} more lines in report.json)", 7)
    if record.get("expected"):
        _line(console, "expected: " + " | ".join(record["expected"]), 2)
    if record.get("actual"):
        _line(console, f"actual:   {record['actual']}", 2)
    if record.get("expected_failure"):
        _line(console, f"expected failure: {record['expected_failure']}", 2)
    findings = record.get("findings") or []
    if findings:
        _line(console, f"findings ({len(findings)}):", 2)
    for finding in findings:
        where = f" ({finding['source']})" if finding.get("source") else ""
        _line(console, f"{finding['severity']} [{finding['row']}]{where}: {finding['message']}", 4)
        if finding.get("sentence") and finding["sentence"] != record.get("quote"):
            _line(console, f'row: "{finding["sentence"]}"', 6)
        if finding.get("expected"):
            _line(console, "expected: " + " | ".join(finding["expected"]), 6)
        if finding.get("actual"):
            _line(console, f"actual:   {finding['actual']}", 6)
    evidence = record.get("evidence") or []
    if evidence:
        shown = evidence[-tail:]
        total = max(len(evidence), int(record.get("evidence_entries") or 0))  # report.json may keep only a tail
        _line(console, f"last messages ({len(shown)} of {total}, CBOR diagnostic notation):", 2)
        for entry in shown:
            for text in render_entry(entry):
                _line(console, text, 4)
    _line(console, Text("rerun: ") + Text(rerun_command(run, record["id"]), style="bold"), 2)


def print_skipped(console: Console, document: Mapping[str, Any]) -> None:
    skipped = document["run"].get("skipped") or []
    if not skipped:
        return
    console.print()
    _line(console, Text(f"Skipped cases ({len(skipped)}):", style="bold"))
    for item in skipped:
        label = item["id"] if item.get("run", "main") == "main" else f"{item['id']} ({item['run']})"
        _line(console, f"{label}: {item['reason']}", 2)


def print_document(console: Console, document: Mapping[str, Any], *, reports: Sequence[Path] = (),
                   tail: int = TRANSCRIPT_TAIL) -> None:
    """The whole console view of a run (``certify``'s closing output, ``report show``)."""
    run = document["run"]
    console.print(verdict_table(document))
    console.print(area_table(document))
    flagged = attention_records(document)
    if flagged:
        console.print()
        _line(console, Text(f"Cases that need attention ({len(flagged)}):", style="bold"))
        for record in flagged:
            print_case(console, record, run, tail)
    print_skipped(console, document)
    console.print()
    _line(console, Text(f"seed {run['seed']}; the same order again: ") + Text(run_replay(run), style="bold"))
    requirements, declaration = document.get("requirements"), document.get("declaration")
    if requirements or declaration:
        scored = f"scored against {requirements['name']}" if requirements else "scored against no released set"
        declared = (f"following the declaration of {declaration['implementation']} {declaration['version']} "
                    f"(claims: {', '.join(declaration['claims']) or 'no optional feature'})" if declaration
                    else "without a declaration (every optional feature taken as claimed)")
        _line(console, f"{scored}; {declared}")
    for path in reports:
        _line(console, f"wrote {path}")
    for reason in run.get("incomplete") or []:
        _line(console, f"incomplete: {reason}")
    status = str(run["status"])
    scope = f" (partial: only {', '.join(run['selectors'])})" if run.get("selectors") else ""
    if run.get("excluded"):
        scope += f" (partial: without {', '.join(run['excluded'])})"
    strict = " under --strict" if run.get("strict") else ""
    line = Text("certification ")
    line.append(status, style=STATUS_STYLES.get(status, ""))
    line.append(f"{scope}{strict} ({float(run['duration_s']):.1f} s)")
    _line(console, line)


def print_summary(console: Console, report: Any, *, replay: str = "", reports: Sequence[Path] = ()) -> None:
    """The console view of a :class:`~sdcp_conformance.harness.runner.RunReport` (builds its document first)."""
    from sdcp_conformance.report.json_report import report_document

    document = report_document(report)
    if replay:
        document["run"]["replay"] = replay
    print_document(console, document, reports=reports)
    if replay and replay != run_replay(document["run"]):
        _line(console, Text("replay: ") + Text(replay, style="bold"))


def log_console() -> Console:
    """A console for the run's output: the terminal's, or a wide one when writing to a log (no folded lines)."""
    console = Console()
    return console if console.is_terminal else Console(width=max(console.width, 160))


__all__ = [
    "ATTENTION",
    "STATUS_STYLES",
    "TRANSCRIPT_TAIL",
    "VERDICT_STYLES",
    "area_table",
    "attention_records",
    "log_console",
    "print_case",
    "print_document",
    "print_skipped",
    "print_summary",
    "render_entry",
    "replay_command",
    "rerun_command",
    "run_replay",
    "verdict_table",
]
