"""report.json, junit.xml and the console summary, from a synthetic run with every verdict."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from rich.console import Console

from sdcp_conformance.harness.case import Case, Catalogue, Level, Verdict
from sdcp_conformance.harness.runner import CaseResult, RunReport
from sdcp_conformance.harness.transcript import Entry
from sdcp_conformance.report import JSON_NAME, JUNIT_NAME, write_reports
from sdcp_conformance.report.console import print_summary, replay_command
from sdcp_conformance.report.json_report import FORMAT, report_document
from sdcp_conformance.report.junit import junit_tree

QUOTE = "The commit and the recording of the verdict MUST be atomic with respect to concurrent proposals"


async def _noop(ctx: object) -> None:
    return None


def _case(case_id: str, area: str = "idempotency") -> Case:
    return Case(case_id, area, "6.3", QUOTE, Level.MUST, _noop, rows=("R-6.3-ATOMIC",))


def _entry() -> Entry:
    return Entry(1, "to-iut", "drafter-1", "POST", "proposals", "{\"round\": 1}", 409, "{\"type\": \"x\"}")


def synthetic_report() -> tuple[RunReport, Catalogue]:
    catalogue = Catalogue()
    results = []
    for number, verdict in enumerate(Verdict, start=1):
        case = catalogue.add(_case(f"VER-6.3-IDEM-{number:03d}", "idempotency" if number % 2 else "fencing"))
        message = "" if verdict is Verdict.PASSED else f"{verdict.value} because\nsecond line \x01"
        results.append(CaseResult(case, verdict, message, expected=["200 verdict"], actual="409",
                                  duration_s=0.25, transcript=[_entry()], notes=["a note"]))
    sanity = catalogue.add(_case("VER-SANITY-001", "sanity"))
    results.insert(0, CaseResult(sanity, Verdict.PASSED, run="sanity-first"))
    results.append(CaseResult(sanity, Verdict.PASSED, run="sanity-last"))
    return RunReport(42, results, 1_800_000_000.0, 1_800_000_003.5, {"iut": "https://x/verifier/"}), catalogue


def test_report_json_has_metadata_counts_records_and_coverage() -> None:
    report, catalogue = synthetic_report()
    document = report_document(report, command=["sdcp-conformance", "certify"], selectors=["VER-6.3"],
                               catalogue=catalogue)
    json.dumps(document)
    assert document["format"] == FORMAT
    assert document["run"]["seed"] == 42 and document["run"]["failed"] is True
    assert document["run"]["duration_s"] == 3.5 and document["run"]["started"].startswith("2027-01-15T08:00:00")
    assert document["counts"]["PASSED"] == 3 and document["counts"]["FAILED"] == 1
    assert document["areas"]["sanity"] == {"PASSED": 2}
    record = document["results"][2]
    assert record["verdict"] == "FAILED" and record["quote"] == QUOTE and record["evidence"][0]["status"] == 409
    covered = {row["id"]: row for row in document["coverage"]}["R-6.3-ATOMIC"]
    assert "VER-6.3-IDEM-002" in covered["cases"] and covered["verdicts"]["VER-6.3-IDEM-002"] == "FAILED"


def test_junit_maps_verdicts_to_failure_error_skipped_and_notes() -> None:
    report, _ = synthetic_report()
    root = junit_tree(report).getroot()
    assert root is not None
    suite = root.find("testsuite")
    assert suite is not None
    counts = [suite.get(name) for name in ("tests", "failures", "errors", "skipped")]
    # every verdict once, both sanity runs; ERROR and INCOMPLETE are errors, SKIPPED and NOT CLAIMED skipped
    assert counts == ["12", "2", "2", "2"]
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    assert {"VER-SANITY-001 [sanity-first]", "VER-SANITY-001 [sanity-last]"} <= set(cases)
    by_verdict = {verdict: cases[f"VER-6.3-IDEM-{n:03d}"] for n, verdict in enumerate(Verdict, start=1)}
    failure = by_verdict[Verdict.FAILED].find("failure")
    assert failure is not None and failure.get("message") == "FAILED because"
    assert "transcript:" in (failure.text or "") and "drafter-1 → POST proposals" in (failure.text or "")
    assert by_verdict[Verdict.XPASS].find("failure") is not None
    assert by_verdict[Verdict.ERROR].find("error") is not None
    incomplete = by_verdict[Verdict.INCOMPLETE].find("error")
    assert incomplete is not None and incomplete.get("type") == "incomplete"
    assert by_verdict[Verdict.SKIPPED].find("skipped") is not None
    assert by_verdict[Verdict.NOT_CLAIMED].find("skipped") is not None  # D-JUDGE-DECL-1: never run, never failed
    for verdict in (Verdict.NON_STRICT, Verdict.INFORMATIONAL, Verdict.XFAIL, Verdict.PASSED):
        element = by_verdict[verdict]
        assert element.find("failure") is None and element.find("error") is None and element.find("skipped") is None
        assert f"verdict: {verdict.value}" in (element.findtext("system-out") or "")
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert properties["seed"] == "42"


def test_write_reports_writes_parseable_files(tmp_path: Path) -> None:
    report, catalogue = synthetic_report()
    paths = write_reports(report, tmp_path / "out", catalogue=catalogue)
    assert [p.name for p in paths] == [JSON_NAME, "evidence.json.gz", JUNIT_NAME, "report.html"]
    assert json.loads(paths[0].read_text(encoding="utf-8"))["run"]["seed"] == 42
    assert ET.parse(paths[2]).getroot().tag == "testsuites"  # control characters were replaced


def test_console_summary_shows_counts_failures_seed_and_replay() -> None:
    report, _ = synthetic_report()
    console = Console(record=True, width=200)
    replay = replay_command(42, target="t.toml", selectors=["fencing"])
    print_summary(console, report, replay=replay)
    text = console.export_text()
    assert "Verdicts" in text and "Per area" in text and "fencing" in text
    assert "VER-6.3-IDEM-002" in text and "FAILED because" in text  # the failed case and its message
    assert "sdcp-conformance certify --seed 42 --target t.toml --only fencing" in text
    assert "INCOMPLETE because" in text  # the case that could not judge its subject, explained
    assert "certification INCOMPLETE" in text  # P1-JUDGE-3/4: an INCOMPLETE case certifies nothing, whatever failed


def test_replay_command_quotes_words() -> None:
    assert replay_command(7, target="my dir/t.toml") == "sdcp-conformance certify --seed 7 --target 'my dir/t.toml'"
