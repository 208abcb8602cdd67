"""The base install (no extra) as a vendor has it: what certifies a remote IUT runs without torch; a command that
needs a missing extra says which in one line and exits 2.

Each command runs in a fresh interpreter, in a folder outside the checkout, with the extras' modules made
unimportable (as they are in a venv that installed the wheel without them: ``import torch`` raises
ModuleNotFoundError). ``.ci/run`` does the same with the built wheel in a fresh venv.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sdcp_conformance.cli.extras import EXTRAS
from tests.harness.separate_process import separate_verifier

STEP_TIMEOUT_S = 120.0
CERTIFY_TIMEOUT_S = 300.0
WITHOUT_ALL = tuple(module for modules in EXTRAS.values() for module in modules)


def without(modules: tuple[str, ...], *args: str, cwd: Path,
            timeout: float = STEP_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    """``sdcp-conformance ARGS`` with ``modules`` unimportable."""
    child = (f"import sys; sys.modules.update(dict.fromkeys({modules!r})); sys.argv[0] = 'sdcp-conformance'; "
             "from sdcp_conformance.cli import main; main()")
    return subprocess.run([sys.executable, "-c", child, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, check=False)


def _one_line(done: subprocess.CompletedProcess[str], extra: str) -> None:
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert f"[{extra}] extra" in lines[0] and f"pip install 'sdcp-conformance[{extra}]'" in lines[0], lines[0]


def test_pki_init_and_the_help_of_check_and_certify_need_no_extra(tmp_path: Path) -> None:
    made = without(WITHOUT_ALL, "pki", "init", "certs", "--iut", "verifier", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert (tmp_path / "certs" / "target.toml").is_file()
    # the mock models the IUT must load: real folders of this install
    shown = [line.split(": ", 1)[1] for line in made.stdout.splitlines()
             if line.strip().startswith(("bigram:", "ctx:"))]
    assert len(shown) == 2 and all((Path(folder) / "config.json").is_file() for folder in shown), made.stdout
    for args in (("check", "--help"), ("certify", "--target", "certs/target.toml", "--help"), ("--version",),
                 ("certify", "--list", "sanity")):
        done = without(WITHOUT_ALL, *args, cwd=tmp_path)
        assert done.returncode == 0, f"{args}: {done.stderr}"


@pytest.mark.parametrize(("args", "extra"), [
    (("certify",), "reference"),
    (("certify", "--role", "router", "--only", "sanity"), "reference"),
    (("serve", "verifier", "--help"), "reference"),
    (("generate", "--help"), "reference"),
    (("selftest",), "reference"),
    (("fuzz", "--examples", "1"), "reference"),
], ids=lambda value: " ".join(value) if isinstance(value, tuple) else value)
def test_a_command_of_the_embedded_reference_names_its_extra_in_one_line(
        args: tuple[str, ...], extra: str, tmp_path: Path) -> None:
    _one_line(without(EXTRAS[extra], *args, cwd=tmp_path), extra)


def test_the_api_fuzzer_names_its_extra_in_one_line(tmp_path: Path) -> None:
    assert without((), "pki", "init", "certs", "--iut", "verifier", cwd=tmp_path).returncode == 0
    done = without(EXTRAS["fuzz-api"], "fuzz", "--api", "--target", "certs/target.toml", cwd=tmp_path)
    _one_line(done, "fuzz-api")


@pytest.mark.slow
def test_check_and_certify_of_a_separate_reference_verifier_import_no_torch(tmp_path: Path) -> None:
    """A vendor's run: the IUT elsewhere (here the reference, started as a vendor starts theirs, with torch), the
    harness without any extra; the ctx case (VER-6.1-SESSION-002) judged from the manifest's recorded greedy
    continuation."""
    with separate_verifier(tmp_path / "iut", tmp_path / "iut.err") as (target, _):
        checked = without(WITHOUT_ALL, "check", "--target", str(target), cwd=tmp_path)
        assert checked.returncode == 0, checked.stdout + checked.stderr
        done = without(WITHOUT_ALL, "certify", "--target", str(target), "--only", "sanity", "--only", "transport",
                       "--only", "VER-6.1-SESSION-002", "--seed", "5", "--report-dir", str(tmp_path / "reports"),
                       cwd=tmp_path, timeout=CERTIFY_TIMEOUT_S)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "certification PASSED" in done.stdout
