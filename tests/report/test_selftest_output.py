"""`selftest` prints, per mutant, which cases killed it and why, and keeps the servers' tracebacks out of it."""

from __future__ import annotations

from pathlib import Path

from tests.report.conftest import cli


def test_selftest_shows_killing_cases_with_messages_and_captures_server_logs(tmp_path: Path) -> None:
    log = tmp_path / "servers.log"
    done = cli("selftest", "--mutant", "accept-any-drafter", "--only", "authorization", "--no-reference",
               "--log", str(log))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    output = done.stdout + done.stderr
    assert "Traceback" not in output
    assert "accept-any-drafter (authorization):" in output
    lines = output.splitlines()
    start = lines.index(next(line for line in lines if line.startswith("accept-any-drafter (authorization):")))
    kills = [line for line in lines[start + 1:] if line.startswith("  VER-")]
    assert kills and all(" FAILED: " in line or " NON-STRICT: " in line for line in kills)
    assert any("expected 403 sdcp-not-assigned" in line for line in kills)
    # the mutant answers one request with a 500: the server logged its traceback, into the file only
    assert "Traceback" in log.read_text(encoding="utf-8")
    assert f"are in {log}" in output
