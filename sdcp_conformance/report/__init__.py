"""Reports of a certification run: ``report.json``, ``junit.xml``, the console summary, the coverage table."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sdcp_conformance.harness.case import Catalogue
    from sdcp_conformance.harness.runner import RunReport

JSON_NAME = "report.json"
JUNIT_NAME = "junit.xml"


def write_reports(report: RunReport, folder: Path, *, command: Sequence[str] = (), target: str | None = None,
                  selectors: Sequence[str] = (), catalogue: Catalogue | None = None) -> list[Path]:
    """Write ``report.json`` and ``junit.xml`` into ``folder``; returns their paths."""
    # Imported here so that `python -m sdcp_conformance.report.coverage` does not find its module pre-imported.
    from sdcp_conformance.report.json_report import report_document, write_json
    from sdcp_conformance.report.junit import write_junit

    document = report_document(report, command=command, target=target, selectors=selectors, catalogue=catalogue)
    return [write_json(folder / JSON_NAME, document), write_junit(folder / JUNIT_NAME, report)]


__all__ = ["JSON_NAME", "JUNIT_NAME", "write_reports"]
