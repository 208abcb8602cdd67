"""`report diff`: a reference run against a mutant run lists exactly the mutant's killing cases as regressions."""

from __future__ import annotations

import json
from pathlib import Path

from sdcp_conformance.mutants.catalogue import find_mutant, killers_path
from sdcp_conformance.report.diff import diff_documents
from tests.report.conftest import MUTANT, Run, cli


def test_reference_against_mutant_lists_exactly_its_killers(full_run: Run, mutant_run: Run) -> None:
    recorded = json.loads(killers_path("verifier").read_text(encoding="utf-8"))[MUTANT]
    mutant = find_mutant(MUTANT)[1]
    after = json.loads((mutant_run.folder / "report.json").read_text(encoding="utf-8"))
    killed_here = sorted({r["id"] for r in after["results"] if r["verdict"] in {v.value for v in mutant.kill_verdicts}})
    assert killed_here == sorted(recorded)  # the recorded kill matrix, independent of the diff
    done = cli("report", "diff", str(full_run.folder), str(mutant_run.folder))
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    start = lines.index("regressions:")
    listed = []
    for line in lines[start + 1:]:
        if not line.startswith("  "):
            break
        listed.append(line.split(":")[0].strip())
    assert listed == sorted(recorded)
    assert all(f"{case}: PASSED → FAILED" in done.stdout for case in recorded)


def test_a_run_against_itself_has_no_regression(full_run: Run) -> None:
    done = cli("report", "diff", str(full_run.folder), str(full_run.folder))
    assert done.returncode == 0 and "0 regression(s)" in done.stdout


def _doc(*records: tuple[str, str]) -> dict:
    return {"results": [{"id": case, "verdict": verdict, "run": "main", "message": f"{case} {verdict}"}
                        for case, verdict in records]}


def test_diff_sorts_changes_into_regressions_fixes_new_removed_and_skipped() -> None:
    before = _doc(("A", "PASSED"), ("B", "FAILED"), ("C", "PASSED"), ("D", "PASSED"), ("E", "NON-STRICT"),
                  ("F", "SKIPPED"), ("G", "PASSED"), ("S", "PASSED"), ("S", "PASSED"))
    after = _doc(("A", "NON-STRICT"), ("B", "PASSED"), ("C", "SKIPPED"), ("E", "ERROR"), ("F", "FAILED"),
                 ("G", "INFORMATIONAL"), ("H", "FAILED"), ("S", "PASSED"), ("S", "FAILED"))
    result = diff_documents(before, after)
    assert [c.id for c in result.regressions] == ["A", "E", "F", "S"]  # S: its worst run counts
    assert [c.id for c in result.fixes] == ["B"]
    assert [c.id for c in result.new] == ["H"] and [c.id for c in result.removed] == ["D"]
    assert [c.id for c in result.now_skipped] == ["C"] and [c.id for c in result.other] == ["G"]
    assert result.exit_code == 1
    assert diff_documents(after, after).exit_code == 0


def test_diff_of_a_missing_report_is_a_one_line_usage_error(tmp_path: Path) -> None:
    done = cli("report", "diff", str(tmp_path), str(tmp_path))
    assert done.returncode == 2 and "no report.json here" in done.stderr and "Traceback" not in done.stderr
