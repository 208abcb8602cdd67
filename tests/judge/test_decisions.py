"""Every judging decision listed in judge/decisions.py is applied, by name, where the list says; none is listed
twice; each shapes rows that exist. Every D-JUDGE-… ID the package's source names is listed, and nothing else;
suites/DECISIONS.md is what judge/decisions.py generates; ``info --decisions`` prints them all."""

from __future__ import annotations

import importlib
import inspect
import re
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from sdcp_conformance.judge import TABLE
from sdcp_conformance.judge.decisions import DECISIONS, THEMES, concerns, decision, decisions_markdown, decisions_text

PACKAGE = Path(__file__).resolve().parents[2] / "sdcp_conformance"
ID = re.compile(r"\bD-JUDGE-[A-Z0-9]+(?:-[A-Z0-9]+)*")
"""A judging decision's ID: never ending on a hyphen (a sentence may go on "D-JUDGE-R1-style")."""
TEXT_SUFFIXES = {".py", ".md", ".txt", ".toml", ".json", ".yaml", ".yml", ".cfg", ".j2", ".cddl"}


def _scanned() -> list[Path]:
    """The package's source and documents, without the spec (the draft and the profile name no decision of ours)
    and without the list itself: judge/decisions*.py and the DECISIONS.md generated from them."""
    found = []
    for path in sorted(PACKAGE.rglob("*")):
        relative = path.relative_to(PACKAGE)
        if not path.is_file() or path.suffix not in TEXT_SUFFIXES or relative.parts[0] == "spec":
            continue
        if "__pycache__" in relative.parts or relative.as_posix() == "suites/DECISIONS.md":
            continue
        if relative.parent.as_posix() == "judge" and relative.name.startswith("decisions"):
            continue
        found.append(path)
    return found


def _ids_in_source() -> dict[str, list[str]]:
    """ID → the files (relative to the package) that name it."""
    where: dict[str, list[str]] = {}
    for path in _scanned():
        for found in set(ID.findall(path.read_text(encoding="utf-8", errors="replace"))):
            where.setdefault(found, []).append(path.relative_to(PACKAGE).as_posix())
    return where


def test_each_decision_is_applied_where_it_is_listed() -> None:
    for listed in DECISIONS:
        assert not listed.where.startswith("judge.decisions"), f"{listed.id}: the list is not where it is applied"
        source = inspect.getsource(importlib.import_module(f"sdcp_conformance.{listed.where}"))
        assert listed.id in source, f"{listed.id} is not named in sdcp_conformance.{listed.where}"


def test_decisions_are_unique_and_name_known_rows() -> None:
    ids = [listed.id for listed in DECISIONS]
    assert len(ids) == len(set(ids))
    for listed in DECISIONS:
        assert listed.rows, f"{listed.id}: shapes no row"
        assert len(listed.rows) == len(set(listed.rows)), f"{listed.id}: a row listed twice"
        for row in listed.rows:
            assert row in TABLE or (row.startswith("P1-") and "/" not in row), f"{listed.id}: unknown row {row}"
    assert decision("D-JUDGE-LOST-1").rows[0] == "P1-JUDGE-6"


def test_every_id_in_the_source_is_listed_and_nothing_else() -> None:
    in_source = _ids_in_source()
    listed = {known.id for known in DECISIONS}
    assert len(in_source) > 50, "the scan found too few IDs: it does not read the package"
    unlisted = sorted(set(in_source) - listed)
    assert not unlisted, "named in the source but not listed in judge/: " + ", ".join(
        f"{found} ({', '.join(in_source[found])})" for found in unlisted)
    stray = sorted(listed - set(in_source))
    assert not stray, f"listed but named nowhere in the package's source: {stray}"


def test_the_scan_reads_ids_whole() -> None:
    assert ID.findall("D-JUDGE-TIME-3 (P1-JUDGE-5), D-JUDGE-D-LATE-LIMIT: D-JUDGE-R1-style, D-JUDGE-STAT-ROW.") == [
        "D-JUDGE-TIME-3", "D-JUDGE-D-LATE-LIMIT", "D-JUDGE-R1", "D-JUDGE-STAT-ROW"]


def test_readings_are_sentences() -> None:
    for listed in DECISIONS:
        reading = listed.reading
        assert reading.strip() == reading and len(reading) >= 40, f"{listed.id}: {reading!r}"
        assert reading[0].isupper() or reading[0].isdigit() or reading[0] in "§\"{", f"{listed.id}: {reading[:30]!r}"
        assert reading.endswith((".", ".)")), f"{listed.id}: the reading does not end a sentence"
        assert "  " not in reading, f"{listed.id}: a double space (a string joined without care)"
        assert re.search(r"[a-z]{3,} [a-z]{3,}", reading), f"{listed.id}: not words: {reading!r}"


def test_the_existing_decisions_keep_their_readings() -> None:
    assert decision("D-JUDGE-TIME-1").where == "harness.patience"
    assert decision("D-JUDGE-TIME-3").rows == ("P1-JUDGE-5", "R-5.1-RESOURCES")
    assert decision("D-JUDGE-M-INIT-ZERO").where == "suites.verifier.limits"
    assert "INCOMPLETE" in decision("D-JUDGE-CONTROL-1").reading
    assert decision("D-JUDGE-LIMIT-READINGS").rows[-1] == "P1-CTL-1/LATEST-ASSIGNMENT"


def test_themes_hold_every_decision_once() -> None:
    grouped = [listed.id for _, decisions in THEMES for listed in decisions]
    assert sorted(grouped) == sorted(listed.id for listed in DECISIONS)
    lines = len(inspect.getsource(importlib.import_module("sdcp_conformance.judge.decisions")).splitlines())
    assert lines <= 400, f"judge/decisions.py has {lines} lines: split it by theme"


def test_roles_see_their_own_decisions() -> None:
    assert concerns(decision("D-JUDGE-D5"), "drafter") and not concerns(decision("D-JUDGE-D5"), "router")
    assert concerns(decision("D-JUDGE-R7"), "router") and not concerns(decision("D-JUDGE-R7"), "verifier")
    assert not concerns(decision("D-JUDGE-M-INIT-ZERO"), "drafter")
    vocabulary, status = decision("D-JUDGE-VOCAB"), decision("D-JUDGE-STATUS-TTL")  # rows no router case judges
    assert concerns(vocabulary, "drafter") and concerns(vocabulary, "verifier") and not concerns(vocabulary, "router")
    assert concerns(status, "drafter") and not concerns(status, "router")
    for everyone in ("D-JUDGE-TIME-2", "D-JUDGE-LOST-1", "D-JUDGE-REFUSED-CLIENT"):
        assert all(concerns(decision(everyone), role) for role in ("verifier", "drafter", "router")), everyone


def test_decisions_md_is_generated() -> None:
    written = (PACKAGE / "suites" / "DECISIONS.md").read_text(encoding="utf-8")
    assert written == decisions_markdown(), "suites/DECISIONS.md is out of date: run python tools/write_decisions.py"


def test_decisions_md_lists_every_decision_once() -> None:
    text = decisions_markdown()
    assert text.startswith("# ")
    rows = [line for line in text.splitlines() if line.startswith("| `D-JUDGE-")]
    assert sorted(line.split("`")[1] for line in rows) == sorted(listed.id for listed in DECISIONS)
    for line in rows:
        assert line.endswith(" |") and line.count(" | ") == 3, line  # four cells: no reading breaks the table


def test_write_decisions_check() -> None:
    tool = Path(__file__).resolve().parents[2] / "tools" / "write_decisions.py"
    done = subprocess.run([sys.executable, str(tool), "--check"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_text_fits_the_terminal_and_keeps_ids_whole() -> None:
    text = decisions_text(width=120)
    assert max(len(line) for line in text.splitlines()) <= 120
    for listed in DECISIONS:
        assert f"{listed.id}  rows: {listed.rows[0]}" in text


def test_info_decisions_prints_every_decision() -> None:
    from sdcp_conformance.cli import main

    result = CliRunner().invoke(main, ["info", "--decisions"])
    assert result.exit_code == 0, result.output
    printed = set(ID.findall(result.output))
    assert printed >= {listed.id for listed in DECISIONS}
    assert f"{len(DECISIONS)} judging decisions" in result.output
    for listed in DECISIONS:
        head = next(line for line in result.output.splitlines() if line.startswith(f"{listed.id} "))
        assert all(row in head for row in listed.rows[:1]), head


def test_info_decisions_for_one_role() -> None:
    from sdcp_conformance.cli import main

    result = CliRunner().invoke(main, ["info", "--decisions", "--role", "router"])
    assert result.exit_code == 0, result.output
    starts = {line.split()[0] for line in result.output.splitlines() if line.startswith("D-JUDGE-")}
    assert {"D-JUDGE-R1", "D-JUDGE-R13", "D-JUDGE-TIME-1"} <= starts
    assert "D-JUDGE-D5" not in starts and "D-JUDGE-M-INIT-ZERO" not in starts
    refused = CliRunner().invoke(main, ["info", "--decisions", "--role", "cache"])
    assert refused.exit_code == 2 and "no role 'cache'" in refused.output


def test_the_list_imports_no_torch() -> None:
    code = "import sys, sdcp_conformance.judge.decisions; sys.exit('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=PACKAGE.parent)
    assert done.returncode == 0, done.stderr or "judge/decisions.py imports torch"
