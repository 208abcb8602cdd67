"""report.json stays small for a passing run; evidence moves beside it and comes back; attachments are kept."""

from __future__ import annotations

import gzip
import json
import re

from sdcp_conformance.report.json_report import EVIDENCE_NAME, load_document
from sdcp_conformance.suites.verifier import CATALOGUE as VERIFIER_CATALOGUE
from tests.report.conftest import Run

STAT_CASES = [case_id for case_id in VERIFIER_CATALOGUE.cases if "-RULE2-STAT-" in case_id]

LIMIT = 2 * 1024 * 1024


def test_passing_run_report_is_small_and_its_transcripts_are_in_the_evidence_file(full_run: Run) -> None:
    report = full_run.folder / "report.json"
    assert report.stat().st_size <= LIMIT
    document = json.loads(report.read_text(encoding="utf-8"))
    assert document["run"]["status"] == "PASSED"
    moved = json.loads(gzip.decompress((full_run.folder / EVIDENCE_NAME).read_bytes()))
    assert all(record["verdict"] == "PASSED" for record in document["results"])
    with_transcripts = [record for record in document["results"] if record.get("evidence") != []]
    assert len(with_transcripts) > 150  # the transport probes alone exchange no SDCP message
    for record in with_transcripts:
        assert "evidence" not in record and record["evidence_file"] == EVIDENCE_NAME
        assert len(moved[record["key"]]) == record["evidence_entries"] > 0
    restored = load_document(full_run.folder, with_evidence=True)
    assert [len(r["evidence"]) for r in restored["results"]] == [r.get("evidence_entries", 0)
                                                                 for r in document["results"]]
    # what moved is the transcript itself: sequence numbers, directions, bodies in CBOR diagnostic notation
    first = restored["results"][0]["evidence"][0]
    assert {"sequence", "direction", "method", "target", "request_body", "status"} <= set(first)


def test_failing_cases_keep_their_transcripts_inline(mutant_run: Run) -> None:
    document = json.loads((mutant_run.folder / "report.json").read_text(encoding="utf-8"))
    failed = [r for r in document["results"] if r["verdict"] == "FAILED"]
    assert failed
    for record in failed:
        assert record["evidence"] and "evidence_file" not in record
        assert any("h'" in entry["request_body"] for entry in record["evidence"])  # diagnostic notation
        for finding in record["findings"]:
            assert finding["sentence"]  # each finding names its row's sentence


def test_statistical_cases_attach_their_e_process(full_run: Run) -> None:
    document = json.loads((full_run.folder / "report.json").read_text(encoding="utf-8"))
    traces = {r["id"]: r["attachments"]["rule2"] for r in document["results"] if "rule2" in r.get("attachments", {})}
    assert len(traces) == len(STAT_CASES)  # every statistical case of the catalogue
    for trace in traces.values():
        emitted = trace["emitted"]
        assert sum(emitted["observed"]) == trace["rounds"] == len(trace["trajectory"]["log_e"])
        assert abs(sum(emitted["expected"]) - trace["rounds"]) < 1e-6 * trace["rounds"] + 1e-3
        for low, expected, high in zip(emitted["band_low"], emitted["expected"], emitted["band_high"], strict=True):
            assert low <= expected <= high
        assert not trace["rejected"] and max(trace["trajectory"]["log_e"]) < trace["threshold"]


def test_report_records_provenance(full_run: Run) -> None:
    from sdcp_conformance.report.bundle import read_member

    document = json.loads((full_run.folder / "report.json").read_text(encoding="utf-8"))
    recorded = document["tool"]["source_sha256"]
    assert re.fullmatch(r"[0-9a-f]{64}", recorded)
    assert full_run.bundle is not None
    summary = json.loads(read_member(full_run.bundle, "certification.json"))
    assert summary["harness"]["source_sha256"] == recorded
    assert document["run"]["iut_certificate"].startswith("sha256:") and len(document["run"]["iut_certificate"]) == 71
    assert document["run"]["seed"] == 11


def test_source_hash_covers_every_source_file_and_nothing_else(tmp_path) -> None:
    from sdcp_conformance.report.provenance import source_hash

    (tmp_path / "pkg" / "__pycache__").mkdir(parents=True)
    (tmp_path / "pkg" / "a.py").write_text("x = 1\n", encoding="utf-8")
    (tmp_path / "pkg" / "t.j2").write_text("{{ x }}", encoding="utf-8")
    first = source_hash(tmp_path / "pkg")
    (tmp_path / "pkg" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\0")
    (tmp_path / "pkg" / "notes.log").write_text("not source", encoding="utf-8")
    source_hash.cache_clear()
    assert source_hash(tmp_path / "pkg") == first
    (tmp_path / "pkg" / "t.j2").write_text("{{ y }}", encoding="utf-8")
    source_hash.cache_clear()
    assert source_hash(tmp_path / "pkg") != first
