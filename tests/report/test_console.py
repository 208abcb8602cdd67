"""The console view: every case that needs attention explained where CI logs show it, readable at 80 columns."""

from __future__ import annotations

import json
import re
import shlex

from rich.console import Console

from sdcp_conformance import spec
from sdcp_conformance.harness.certify import default_catalogue
from sdcp_conformance.judge import TABLE
from sdcp_conformance.report.console import print_document
from tests.report.conftest import MUTANT, SEED, Run, cli


def _blocks(output: str) -> dict[str, str]:
    """Case ID → its block of the attention list (from its headline to its rerun line)."""
    found = {}
    for match in re.finditer(r"^(FAILED|ERROR|XPASS|NON-STRICT|XFAIL) (\S+)  \(.*?^  rerun: .*?$", output, re.M | re.S):
        found[match.group(2)] = match.group(0)
    return found


def test_failed_cases_show_sentence_expectations_findings_transcript_and_rerun(mutant_run: Run) -> None:
    document = json.loads((mutant_run.folder / "report.json").read_text(encoding="utf-8"))
    failed = {r["id"]: r for r in document["results"] if r["verdict"] == "FAILED"}
    blocks = _blocks(mutant_run.output)
    assert set(blocks) == set(failed)
    catalogue = default_catalogue("verifier")
    for case_id, block in blocks.items():
        record = failed[case_id]
        assert f'sentence: "{catalogue.cases[case_id].quote}"' in block
        assert "expected: " in block and "actual: " in block
        for finding in record["findings"]:
            assert f"[{finding['row']}]" in block
            row_sentence = spec.normalize(TABLE[finding["row"]].quote)
            assert row_sentence in block or row_sentence == catalogue.cases[case_id].quote
        assert "CBOR diagnostic notation" in block and "h'" in block  # the transcript's last messages
        rerun = f"sdcp-conformance certify --mutant {MUTANT} --only {case_id} --seed {SEED}"
        assert f"  rerun: {rerun}\n" in block + "\n"


def test_output_is_never_folded_in_a_log(mutant_run: Run) -> None:
    """At COLUMNS=80 and no terminal, commands and URIs stay whole on their lines."""
    lines = mutant_run.output.splitlines()
    reruns = [line for line in lines if line.startswith("  rerun: ")]
    assert reruns and all(line.rstrip().endswith(f"--seed {SEED}") for line in reruns)
    replay = next(line for line in lines if line.startswith(f"seed {SEED}; the same order again: "))
    assert replay.endswith("--only stale-base")
    assert any(len(line) > 80 for line in lines)  # long lines are kept long, not wrapped
    assert not any(line.startswith("│") and "…" in line for line in lines)  # no cut table cell


def test_rerun_command_reruns_just_that_case(mutant_run: Run, tmp_path) -> None:
    block = next(iter(_blocks(mutant_run.output).values()))
    words = shlex.split(block.splitlines()[-1].split("rerun: ", 1)[1])
    case_id = words[words.index("--only") + 1]
    done = cli(*words[1:], "--report-dir", str(tmp_path / "again"))
    assert done.returncode == 1
    document = json.loads((tmp_path / "again" / "report.json").read_text(encoding="utf-8"))
    assert {r["id"] for r in document["results"]} == {case_id, "VER-SANITY-001"}
    assert [r["verdict"] for r in document["results"] if r["id"] == case_id] == ["FAILED"]


def test_report_show_prints_what_certify_printed(mutant_run: Run) -> None:
    done = cli("report", "show", str(mutant_run.folder))
    assert done.returncode == 0, done.stderr
    assert set(_blocks(done.stdout)) == set(_blocks(mutant_run.output))
    assert "certification FAILED (partial: only stale-base)" in done.stdout


def test_skipped_cases_are_listed_with_reasons_and_incomplete_runs_say_why() -> None:
    document = {
        "run": {"seed": 5, "role": "verifier", "status": "INCOMPLETE", "duration_s": 1.0, "selectors": [],
                "skipped": [{"id": "VER-6.4-X-001", "run": "main", "reason": "the target lacks model:ctx"}],
                "incomplete": ["no case ran in the area(s) rule-2"]},
        "counts": {"PASSED": 1, "SKIPPED": 1}, "areas": {"rule-2": {"SKIPPED": 1}},
        "results": [{"id": "VER-6.4-X-001", "verdict": "SKIPPED", "run": "main", "area": "rule-2"},
                    {"id": "VER-SANITY-001", "verdict": "PASSED", "run": "main", "area": "sanity"}],
    }
    console = Console(record=True, width=80, force_terminal=False)
    print_document(console, document)
    text = console.export_text()
    assert "Skipped cases (1):" in text and "VER-6.4-X-001: the target lacks model:ctx" in text
    assert "incomplete: no case ran in the area(s) rule-2" in text and "certification INCOMPLETE" in text
