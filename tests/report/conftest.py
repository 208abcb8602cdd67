"""One full certification of the embedded reference and one of a mutant, shared by every report test.

A full run takes about a minute; the report, HTML, bundle and diff tests all
read the same two runs (session scope), so the folder's CI time stays short.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

SEED = 11
MUTANT = "skip-round-check"
"""A verifier mutant whose killing cases all lie in one area (stale-base), so its run can be partial."""
MUTANT_AREA = "stale-base"


@dataclass(frozen=True)
class Run:
    folder: Path
    output: str
    returncode: int
    bundle: Path | None = None
    key: Path | None = None


def cli(*args: str, cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``sdcp-conformance ARGS`` in a fresh interpreter, output captured (never a terminal: the log format)."""
    env = {**os.environ, "COLUMNS": "80", "TERM": "dumb"}
    return subprocess.run([sys.executable, "-m", "sdcp_conformance.cli", *args], cwd=cwd, env=env, text=True,
                          capture_output=True, timeout=timeout, check=False)


@pytest.fixture(scope="session")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A PKI folder from `pki init` (it holds the bundle signing key)."""
    folder = tmp_path_factory.mktemp("keys") / "pki"
    done = cli("pki", "init", str(folder))
    assert done.returncode == 0, done.stderr
    return folder


@pytest.fixture(scope="session")
def full_run(tmp_path_factory: pytest.TempPathFactory, keys: Path) -> Run:
    """Every case against the embedded reference verifier, with a signed bundle."""
    root = tmp_path_factory.mktemp("full")
    bundle = root / "bundle.zip"
    done = cli("certify", "--seed", str(SEED), "--report-dir", str(root / "run"), "--bundle", str(bundle),
               "--signing-key", str(keys / "attestation.key"), timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return Run(root / "run", done.stdout + done.stderr, done.returncode, bundle, keys / "attestation.pub")


@pytest.fixture(scope="session")
def mutant_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """The stale-base cases against a mutant that trusts the proposal's round."""
    root = tmp_path_factory.mktemp("mutant")
    done = cli("certify", "--mutant", MUTANT, "--only", MUTANT_AREA, "--seed", str(SEED), "--report-dir",
               str(root / "run"))
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    return Run(root / "run", done.stdout + done.stderr, done.returncode)
