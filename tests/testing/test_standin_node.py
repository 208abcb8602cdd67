"""The Node.js stand-in verifier (issue 16's fast yardstick): the harness certifies it like any verifier.

It is started exactly as the benchmark starts it (``python -m tests.standins.standin_node``, which
installs its pinned npm packages on first use and becomes ``node``), and judged over the network by the
suite's own expectations: greedy tokens from the oracle, seeded rule-2 outcomes recomputed by the harness,
and the statistical test of unseeded rounds. Needs Node.js and npm (``.ci/run`` installs them).
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sdcp_conformance.harness.role_spec import spec_of
from sdcp_conformance.harness.target import load_target, render_target
from tests.harness import separate_process
from tests.harness.separate_process import certify_target, running
from tests.system_binaries import require_program

LAUNCHER = [sys.executable, "-m", "tests.standins.standin_node"]
CASES = ("VER-SANITY-001", *(f"VER-6.4-RULE1-{n:03d}" for n in (1, 2, 3, 4, 5, 6, 7, 10)), "fencing", "idempotency",
         "q-preconditions", "VER-6.4-RULE2-STAT-001", "VER-6.4-RULE2-STAT-009", "VER-6.4-RULE2-001",
         "VER-6.4-RULE2-003", "VER-5.1-TRANSPORT-006", "VER-4.1-CONTRACT-023", "VER-6.3-STALE-BASE-001")
"""The bigram cases the benchmark runs (rule 1 but the two that need ``ctx``, fencing, idempotency, the
statistical ones), and a few whose encodings and refusals a stand-in built on other libraries could get wrong."""


@pytest.fixture
def standin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    require_program("node")
    require_program("npm")
    folder = tmp_path / "iut"
    _, path = spec_of("verifier").write_target(folder)
    path.write_text(render_target(dataclasses.replace(load_target(path), models=("bigram",)), folder),
                    encoding="utf-8")
    target = load_target(path)
    monkeypatch.setattr(separate_process, "READY_TIMEOUT_S", 300.0)  # the first start installs the npm packages
    with running([*LAUNCHER, "--pki", str(folder), "--party", "verifier", "--router", target.router],
                 tmp_path / "standin.err") as base_uri:
        assert base_uri == target.base_uri
        yield path


@pytest.mark.slow
def test_the_node_standin_passes_the_cases_the_benchmark_drives(standin: Path, tmp_path: Path) -> None:
    done, document = certify_target(standin, CASES, tmp_path / "reports", timeout_s=300.0)
    assert done.returncode == 0, done.stdout + done.stderr
    ran = {result["id"] for result in document["results"]}
    assert {"VER-6.4-RULE1-007", "VER-6.8-FENCING-005", "VER-6.3-IDEMPOTENCY-003", "VER-6.4-RULE2-STAT-001",
            "VER-6.4-RULE2-STAT-009", "VER-5.1-TRANSPORT-006"} <= ran
    assert len(ran) >= 40
    assert document["counts"] == {"PASSED": len(document["results"])}


def test_the_launcher_says_what_is_missing_without_node(tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    done = subprocess.run([*LAUNCHER, "--install"], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PATH": str(empty)})
    assert done.returncode != 0
    assert "Node.js is not installed" in done.stderr
