"""Released requirement sets never change, and a row added after a set's release is reported there, not counted.

The digests below are written here by hand when a set is released: a test that read them from ``released.toml``
alone would pass after someone edited a set and its manifest line together.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.harness.case import Case
from sdcp_conformance.harness.runner import CaseResult
from sdcp_conformance.harness.terms import rescore
from sdcp_conformance.judge import TABLE, Level, Verdict
from sdcp_conformance.judge import requirement_sets as sets
from sdcp_conformance.judge.findings import Finding, deviation
from sdcp_conformance.judge.scoring import case_verdict, scored_severity

RELEASED = {
    "draft-sdcp-00+P1-2026-12-05": "46f5545909d5b60cf8976531b59d8dc3ecad3ae61a65455adfc3ac3354ce8b58",
    "draft-sdcp-00+P1-2026-12-07": "1e60adb6e2ace8f4515a2b39470e9c61a432b5539aa4379532db5a337dd648a8",
}
OLD, NEW = "draft-sdcp-00+P1-2026-12-05", "draft-sdcp-00+P1-2026-12-07"
ENV = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
ADDED_LATER = "R-4.1-UNKNOWN-KEY-ROUTER"
"""A MUST row the harness judged first after the 2026-12-05 release (git history: absent at f2d9104)."""


def test_every_released_set_file_is_byte_identical_to_its_recorded_digest() -> None:
    folder = resources.files("sdcp_conformance.judge").joinpath("sets")
    listed = {entry["name"]: entry for entry in sets.manifest()}
    for name, digest in RELEASED.items():
        data = folder.joinpath(listed[name]["file"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == digest == listed[name]["sha256"], name
    assert list(listed)[: len(RELEASED)] == list(RELEASED), "released sets are only ever appended"


def test_the_newest_set_is_the_default_and_older_ones_are_superseded() -> None:
    assert sets.newest_name() == sets.released_names()[-1]
    assert sets.load_set().name == sets.newest_name()
    assert sets.superseded_by(OLD) == sets.newest_name()
    assert sets.superseded_by(sets.newest_name()) is None


def test_a_row_added_after_a_release_is_not_scored_in_the_older_set() -> None:
    old, new = sets.load_set(OLD), sets.load_set(NEW)
    row = TABLE[ADDED_LATER]
    assert row.level is Level.MUST and ADDED_LATER not in old.rows and ADDED_LATER in new.rows
    record = deviation(row, "an unknown key was refused").to_json()
    assert scored_severity(record, new) is Verdict.FAILED
    assert scored_severity(record, old) is None
    assert "added after the set was released" in old.unscored_reason(ADDED_LATER)
    assert case_verdict([record], old) is Verdict.PASSED and case_verdict([record], new) is Verdict.FAILED


def test_a_case_failed_only_on_a_later_row_passes_under_the_older_set_and_keeps_the_finding() -> None:
    async def body(_ctx: object) -> None:
        return None

    case = Case("X-1", "area", "4.1", "q", Level.MUST, body, rows=(ADDED_LATER,))
    kept = deviation(TABLE["R-4.2-CHAIN"], "a digest is wrong")
    later = deviation(TABLE[ADDED_LATER], "an unknown key was refused")
    headline = "an unknown key was refused (and 1 more finding)"
    for under, message in ((NEW, headline), (OLD, "a digest is wrong")):
        result = CaseResult(case, Verdict.FAILED, headline, findings=[later, kept])
        rescore(result, sets.load_set(under))
        assert result.verdict is Verdict.FAILED and result.message == message, under
    result = CaseResult(case, Verdict.FAILED, "an unknown key was refused", findings=[later])
    rescore(result, sets.load_set(OLD))
    assert result.verdict is Verdict.PASSED and result.message == ""
    assert result.findings[0].unscored and "not scored" in result.notes[-1]


def test_a_set_relevels_a_finding_by_the_level_it_was_judged_at() -> None:
    row = next(row for row in TABLE if row.refusal is not None and row.level.strict and not row.type_level.strict)
    # A set released when the row was a SHOULD and its refusal's type a MUST (levels this table does not give it).
    held = sets.RequirementSet("test-set", "draft", "profile", sets.load_set().released,
                               {row.id: sets.SetRow(Level.SHOULD, Level.MUST, row.source, row.binds)})
    at_type = deviation(row, "refused with another type", type_level=True).to_json()
    at_level = deviation(row, "accepted").to_json()
    assert (at_type["severity"], at_level["severity"]) == ("NON-STRICT", "FAILED")  # as the table judged them
    assert scored_severity(at_type, held) is Verdict.FAILED
    assert scored_severity(at_level, held) is Verdict.NON_STRICT
    observation = Finding(row.id, Verdict.INFORMATIONAL, "seen").to_json()
    assert scored_severity(observation, held) is Verdict.INFORMATIONAL


def test_a_changed_set_file_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "sets"
    folder.mkdir()
    source = resources.files("sdcp_conformance.judge").joinpath("sets")
    for name in ("released.toml", f"{OLD}.json"):
        (folder / name).write_bytes(source.joinpath(name).read_bytes())
    changed = (folder / f"{OLD}.json").read_text(encoding="utf-8").replace('"level": "MUST"', '"level": "SHOULD"', 1)
    (folder / f"{OLD}.json").write_text(changed, encoding="utf-8")
    monkeypatch.setattr(sets, "_folder", lambda: folder)
    sets.load_set.cache_clear()
    sets.manifest.cache_clear()
    try:
        with pytest.raises(InvalidArgument, match="never changes"):
            sets.load_set(OLD)
        with pytest.raises(InvalidArgument, match="no released requirement set"):
            sets.load_set("draft-sdcp-99")
    finally:
        sets.load_set.cache_clear()
        sets.manifest.cache_clear()


def test_certify_scores_against_a_named_released_set_and_refuses_an_unknown_one(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "sdcp_conformance.cli", "certify", "--only", "VER-6.3-FENCING-001", "--seed", "7"]
    done = subprocess.run([*command, "--requirements", OLD, "--report-dir", str(tmp_path / "old")],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path,
                          env=ENV)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"scored against {OLD}" in done.stdout
    document = json.loads((tmp_path / "old" / "report.json").read_text(encoding="utf-8"))
    assert document["requirements"]["name"] == OLD and document["requirements"]["sha256"] == RELEASED[OLD]
    assert f"--requirements {OLD}" in document["reproduce"]["certify"]
    assert "--seed 7" in document["reproduce"]["certify"]
    unknown = subprocess.run([*command, "--requirements", "draft-sdcp-99"], capture_output=True, text=True,
                             timeout=120, cwd=tmp_path,
                             env=ENV)
    assert unknown.returncode == 2 and len(unknown.stderr.strip().splitlines()) == 1
    assert "no released requirement set 'draft-sdcp-99'" in unknown.stderr
