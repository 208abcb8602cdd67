"""Reports of a certification run: ``report.json`` (+ ``evidence.json.gz``), ``junit.xml``, ``report.html``.

Every view starts from one document (:func:`~.json_report.report_document`):
the console summary, the HTML page, ``report diff`` and the signed bundle.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sdcp_conformance.harness.case import Catalogue
    from sdcp_conformance.harness.runner import RunReport

JSON_NAME = "report.json"
JUNIT_NAME = "junit.xml"
HTML_NAME = "report.html"
EVIDENCE_NAME = "evidence.json.gz"


def write_run(report: RunReport, folder: Path, *, command: Sequence[str] = (), target: str | None = None,
              selectors: Sequence[str] = (), catalogue: Catalogue | None = None, html: bool = True,
              **run: Any) -> tuple[dict[str, Any], list[Path]]:
    """Write every report file of ``report`` into ``folder``; returns (the full document, the paths written).

    ``run`` holds the rest of the run's description for :func:`~.json_report.report_document`
    (``excluded``, ``role``, ``mutant``, ``expected_failures``, ``iut_certificate``, ``interrupted``).
    """
    # Imported here so that `python -m sdcp_conformance.report.coverage` does not find its module pre-imported.
    from sdcp_conformance.report.json_report import report_document, write_document
    from sdcp_conformance.report.junit import write_junit

    document = report_document(report, command=command, target=target, selectors=selectors, catalogue=catalogue,
                               **run)
    paths = write_document(folder, document)
    paths.append(write_junit(folder / JUNIT_NAME, report))
    if html:
        from sdcp_conformance.report.html import write_html

        paths.append(write_html(folder / HTML_NAME, document))
    return document, paths


def write_reports(report: RunReport, folder: Path, *, command: Sequence[str] = (), target: str | None = None,
                  selectors: Sequence[str] = (), catalogue: Catalogue | None = None, html: bool = True,
                  **run: Any) -> list[Path]:
    """Write ``report.json`` (and its evidence file), ``junit.xml`` and ``report.html``; returns their paths."""
    return write_run(report, folder, command=command, target=target, selectors=selectors, catalogue=catalogue,
                     html=html, **run)[1]


__all__ = ["EVIDENCE_NAME", "HTML_NAME", "JSON_NAME", "JUNIT_NAME", "write_reports", "write_run"]
