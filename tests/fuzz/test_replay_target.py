"""A failure found against a separately served verifier replays against that verifier, and only there.

The IUT is the reference verifier with a planted bug (``skip-round-check``,
found by seed 1 within a few hundred examples, as in
``test_fuzz_reference_and_mutants.py``), started as a vendor starts theirs:
``pki init --iut verifier``, then the printed ``serve verifier`` command with
``--mutant``. The replay command the fuzz run prints is run as printed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes

from sdcp_conformance.transport.ports import free_port
from tests.harness.separate_process import CLI, STEP_TIMEOUT_S, cli_words, separate_iut

MUTANT = "skip-round-check"
pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class Found:
    folder: Path
    target: Path
    base_uri: str
    printed: str
    """The replay command as the fuzz run printed it."""
    saved: Path


def _run(words: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TERM": "dumb", "COLUMNS": "80"}
    return subprocess.run(words, capture_output=True, text=True, timeout=STEP_TIMEOUT_S, env=env, check=False)


@pytest.fixture(scope="module")
def found(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Found]:
    """A fuzz run against the separately served mutant verifier that found it; the IUT is served until the end."""
    root = tmp_path_factory.mktemp("replay-target")
    folder = root / "iut"
    with separate_iut("verifier", folder, root / "verifier.err", ("--mutant", MUTANT)) as (target, base_uri, _):
        out = root / "failures"
        done = _run([*CLI, "fuzz", "--target", str(target), "--examples", "300", "--seed", "1", "--database", "",
                     "--out", str(out)])
        assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
        printed = [line.removeprefix("replay: ") for line in done.stdout.splitlines() if line.startswith("replay: ")]
        assert len(printed) == 1, done.stdout[-3000:]
        saved = [path.resolve() for path in out.glob("*.json")]
        assert len(saved) == 1
        yield Found(folder, target, base_uri, printed[0], saved[0])


def _recorded(found: Found) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(found.saved.read_text(encoding="utf-8"))
    return loaded


def _error_lines(done: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in done.stderr.splitlines() if line.startswith("Error:")]


def test_the_printed_replay_command_runs_as_printed_and_still_fails(found: Found) -> None:
    words = cli_words(found.printed)
    assert words[words.index("--target") + 1] == str(found.target.resolve())
    done = _run(words)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    assert done.stdout.startswith("still fails"), done.stdout[:500]
    assert "expected 409" in done.stdout and "fixed" not in done.stdout  # the failure itself is shown
    assert found.base_uri in done.stdout  # the transcript shows the served IUT answered, not an embedded one


def test_the_file_records_the_target_the_iut_and_its_certificate(found: Found) -> None:
    recorded = _recorded(found)
    certificate = x509.load_pem_x509_certificate((found.folder / "parties" / "verifier.pem").read_bytes())
    assert recorded["role"] == "verifier" and recorded["embedded"] is False and recorded["mutant"] is None
    assert recorded["target"] == str(found.target.resolve())
    assert recorded["base_uri"] == found.base_uri
    assert recorded["iut_certificate"] == "sha256:" + certificate.fingerprint(hashes.SHA256()).hex()
    assert recorded["replay"] == found.printed
    assert f"--replay {found.saved}" in found.printed


def test_a_replay_without_the_target_is_refused_in_one_line(found: Found) -> None:
    done = _run([*CLI, "fuzz", "--replay", str(found.saved)])
    assert done.returncode == 2, done.stdout[-3000:] + done.stderr[-3000:]
    errors = _error_lines(done)
    assert len(errors) == 1 and str(found.target.resolve()) in errors[0] and "--against-other-iut" in errors[0], \
        done.stderr
    assert "fixed" not in done.stdout + done.stderr and "still fails" not in done.stdout


def test_another_target_is_refused(found: Found) -> None:
    text = found.target.read_text(encoding="utf-8")
    other_uri = re.sub(r":\d+/", f":{free_port()}/", found.base_uri, count=1)
    other = found.target.with_name("other-target.toml")
    other.write_text(text.replace(f'"{found.base_uri}"', f'"{other_uri}"'), encoding="utf-8")
    assert other_uri in other.read_text(encoding="utf-8") and other_uri != found.base_uri
    done = _run([*CLI, "fuzz", "--replay", str(found.saved), "--target", str(other)])
    assert done.returncode == 2, done.stdout[-3000:] + done.stderr[-3000:]
    errors = _error_lines(done)
    assert len(errors) == 1 and other_uri in errors[0] and found.base_uri in errors[0], done.stderr


def test_the_same_uri_presenting_another_certificate_is_refused(found: Found, tmp_path: Path) -> None:
    recorded = _recorded(found)
    recorded["iut_certificate"] = "sha256:" + "00" * 32  # as if the IUT had since presented another certificate
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(recorded), encoding="utf-8")
    done = _run([*CLI, "fuzz", "--replay", str(edited), "--target", str(found.target)])
    assert done.returncode == 2, done.stdout[-3000:] + done.stderr[-3000:]
    errors = _error_lines(done)
    assert len(errors) == 1 and "another certificate" in errors[0] and "sha256:" + "00" * 32 in errors[0], done.stderr


def test_an_explicit_replay_against_another_iut_is_never_called_fixed(found: Found) -> None:
    done = _run([*CLI, "fuzz", "--replay", str(found.saved), "--against-other-iut"])
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "does not fail against the embedded reference verifier" in done.stdout
    assert found.base_uri in done.stdout and "fixed" not in done.stdout
