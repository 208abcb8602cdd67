"""``report.html``: one self-contained page a person opens from disk (no network: a CSP forbids any fetch).

Rendered with Jinja2 from the report document (the one ``report.json``
holds, evidence put back), with matplotlib's SVG plots inlined
(:mod:`~sdcp_conformance.report.plots`). The page shows the run's
metadata, the summary by role, area, section and level, filters by verdict
and area, each case with its sentence, findings, expected/actual, notes,
plots and a collapsible transcript, and the coverage table.

The first case that needs attention is on the first screen (issue 41: at
1400×900, checked in headless Chromium): the summary tables by role, area,
section and level are collapsed (``<details>``) when a case needs attention,
and a link under the counts jumps to that case.

D-RPT-5: transcripts of cases needing attention are shown whole; of the
others, the last :data:`PASSING_TAIL` exchanges, with a pointer to
``evidence.json.gz`` (a rule-2 statistical case exchanges over a thousand
messages; all of them would make the page tens of megabytes).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sdcp_conformance.judge import Verdict
from sdcp_conformance.report.console import ATTENTION, render_entry, rerun_command, run_replay
from sdcp_conformance.report.json_report import EVIDENCE_NAME, case_anchor, grouped

HTML_NAME = "report.html"
TEMPLATE = "report.html.j2"
PASSING_TAIL = 30
VERDICTS = tuple(verdict.value for verdict in Verdict)


def _environment() -> Any:
    import jinja2

    return jinja2.Environment(loader=jinja2.PackageLoader("sdcp_conformance.report", "templates"),
                              autoescape=jinja2.select_autoescape(default=True, default_for_string=True),
                              trim_blocks=True, lstrip_blocks=True)


def _case_view(record: Mapping[str, Any], run: Mapping[str, Any]) -> dict[str, Any]:
    from sdcp_conformance.report.plots import case_plots

    evidence = list(record.get("evidence") or [])
    attention = record["verdict"] in ATTENTION
    shown = evidence if attention else evidence[-PASSING_TAIL:]
    return {
        "record": record,
        "anchor": case_anchor(record["id"], record.get("run", "main")),
        "attention": attention,
        "plots": case_plots(record.get("attachments") or {}),
        "transcript": ["\n".join(render_entry(entry)) for entry in shown],
        "transcript_total": len(evidence) or int(record.get("evidence_entries") or 0),
        "transcript_cut": len(evidence) - len(shown) if evidence else int(record.get("evidence_entries") or 0),
        "rerun": rerun_command(run, record["id"]),
    }


def _ordered(results: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Cases needing attention first (worst verdict first), then the others by ID (the run order is in the JSON)."""
    rank = {verdict: index for index, verdict in enumerate(ATTENTION)}
    return sorted(results, key=lambda r: (rank.get(r["verdict"], len(rank)), r["id"], r.get("run", "main")))


def render_html(document: Mapping[str, Any]) -> str:
    """The page for ``document`` (with its evidence put back, see :func:`~.json_report.load_document`)."""
    run = document["run"]
    results = document["results"]
    present = [verdict for verdict in VERDICTS if document["counts"].get(verdict)]
    groups = [(label, field, grouped(results, field))
              for label, field in (("role", "role"), ("area", "area"), ("section", "section"), ("level", "level"))]
    cases = [_case_view(record, run) for record in _ordered(results)]
    first = next((view["anchor"] for view in cases if view["attention"]), None)
    context = {
        "document": document, "run": run, "tool": document["tool"], "counts": document["counts"],
        "first_attention": first,
        "present": present, "groups": groups, "areas": sorted({record["area"] for record in results}),
        "cases": cases, "coverage": document.get("coverage") or [],
        "replay": run_replay(run), "evidence_name": EVIDENCE_NAME, "passing_tail": PASSING_TAIL,
        "attention": ATTENTION,
    }
    return str(_environment().get_template(TEMPLATE).render(**context))


def write_html(path: Path, document: Mapping[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_html(document), encoding="utf-8")
    return path


__all__ = ["HTML_NAME", "PASSING_TAIL", "render_html", "write_html"]
