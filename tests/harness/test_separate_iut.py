"""`pki init --iut verifier`, then the reference verifier as a separate process, then `certify --target`."""

from __future__ import annotations

import gzip
import json
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from sdcp_conformance.harness.target import load_target
from sdcp_conformance.testing.children import stop
from tests.harness.separate_process import (
    CLI,
    STEP_TIMEOUT_S,
    certify_separate,
    cli_words,
    pki_init,
    run_plugin,
    wait_ready,
)


def _port_is_free(uri: str) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", urlsplit(uri).port or 443))
        except OSError:
            return False
    return True


@pytest.fixture
def separate_verifier(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    folder = tmp_path / "iut"
    printed, _ = pki_init("verifier", folder)
    with (tmp_path / "verifier.err").open("w") as errors:
        process = subprocess.Popen(cli_words(printed), stdout=subprocess.PIPE, stderr=errors, text=True)
        try:
            assert process.stdout is not None
            base_uri = wait_ready(process)
            yield folder / "target.toml", base_uri
        finally:
            stop(process)
    assert _port_is_free(base_uri), "the verifier's port is still taken after it stopped"


@pytest.mark.slow
def test_certify_a_separately_started_reference_verifier(separate_verifier: tuple[Path, str], tmp_path: Path) -> None:
    target, base_uri = separate_verifier
    assert load_target(target).base_uri == base_uri
    reports = tmp_path / "reports"
    document = certify_separate(target, base_uri, ["VER-SANITY-001"], reports, seed=11, timeout_s=STEP_TIMEOUT_S)
    assert document["counts"] == {"PASSED": 2}
    first = document["results"][0]
    with gzip.open(reports / first["evidence_file"], "rt", encoding="utf-8") as evidence:
        assert json.load(evidence)[first["key"]], "the report's evidence holds the exchanged messages"


@pytest.mark.slow
def test_pytest_plugin_against_a_separately_started_verifier(separate_verifier: tuple[Path, str],
                                                             tmp_path: Path) -> None:
    target, _ = separate_verifier
    empty = tmp_path / "empty"
    empty.mkdir()
    done = run_plugin(target, ["VER-SANITY-001"], empty, timeout_s=STEP_TIMEOUT_S)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "VER-SANITY-001 PASSED" in done.stdout and "2 passed" in done.stdout


@pytest.fixture
def pinned_verifier(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Path]:
    """The reference verifier as a separate process with its load pinned at 60 (and the mutant the test names)."""
    folder = tmp_path / "iut"
    printed, _ = pki_init("verifier", folder)
    extra = ["--pin-load", str(PINNED_LOAD)]
    mutant = getattr(request, "param", None)
    if mutant:
        extra += ["--mutant", mutant]
    target = folder / "target.toml"
    text = target.read_text(encoding="utf-8").replace("[harness]", f"pinned_load = {PINNED_LOAD}\n\n[harness]")
    target.write_text(text, encoding="utf-8")
    with (tmp_path / "verifier.err").open("w") as errors:
        process = subprocess.Popen([*cli_words(printed), *extra], stdout=subprocess.PIPE, stderr=errors, text=True)
        try:
            assert process.stdout is not None
            wait_ready(process)
            yield target
        finally:
            stop(process)


PINNED_LOAD = 60
LOAD_CASES = ("VER-6.5-ESC-009", "VER-6.5-ESC-010")


def _certify_load_cases(target: Path, reports: Path, exit_code: int) -> dict[str, Any]:
    done = subprocess.run([*CLI, "certify", "--target", str(target), "--seed", "7", "--report-dir", str(reports),
                           *(word for case in LOAD_CASES for word in ("--only", case))],
                          capture_output=True, text=True, timeout=STEP_TIMEOUT_S)
    assert done.returncode == exit_code, done.stdout + done.stderr
    document = json.loads((reports / "report.json").read_text(encoding="utf-8"))
    return {r["id"]: r for r in document["results"] if r["run"] == "main"}


@pytest.mark.slow
def test_load_cases_judge_the_branch_they_name_against_a_pinned_external_load(pinned_verifier: Path,
                                                                               tmp_path: Path) -> None:
    results = _certify_load_cases(pinned_verifier, tmp_path / "reports", 0)
    assert results["VER-6.5-ESC-010"]["verdict"] == "PASSED"
    assert not any("trying again" in note for note in results["VER-6.5-ESC-010"]["notes"]), \
        "with the load pinned at 60 the case sets self_load 50 and judges the skipped branch at once"
    assert results["VER-6.5-ESC-009"]["verdict"] == "SKIPPED"
    assert "load:control" in results["VER-6.5-ESC-009"]["message"]


@pytest.mark.slow
@pytest.mark.parametrize("pinned_verifier", ["self-decode-despite-load"], indirect=True)
def test_a_load_blind_verifier_fails_the_load_case_and_the_fuzzer(pinned_verifier: Path, tmp_path: Path) -> None:
    results = _certify_load_cases(pinned_verifier, tmp_path / "reports", 1)
    assert results["VER-6.5-ESC-010"]["verdict"] == "FAILED"
    assert any(finding["row"] == "R-6.5.2-SELF-PERMITTED" for finding in results["VER-6.5-ESC-010"]["findings"])
    fuzzed = subprocess.run([*CLI, "fuzz", "--target", str(pinned_verifier), "--examples", "150", "--seed", "2",
                             "--database", "", "--out", str(tmp_path / "failures")],
                            capture_output=True, text=True, timeout=STEP_TIMEOUT_S * 2)
    assert fuzzed.returncode == 1, fuzzed.stdout + fuzzed.stderr
    assert "FAILED R-6.5.2-SELF-PERMITTED" in fuzzed.stdout
