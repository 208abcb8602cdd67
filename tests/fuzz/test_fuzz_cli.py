"""``sdcp-conformance fuzz`` end to end: a short run with a directory database, then a replay reported fixed."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from sdcp_conformance.cli import main


def test_fuzz_command_runs_keeps_its_database_and_replays(tmp_path: Path) -> None:
    database, out = tmp_path / "db", tmp_path / "failures"
    runner = CliRunner()
    found = runner.invoke(main, ["fuzz", "--mutant", "skip-round-check", "--examples", "300", "--seed", "1",
                                 "--database", str(database), "--out", str(out)])
    assert found.exit_code == 1, found.output
    assert "FAILURE" in found.output and "replay: sdcp-conformance fuzz --replay" in found.output
    assert database.is_dir()
    saved = next(out.glob("*.json"))
    still = runner.invoke(main, ["fuzz", "--replay", str(saved)])
    assert still.exit_code == 1 and "still fails" in still.output
    fixed = runner.invoke(main, ["fuzz", "--replay", str(saved), "--mutant", "none"])
    assert fixed.exit_code == 0 and "fixed" in fixed.output
