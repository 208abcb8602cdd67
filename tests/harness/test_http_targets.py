"""A target says what its listeners speak (``http = "2" | "3" | "both"``, §5.1): written by ``pki init --iut ROLE
--http V``, carried on the serve line it prints, read back by ``load_target``, and refused when it is anything
else."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from sdcp_conformance.cli import main
from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.harness.role_spec import spec_of
from sdcp_conformance.harness.target import load_target


@pytest.mark.parametrize("role", ["verifier", "drafter", "router"])
@pytest.mark.parametrize("http", ["3", "both"])
def test_pki_init_writes_the_version_and_the_serve_line_carries_it(tmp_path: Path, role: str, http: str) -> None:
    folder = tmp_path / "pki"
    result = CliRunner().invoke(main, ["pki", "init", str(folder), "--iut", role, "--http", http])
    assert result.exit_code == 0, result.output
    assert load_target(folder / "target.toml").http == http
    serve = next(line.strip() for line in result.output.splitlines()
                 if line.strip().startswith(f"sdcp-conformance serve {role} "))
    words = shlex.split(serve)
    assert words[words.index("--http") + 1] == http
    assert f'http = "{http}"' in result.output  # what the IUT is told to speak, in the target's words


def test_without_http_the_target_is_http2_and_the_serve_line_says_nothing_of_it(tmp_path: Path) -> None:
    folder = tmp_path / "pki"
    result = CliRunner().invoke(main, ["pki", "init", str(folder), "--iut", "verifier"])
    assert result.exit_code == 0, result.output
    assert load_target(folder / "target.toml").http == "2"
    assert "--http" not in result.output
    assert "http =" not in (folder / "target.toml").read_text(encoding="utf-8")


def test_http_without_iut_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["pki", "init", str(tmp_path / "pki"), "--http", "3"])
    assert result.exit_code == 2 and "--http goes with --iut" in result.output


@pytest.mark.parametrize("value", ['"4"', '"h3"', "true", '["2"]'])
def test_an_unknown_version_in_the_target_is_one_line_naming_the_file_and_member(tmp_path: Path, value: str) -> None:
    _, path = spec_of("verifier").write_target(tmp_path / "pki")
    text = path.read_text(encoding="utf-8").replace("[harness]", f"http = {value}\n\n[harness]", 1)
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InvalidArgument) as caught:
        load_target(path)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{path}: [target] http must be one of")


def test_the_serve_command_accepts_what_pki_init_writes() -> None:
    for role in ("verifier", "drafter", "router"):
        result = CliRunner().invoke(main, ["serve", role, "--help"])
        assert result.exit_code == 0 and "--http [2|3|both]" in result.output, result.output
