"""``report.json``: the run's metadata, one record per case (with its evidence) and the coverage table."""

from __future__ import annotations

import datetime as dt
import json
import platform
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sdcp_conformance import __version__
from sdcp_conformance.harness.case import Catalogue
from sdcp_conformance.harness.runner import RunReport
from sdcp_conformance.report.coverage import coverage_json, coverage_rows

FORMAT = "sdcp-conformance-report/1"


def iso_time(stamp: float) -> str:
    return dt.datetime.fromtimestamp(stamp, dt.UTC).isoformat(timespec="milliseconds")


def areas(report: RunReport) -> dict[str, dict[str, int]]:
    """Verdict counts per area, areas and verdicts in name order."""
    tally: dict[str, dict[str, int]] = {}
    for result in report.results:
        per_area = tally.setdefault(result.case.area, {})
        per_area[result.verdict.value] = per_area.get(result.verdict.value, 0) + 1
    return {area: dict(sorted(counts.items())) for area, counts in sorted(tally.items())}


def report_document(report: RunReport, *, command: Sequence[str] = (), target: str | None = None,
                    selectors: Sequence[str] = (), catalogue: Catalogue | None = None) -> dict[str, Any]:
    """The whole report as JSON-ready data; ``catalogue`` adds the requirements-coverage table."""
    document: dict[str, Any] = {
        "format": FORMAT,
        "tool": {"name": "sdcp-conformance", "version": __version__},
        "run": {
            "seed": report.seed, "started": iso_time(report.started), "finished": iso_time(report.finished),
            "duration_s": round(report.finished - report.started, 3), "command": list(command),
            "target": target, "selectors": list(selectors), "failed": report.failed,
            "status": report.status, "strict": report.strict, "incomplete": report.incomplete_reasons(),
            "skipped": [{"id": r.case.id, "run": r.run, "reason": r.message} for r in report.skipped()],
        },
        "environment": {**report.environment, "python": sys.version.split()[0], "platform": platform.platform()},
        "counts": dict(sorted(report.counts().items())),
        "areas": areas(report),
        "results": [result.to_json() for result in report.results],
    }
    if catalogue is not None:
        document["coverage"] = coverage_json(coverage_rows(catalogue), report.results)
    return document


def write_json(path: Path, document: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


__all__ = ["FORMAT", "areas", "iso_time", "report_document", "write_json"]
