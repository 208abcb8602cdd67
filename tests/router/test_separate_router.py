"""`pki init --iut router`, then the reference router as a separate process, then `certify --target` (and the
pytest plugin) through the target file it wrote."""

from __future__ import annotations

import json
import queue
import shlex
import subprocess
import sys
import threading
from collections.abc import Iterator
from importlib.metadata import entry_points
from pathlib import Path
from typing import IO

import pytest

from sdcp_conformance.harness.target import load_target
from sdcp_conformance.reference.stack import READY_LINE

CLI = [sys.executable, "-m", "sdcp_conformance.cli"]
READY_TIMEOUT_S = 90.0
STEP_TIMEOUT_S = 180.0
SELECTED = ["RTR-SANITY-001", "RTR-6.9-FAILOVER-001", "RTR-6.9-PARTITION-001", "RTR-6.1-ASSIGN-001",
            "RTR-6.6-POLICY-002", "RTR-5.2-UNKNOWN-KIND-001", "RTR-6.1-CANNOT-SERVE-001"]


def _lines(stream: IO[str]) -> queue.Queue[str]:
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        for line in stream:
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    return lines


def _wait_ready(lines: queue.Queue[str], process: subprocess.Popen[str]) -> str:
    seen: list[str] = []
    while True:
        try:
            line = lines.get(timeout=READY_TIMEOUT_S)
        except queue.Empty:
            pytest.fail(f"no {READY_LINE!r} line within {READY_TIMEOUT_S} s; got {seen}")
        seen.append(line)
        if line.startswith(READY_LINE):
            return line[len(READY_LINE):].strip()
        assert process.poll() is None, f"the router exited early: {seen}"


@pytest.fixture(scope="module")
def separate_router(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str, str]]:
    folder = tmp_path_factory.mktemp("router-iut")
    made = subprocess.run([*CLI, "pki", "init", str(folder), "--iut", "router"], capture_output=True, text=True,
                          timeout=STEP_TIMEOUT_S, check=True)
    printed = next(line.strip() for line in made.stdout.splitlines()
                   if line.strip().startswith("sdcp-conformance serve router"))
    words = shlex.split(printed)
    with (folder / "router.err").open("w") as errors:
        process = subprocess.Popen([*CLI, *words[1:]], stdout=subprocess.PIPE, stderr=errors, text=True)
        try:
            assert process.stdout is not None
            base_uri = _wait_ready(_lines(process.stdout), process)
            yield folder / "target.toml", base_uri, made.stdout
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=20)


@pytest.mark.slow
def test_pki_init_prints_the_routers_configuration(separate_router: tuple[Path, str, str]) -> None:
    target, base_uri, printed = separate_router
    config = load_target(target)
    assert config.role == "router" and config.base_uri == base_uri and config.models == ()
    assert len(config.verifiers) == 3 and len(config.drafters) == 3
    assert config.extra["drafter_models"] == ["bigram-draft-near", "bigram-draft-far", "bigram-draft-near"]
    for uri in (*config.verifiers, *config.drafters, config.cache):
        assert uri in printed
    assert "SHA-256" in printed and "certify --target" in printed


@pytest.mark.slow
def test_certify_a_separately_started_reference_router(separate_router: tuple[Path, str, str],
                                                       tmp_path: Path) -> None:
    target, base_uri, _ = separate_router
    reports = tmp_path / "reports"
    only = [word for case in SELECTED for word in ("--only", case)]
    done = subprocess.run([*CLI, "certify", "--target", str(target), *only, "--seed", "5", "--report-dir",
                           str(reports)], capture_output=True, text=True, timeout=STEP_TIMEOUT_S)
    assert done.returncode == 0, done.stdout + done.stderr
    document = json.loads((reports / "report.json").read_text(encoding="utf-8"))
    assert document["environment"]["embedded"] is False and document["environment"]["iut"] == base_uri
    assert document["counts"] == {"PASSED": len(SELECTED) + 1}


@pytest.mark.slow
def test_pytest_plugin_against_a_separately_started_router(separate_router: tuple[Path, str, str],
                                                           tmp_path: Path) -> None:
    target, _, _ = separate_router
    plugin = [] if any(ep.name == "sdcp_conformance" for ep in entry_points(group="pytest11")) else [
        "-p", "sdcp_conformance.pytest_plugin"]
    done = subprocess.run([sys.executable, "-m", "pytest", *plugin, "-p", "no:cacheprovider", "--sdcp-target",
                           str(target), "--sdcp-only", "RTR-6.9-FAILOVER-001", "--sdcp-seed", "2", "-v"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=STEP_TIMEOUT_S)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "RTR-6.9-FAILOVER-001 PASSED" in done.stdout and "3 passed" in done.stdout
