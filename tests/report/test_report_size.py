"""Reports sized for CI (issue 41 item 6): report.json and junit.xml stay under 1 MB for a failing run of any
role, the JUnit still validates against the schema CI systems use, a cut text says where the whole case is, and
nothing is lost: the evidence file and the HTML page hold every exchange."""

from __future__ import annotations

import gzip
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import xmlschema

from sdcp_conformance.harness.case import Case, Catalogue, Level, Verdict
from sdcp_conformance.harness.runner import CaseResult, RunReport
from sdcp_conformance.harness.transcript import Entry
from sdcp_conformance.judge import Finding
from sdcp_conformance.report import write_reports
from sdcp_conformance.report.json_report import EVIDENCE_NAME, load_document
from sdcp_conformance.report.junit import FAILURE_TEXT_LIMIT
from tests.report.conftest import cli

SCHEMA = xmlschema.XMLSchema(Path(__file__).with_name("junit-10.xsd"))
ONE_MB = 1024 * 1024

FAILING_RUNS = {
    # role: (certify arguments, the cases it must fail); rule-2 statistical failures carry the longest transcripts
    "verifier": (["--mutant", "rule2-residual-softmax", "--only", "rule-2"], "VER-6.4-RULE2-STAT-003"),
    "drafter": (["--role", "drafter", "--mutant", "drf-samples-untempered", "--only", "sampling"],
                "DRF-5.2-EXACT-ROW-001"),
    "router": (["--role", "router", "--mutant", "resume-ignores-fences", "--only", "failover"],
               "RTR-6.9-FAILOVER-005"),
}


def _check_sizes(folder: Path) -> dict[str, object]:
    for name in ("report.json", "junit.xml"):
        size = (folder / name).stat().st_size
        assert size < ONE_MB, f"{name}: {size} bytes"
    SCHEMA.validate(folder / "junit.xml")
    for failure in ET.parse(folder / "junit.xml").getroot().iter("failure"):
        assert len((failure.text or "").encode()) <= FAILURE_TEXT_LIMIT
    return json.loads((folder / "report.json").read_text(encoding="utf-8"))


@pytest.mark.slow
@pytest.mark.parametrize("role", sorted(FAILING_RUNS))
def test_a_failing_certification_of_each_role_writes_reports_under_a_megabyte(role: str, tmp_path: Path) -> None:
    arguments, failing = FAILING_RUNS[role]
    folder = tmp_path / "run"
    done = cli("certify", *arguments, "--seed", "5", "--report-dir", str(folder), timeout=600)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    document = _check_sizes(folder)
    verdicts = {record["id"]: record["verdict"] for record in document["results"]}  # type: ignore[index]
    assert verdicts[failing] == "FAILED", verdicts
    cut = [record for record in document["results"] if record.get("evidence_inline") is not None]  # type: ignore
    assert all(0 < record["evidence_inline"] < record["evidence_entries"] for record in cut)  # the last ones kept
    whole = load_document(folder, with_evidence=True)
    for record in whole["results"]:  # nothing lost: what report.json cut is in the evidence file
        assert len(record["evidence"]) == int(record.get("evidence_entries") or len(record["evidence"]))


async def _noop(ctx: object) -> None:
    return None


def _entry(number: int) -> Entry:
    body = "{" + ", ".join(f'"k{index}": h\'{"ab" * 40}\'' for index in range(8)) + "}"
    return Entry(number, "to-iut", "router", "POST", "/verifier/proposals", body, 200, body, "content-type cbor")


def _huge_failing_run(cases: int, exchanges: int) -> RunReport:
    catalogue = Catalogue()
    results = []
    for number in range(1, cases + 1):
        case = catalogue.add(Case(f"VER-6.4-BIG-{number:03d}", "rule-2", "6.4", "a sentence " * 40, Level.MUST, _noop))
        transcript = [_entry(index) for index in range(exchanges)]
        findings = [Finding("R-6.4-RULE2", Verdict.FAILED, "wrong outcome " * 200, actual="x" * 20_000)]
        results.append(CaseResult(case, Verdict.FAILED, "the outcomes are not rule 2's\n" + "detail " * 5000,
                                  findings=findings, transcript=transcript, notes=["note " * 2000] * 3))
    return RunReport(7, results, 1_800_000_000.0, 1_800_000_100.0, {"iut": "https://x/", "role": "verifier"})


def test_a_run_failing_everywhere_with_long_transcripts_still_fits(tmp_path: Path) -> None:
    """Worse than any mutant: 210 failing cases of 1,500 exchanges each (about 1 GB of text inline before)."""
    report = _huge_failing_run(210, 1500)
    write_reports(report, tmp_path, html=False)
    document = _check_sizes(tmp_path)
    records = document["results"]  # type: ignore[index]
    assert all(record["evidence_entries"] == 1500 for record in records)
    assert all(record["evidence_file"] == EVIDENCE_NAME for record in records)
    with gzip.open(tmp_path / EVIDENCE_NAME, "rt", encoding="utf-8") as moved:
        assert all(len(transcript) == 1500 for transcript in json.load(moved).values())
    failures = ET.parse(tmp_path / "junit.xml").getroot().findall(".//failure")
    assert len(failures) == 210
    first = failures[0].text or ""
    assert "report.html#case-VER-6-4-BIG-001-main" in first and "VER-6.4-BIG-001#main" in first
    assert "1500 exchanges" in first  # the share of one in 210 failures: the message, findings and the pointer
    assert all("report.html#case-" in (failure.text or "") for failure in failures)


def test_a_small_failure_is_kept_whole(tmp_path: Path) -> None:
    report = _huge_failing_run(2, 5)
    report.results = [CaseResult(result.case, Verdict.FAILED, "short", transcript=result.transcript)
                      for result in report.results]
    write_reports(report, tmp_path, html=False)
    document = _check_sizes(tmp_path)
    assert all(len(record["evidence"]) == 5 and "evidence_file" not in record
               for record in document["results"])  # type: ignore[index]
    assert all("cut" not in (failure.text or "") and "transcript:\n" in (failure.text or "")
               for failure in ET.parse(tmp_path / "junit.xml").getroot().iter("failure"))


def test_the_pytest_plugins_failure_text_is_capped_too() -> None:
    from sdcp_conformance.pytest_plugin import describe_result

    long = describe_result(_huge_failing_run(1, 1500).results[0])
    assert len(long.encode()) <= FAILURE_TEXT_LIMIT
    assert "of 1500 exchanges; `sdcp-conformance certify --only VER-6.4-BIG-001` writes all of them" in long
    assert "\ntranscript:\n" in describe_result(_huge_failing_run(1, 3).results[0])
