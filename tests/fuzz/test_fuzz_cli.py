"""``sdcp-conformance fuzz`` end to end: a short run with a directory database, then a replay reported fixed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sdcp_conformance.cli import main


def test_fuzz_command_runs_keeps_its_database_and_replays(tmp_path: Path) -> None:
    database, out = tmp_path / "db", tmp_path / "failures"
    runner = CliRunner()
    found = runner.invoke(main, ["fuzz", "--mutant", "skip-round-check", "--examples", "300", "--seed", "1",
                                 "--database", str(database), "--out", str(out)])
    assert found.exit_code == 1, found.output
    saved = next(out.glob("*.json")).resolve()
    assert "FAILURE" in found.output
    assert f"replay: sdcp-conformance fuzz --replay {saved} --mutant skip-round-check\n" in found.output
    assert database.is_dir()
    still = runner.invoke(main, ["fuzz", "--replay", str(saved)])
    assert still.exit_code == 1 and "still fails" in still.output
    refused = runner.invoke(main, ["fuzz", "--replay", str(saved), "--mutant", "none"])
    assert refused.exit_code == 2 and "--against-other-iut" in refused.output and "fixed" not in refused.output
    elsewhere = runner.invoke(main, ["fuzz", "--replay", str(saved), "--mutant", "none", "--against-other-iut"])
    assert elsewhere.exit_code == 0, elsewhere.output
    assert "does not fail against the embedded reference verifier" in elsewhere.output
    assert "fixed" not in elsewhere.output


def test_a_flaky_drafter_campaign_fails_and_says_so(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A failure seen once and not again on its steps (kept or not) exits 1, and nothing says it passed."""
    from sdcp_conformance.fuzz.rules import drafter
    from sdcp_conformance.fuzz.scaffold import FuzzStats

    def flaky_campaign(config: Any, progress: Any = None) -> Any:
        stats = FuzzStats(examples=3, steps=9, flaky=True)
        return drafter.DrafterCampaignResult(stats, None, None)

    monkeypatch.setattr(drafter, "run_drafter_campaign", flaky_campaign)
    result = CliRunner().invoke(main, ["fuzz", "--role", "drafter", "--examples", "3", "--out", str(tmp_path)])
    assert result.exit_code == 1, result.output
    assert "FLAKY" in result.output and "no failure found" not in result.output
    assert "none" not in result.output.split("failure", 1)[1].splitlines()[0]  # the table's failure row
