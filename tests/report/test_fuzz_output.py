"""`fuzz` output: counts the table and the summary agree on, CBOR diagnostic notation, one-line replay commands."""

from __future__ import annotations

import re
from pathlib import Path

from sdcp_conformance.cli.fuzz_display import cbor_text, table
from sdcp_conformance.fuzz.scaffold import FuzzStats
from tests.report.conftest import cli
from tests.report.interrupts import interrupt, start_interruptible


def test_bytes_read_as_cbor_diagnostic_notation() -> None:
    assert cbor_text("digest b'\\x01\\xff' vs b\"ab\"; not_b'x' stays") == "digest h'01ff' vs h'6162'; not_b'x' stays"


def test_the_final_table_reads_the_final_counts() -> None:
    stats = FuzzStats(examples=7, steps=70)
    running = {row[0]: row[1] for row in _rows(table(stats))}
    finished = {row[0]: row[1] for row in _rows(table(stats, finished=True, failure=None))}
    assert running["failure"] == "none yet" and finished["failure"] == "none"
    assert finished["examples"] == "7"


def _rows(table: object) -> list[tuple[str, str]]:
    columns = table.columns  # type: ignore[attr-defined]
    return list(zip(columns[0]._cells, columns[1]._cells, strict=True))


def test_a_found_failure_prints_counts_that_agree_and_a_replay_line(tmp_path: Path) -> None:
    done = cli("fuzz", "--mutant", "skip-round-check", "--examples", "300", "--seed", "1", "--database", "",
               "--out", str(tmp_path / "failures"))
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    output = done.stdout
    table_examples = re.search(r"│ examples\s+│ (\d+)", output)
    summary_examples = re.search(r"^(\d+) examples run", output, re.M)
    assert table_examples and summary_examples and table_examples.group(1) == summary_examples.group(1)
    assert "none yet" not in output and "(details below)" in output
    replay = [line for line in output.splitlines() if line.startswith("replay: ")]
    assert len(replay) == 1 and replay[0].split("replay: ", 1)[1].startswith("sdcp-conformance fuzz --replay ")
    saved = next((tmp_path / "failures").glob("*.json"))
    assert replay[0].endswith(str(saved).split("/")[-1]) or str(saved) in replay[0]
    assert "b'" not in output.split("FAILURE", 1)[1]  # values shown as CBOR, not Python bytes


def test_ctrl_c_stops_a_campaign_with_exit_130(tmp_path: Path) -> None:
    import os
    import sys

    run = start_interruptible([sys.executable, "-m", "sdcp_conformance.cli", "fuzz", "--examples", "100000",
                               "--seed", "1", "--database", "", "--out", str(tmp_path)],
                              env={**os.environ, "TERM": "dumb"})
    assert run.stdout is not None
    first = run.stdout.readline()  # printed before the campaign starts
    assert first.startswith("fuzzing the embedded reference verifier"), first
    rest = interrupt(run)
    assert run.returncode == 130, rest
    assert "interrupted (Ctrl-C)" in rest and "Aborted!" not in rest and "Traceback" not in rest
    assert "Task was destroyed" not in rest  # the half-started environment was cancelled and cleaned up
