"""Starting a reference role (or a mutant of it) as a separate process, as a vendor starts theirs, for the target-mode
tests."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

from sdcp_conformance.testing import children
from sdcp_conformance.testing.children import ChildNotReady, ready_line

CLI = [sys.executable, "-m", "sdcp_conformance.cli"]
READY_TIMEOUT_S = 90.0
STEP_TIMEOUT_S = 120.0


def cli_words(printed: str) -> list[str]:
    """The printed `sdcp-conformance …` command, run with this interpreter (no reliance on PATH)."""
    words = shlex.split(printed)
    assert words[0] == "sdcp-conformance"
    return [*CLI, *words[1:]]


def wait_ready(process: subprocess.Popen[str]) -> str:
    """The base URI from the child's ready line (its stdout), within READY_TIMEOUT_S."""
    try:
        return ready_line(process, READY_TIMEOUT_S)
    except ChildNotReady as error:
        pytest.fail(str(error))


@contextmanager
def separate_iut(role: str, folder: Path, errors: Path, extra: tuple[str, ...] = (),
                 init: tuple[str, ...] = ()) -> Iterator[tuple[Path, str, str]]:
    """``pki init FOLDER --iut ROLE`` (plus ``init``), then the printed ``serve ROLE`` command (plus ``extra``) as a
    child process; yields (target file, base URI, what ``pki init`` printed) and stops the child."""
    printed, said = pki_init(role, folder, init)
    with running([*cli_words(printed), *extra], errors) as base_uri:
        yield folder / "target.toml", base_uri, said


def pki_init(role: str, folder: Path, init: tuple[str, ...] = ()) -> tuple[str, str]:
    """``pki init FOLDER --iut ROLE`` (plus ``init``, e.g. ``--http 3``): (the ``serve ROLE`` command it printed,
    all it printed)."""
    made = subprocess.run([*CLI, "pki", "init", str(folder), "--iut", role, *init], capture_output=True, text=True,
                          timeout=STEP_TIMEOUT_S, check=True)
    printed = next(line.strip() for line in made.stdout.splitlines()
                   if line.strip().startswith(f"sdcp-conformance serve {role}"))
    return printed, made.stdout


@contextmanager
def running(command: list[str], errors: Path) -> Iterator[str]:
    """``command`` as a child process (its stderr to ``errors``) until the block ends; yields its ready line's URI."""
    try:
        with children.running(command, errors, timeout_s=READY_TIMEOUT_S) as base_uri:
            yield base_uri
    except ChildNotReady as error:
        pytest.fail(str(error))


@contextmanager
def separate_verifier(folder: Path, errors: Path, extra: tuple[str, ...] = ()) -> Iterator[tuple[Path, str]]:
    """:func:`separate_iut` for a verifier: yields (target file, base URI)."""
    with separate_iut("verifier", folder, errors, extra) as (target, base_uri, _):
        yield target, base_uri


def certify_target(target: Path, cases: tuple[str, ...] | list[str], reports: Path, *, seed: int = 5,
                   timeout_s: float = 240.0) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """``certify --target`` of these cases, as a vendor runs it; (the finished command, its report.json)."""
    only = [word for case in cases for word in ("--only", case)]
    done = subprocess.run([*CLI, "certify", "--target", str(target), *only, "--seed", str(seed), "--report-dir",
                           str(reports)], capture_output=True, text=True, timeout=timeout_s)
    found = reports / "report.json"
    return done, json.loads(found.read_text(encoding="utf-8")) if found.exists() else {}


def certify_separate(target: Path, base_uri: str, cases: Sequence[str], reports: Path, *, seed: int = 5,
                     timeout_s: float = 240.0) -> dict[str, Any]:
    """:func:`certify_target`, which must finish with 0 and report the separate IUT at ``base_uri``; its report."""
    done, document = certify_target(target, list(cases), reports, seed=seed, timeout_s=timeout_s)
    assert done.returncode == 0, done.stdout + done.stderr
    assert document["environment"]["embedded"] is False and document["environment"]["iut"] == base_uri
    return document


def certify_mutant(role: str, mutant: str, cases: Sequence[str], folder: Path, errors: Path, *,
                   timeout_s: float) -> dict[str, str]:
    """``serve ROLE --mutant MUTANT`` (its PKI in ``folder``, the reports beside it) certified on ``cases``, which
    must fail it: the verdict of each case."""
    with separate_iut(role, folder, errors, ("--mutant", mutant)) as (target, _, _):
        done, document = certify_target(target, list(cases), folder.parent / "reports", timeout_s=timeout_s)
    assert done.returncode == 1, done.stdout + done.stderr
    return {result["id"]: result["verdict"] for result in document["results"]}


def run_plugin(target: Path, cases: Sequence[str], cwd: Path, *, seed: int = 2,
               timeout_s: float = STEP_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    """The pytest plugin (``--sdcp-target``) on ``cases`` in ``cwd``, as a vendor's own pytest runs it."""
    plugin = [] if any(ep.name == "sdcp_conformance" for ep in entry_points(group="pytest11")) else [
        "-p", "sdcp_conformance.pytest_plugin"]
    only = [word for case in cases for word in ("--sdcp-only", case)]
    return subprocess.run([sys.executable, "-m", "pytest", *plugin, "-p", "no:cacheprovider", "--sdcp-target",
                           str(target), *only, "--sdcp-seed", str(seed), "-v"], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout_s)
