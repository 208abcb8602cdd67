"""The README opens with two commands that work on a fresh clone: one installs the tool with the embedded
reference and certifies it, one installs the test dependencies and runs the tests; ``.ci/run`` runs the second
verbatim, after checking the built wheel outside the checkout."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIRST = "pip install -c constraints.txt -e '.[reference]' && sdcp-conformance certify"
SECOND = "pip install -c constraints.txt -e '.[test]' && python -m pytest"


def test_the_readme_opens_with_the_two_commands() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    opening = lines[lines.index("```sh") + 1: lines.index("```sh") + 3]
    assert opening == [FIRST, SECOND]
    assert lines[lines.index("```sh") + 3] == "```"


def test_ci_runs_the_test_command_verbatim_after_the_wheel_check() -> None:
    lines = [line for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
             if line.strip() and not line.lstrip().startswith("#")]
    assert lines[-1] == SECOND
    assert "python tools/check_wheel.py" in lines
