"""The command line a vendor lives in: fast answers, case lists and selectors, one-line errors, Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner

from sdcp_conformance.cli import COMMANDS, load_command, main, role_areas
from sdcp_conformance.harness.certify import default_catalogue
from sdcp_conformance.harness.suites import SUITES
from tests.report.conftest import Run, cli
from tests.report.interrupts import interrupt, start_interruptible

HEAVY = ("torch", "schemathesis", "hypothesis", "matplotlib")


def _imported(args: list[str], cwd: Path) -> tuple[list[str], int]:
    """Run ``main(args)`` in a fresh interpreter; which heavy modules did it import, and its exit status."""
    program = textwrap.dedent(f"""
        import json, sys
        from sdcp_conformance.cli import main
        try:
            main({args!r})
        except SystemExit as exit:
            code = exit.code or 0
        print(json.dumps([[m for m in {HEAVY!r} if m in sys.modules], code]))
    """)
    done = subprocess.run([sys.executable, "-c", program], cwd=cwd, capture_output=True, text=True, timeout=120,
                          check=False)
    heavy, code = json.loads(done.stdout.strip().splitlines()[-1])
    return heavy, code


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["pki", "--help"], ["report", "--help"],
                                  ["check", "--help"], ["bundle", "--help"], ["certify", "--help"]])
def test_quick_commands_import_no_torch(args: list[str], tmp_path: Path) -> None:
    heavy, code = _imported(args, tmp_path)
    assert code == 0 and heavy == []


def test_pki_init_report_show_and_check_import_no_torch(tmp_path: Path, mutant_run: Run) -> None:
    assert _imported(["pki", "init", str(tmp_path / "p")], tmp_path) == ([], 0)
    assert _imported(["report", "show", str(mutant_run.folder)], tmp_path) == ([], 0)
    assert cli("pki", "init", str(tmp_path / "iut"), "--iut", "verifier").returncode == 0
    heavy, code = _imported(["check", "--target", str(tmp_path / "iut" / "target.toml"), "--timeout", "1"], tmp_path)
    assert heavy == [] and code == 1  # nothing is listening there


def test_help_lists_every_command_with_its_own_words() -> None:
    for name, (_, short) in COMMANDS.items():
        assert load_command(name).get_short_help_str(limit=1000) == short
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0 and all(f"  {name} " in result.output for name in COMMANDS)


def test_unknown_command_suggests_the_closest() -> None:
    result = CliRunner().invoke(main, ["certfy"])
    assert result.exit_code == 2 and "did you mean 'certify'" in result.output


def test_info_and_certify_agree_on_areas(full_run: Run) -> None:
    result = CliRunner().invoke(main, ["info"])
    assert result.exit_code == 0, result.output
    catalogue = default_catalogue("verifier")
    areas = {area for area, _, _ in role_areas("verifier")}
    assert areas == {case.area for case in catalogue.cases.values()}
    report = json.loads((full_run.folder / "report.json").read_text(encoding="utf-8"))
    assert areas == set(report["areas"])
    for role in SUITES:
        assert f"{role}: {len(default_catalogue(role).cases)} cases" in result.output


def test_list_shows_every_case_or_the_selected_ones() -> None:
    catalogue = default_catalogue("verifier")
    result = CliRunner().invoke(main, ["certify", "--list"])
    assert result.exit_code == 0
    listed = [line.split()[0] for line in result.output.splitlines() if line.startswith("VER-")]
    assert listed == list(catalogue.cases)
    line = next(line for line in result.output.splitlines() if line.startswith("VER-SANITY-001"))
    assert line.split()[1:4] == ["verifier", "sanity", "MUST"]
    result = CliRunner().invoke(main, ["certify", "--list", "FENCING"])
    assert sorted(line.split()[0] for line in result.output.splitlines() if line.startswith("VER-")) == \
        sorted(case.id for case in catalogue.cases.values() if case.area == "fencing")
    result = CliRunner().invoke(main, ["certify", "--role", "drafter", "--list"])
    assert result.exit_code == 0 and f"of {len(default_catalogue('drafter').cases)} drafter cases" in result.output


def test_selectors_ignore_case_suggest_and_exclude() -> None:
    catalogue = default_catalogue("verifier")
    fencing = {case.id for case in catalogue.cases.values() if case.area == "fencing"}
    assert {case.id for case in catalogue.select(["Fencing"])} == fencing
    assert {case.id for case in catalogue.select(["ver-6.3-fencing"])} == {c for c in fencing if "6.3-FENCING" in c}
    assert {case.id for case in catalogue.select(["fencing"], ["VER-6.8"])} == {c for c in fencing
                                                                               if not c.startswith("VER-6.8")}
    result = CliRunner().invoke(main, ["certify", "--only", "fencng"])
    assert result.exit_code == 2 and "no case matches 'fencng' (did you mean fencing?)" in result.output
    result = CliRunner().invoke(main, ["certify", "--list", "--exclude", "nosuch-area"])
    assert result.exit_code == 2 and "no case matches 'nosuch-area'" in result.output


def test_pki_init_refuses_a_non_empty_folder_unless_forced(tmp_path: Path) -> None:
    folder = tmp_path / "pki"
    assert CliRunner().invoke(main, ["pki", "init", str(folder)]).exit_code == 0
    ca = (folder / "ca.pem").read_bytes()
    result = CliRunner().invoke(main, ["pki", "init", str(folder)])
    assert result.exit_code == 2 and "already holds a PKI" in result.output and "--force" in result.output
    assert (folder / "ca.pem").read_bytes() == ca  # untouched
    result = CliRunner().invoke(main, ["pki", "init", str(folder), "--force"])
    assert result.exit_code == 0 and (folder / "ca.pem").read_bytes() != ca
    assert (folder / "attestation.key").is_file() and (folder / "attestation.pub").is_file()
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine", encoding="utf-8")
    result = CliRunner().invoke(main, ["pki", "init", str(other), "--iut", "verifier"])
    assert result.exit_code == 2 and "already holds files" in result.output


def _one_line_error(done: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and all(fragment in errors[0] for fragment in fragments), done.stderr


def test_misuses_are_one_line_errors(tmp_path: Path) -> None:
    _one_line_error(cli("generate", "--prompt", "the zzzq cat"), "'zzzq' not in the vocabulary")
    _one_line_error(cli("generate", "--model", "nosuch", "--prompt", "the cat"), "--model", "nosuch")
    _one_line_error(cli("generate", "--stack", str(tmp_path), "--prompt", "the cat"), "holds no stack.json")
    assert cli("pki", "init", str(tmp_path / "p")).returncode == 0
    router = "https://127.0.0.1:1/router/"
    _one_line_error(cli("serve", "verifier", "--pki", str(tmp_path / "p"), "--party", "nobody", "--router", router),
                    "no party 'nobody'", "verifier")
    _one_line_error(cli("serve", "verifier", "--pki", str(tmp_path / "p"), "--router", router, "--model", "nosuch"),
                    "--model", "nosuch")


@contextmanager
def port_held() -> Iterator[int]:
    """A loopback port this test listens on (so no one else can) until the block ends."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield taken.getsockname()[1]


def test_serve_verifier_on_a_port_in_use_is_a_one_line_error(tmp_path: Path) -> None:
    with port_held() as port:
        folder = tmp_path / "p"
        assert cli("pki", "init", str(folder), "--party", f"verifier=https://127.0.0.1:{port}/verifier/").returncode \
            == 0
        done = cli("serve", "verifier", "--pki", str(folder), "--router", "https://127.0.0.1:1/router/")
    _one_line_error(done, "cannot listen", f"https://127.0.0.1:{port}/verifier/")


def test_generate_against_a_stack_from_elsewhere_and_after_it_stopped(tmp_path: Path) -> None:
    """stack.json names the PKI relative to where `serve` ran; a stopped stack is one line, not a hang."""
    env = {**os.environ, "TERM": "dumb"}
    server = subprocess.Popen([sys.executable, "-m", "sdcp_conformance.cli", "serve", "--workdir", "stack"],
                              cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert server.stdout is not None
        for line in server.stdout:  # the ready line comes once every party is up
            if "stack description:" in line:
                break
        else:
            pytest.fail(f"serve ended early ({server.wait(timeout=10)})")
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        done = cli("generate", "--stack", "../stack", "--prompt", "the cat", "--max-new", "4", cwd=elsewhere)
        assert done.returncode == 0, done.stderr[-2000:]
        assert len(done.stdout.splitlines()[0].split()) == 4
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=60)
    done = cli("generate", "--stack", str(tmp_path / "stack"), "--prompt", "the cat", "--max-new", "4")
    _one_line_error(done, "is not running", "sdcp-conformance serve --workdir")


def test_ctrl_c_writes_a_partial_report_marked_interrupted_and_exits_130(tmp_path: Path) -> None:
    env = {**os.environ, "TERM": "dumb"}
    run = start_interruptible([sys.executable, "-m", "sdcp_conformance.cli", "certify", "--seed", "1",
                               "--report-dir", str(tmp_path / "r")], env=env)
    assert run.stdout is not None
    seen = []
    for line in run.stdout:  # one line per finished case: interrupt after the third
        seen.append(line)
        if line.startswith("[  3/"):
            break
    rest = interrupt(run)
    assert run.returncode == 130, "".join(seen) + rest
    assert "Aborted!" not in rest and "Traceback" not in rest
    document = json.loads((tmp_path / "r" / "report.json").read_text(encoding="utf-8"))
    assert document["run"]["status"] == "INTERRUPTED" and document["run"]["interrupted"] is True
    total = len(default_catalogue("verifier").cases) + 1
    assert 3 <= len(document["results"]) < total
    assert (tmp_path / "r" / "report.html").is_file() and "certification INTERRUPTED" in rest


def test_certify_with_a_harness_port_held_elsewhere_says_which_and_what_to_do(tmp_path: Path) -> None:
    with port_held() as port:
        folder = tmp_path / "certs"
        assert cli("pki", "init", str(folder), "--iut", "verifier",
                   "--party", f"cache=https://127.0.0.1:{port}/cache/").returncode == 0
        done = cli("certify", "--target", str(folder / "target.toml"), "--only", "VER-6.3-IDEMPOTENCY-003")
    assert done.returncode == 4, done.stderr
    assert f"127.0.0.1', {port})" in done.stderr and "held by another process" in done.stderr
    assert str(folder / "target.toml") in done.stderr and "Traceback" not in done.stderr
