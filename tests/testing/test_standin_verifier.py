"""The stand-in verifier (issue 16's yardstick): exact verdicts from the bigram closed form, and no torch.

It runs as a separate process exactly as the benchmark starts it, and the harness certifies it over the
network; the expectations are the suite's own (greedy tokens from the oracle, seeded rule-2 outcomes
recomputed by the harness), never the stand-in's. The child reports whether torch was ever imported.
"""

from __future__ import annotations

import dataclasses
import json
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import numpy as np
import pytest

from sdcp_conformance.harness.role_spec import spec_of
from sdcp_conformance.harness.target import load_target, render_target
from sdcp_conformance.models.bigram import VOCAB_SIZE
from sdcp_conformance.reference.verifier.ports import ScoreItem
from sdcp_conformance.testing.children import stop
from tests.standins.standin_verifier import READY_LINE, ClosedFormBigram

CLI = [sys.executable, "-m", "sdcp_conformance.cli"]
READY_TIMEOUT_S = 60.0
STEP_TIMEOUT_S = 120.0
TORCH_LINE = "torch imported: "
# The child runs the stand-in's own __main__ and, once SIGTERM has stopped it, says whether torch was loaded.
CHILD = ("import runpy, sys; sys.argv = ['standin', *sys.argv[1:]]; "
         "runpy.run_module('tests.standins.standin_verifier', run_name='__main__'); "
         f"print({TORCH_LINE!r} + str('torch' in sys.modules), flush=True)")
CASES = ("VER-SANITY-001", "rule-1", "VER-6.4-RULE2-001", "VER-6.4-RULE2-002", "VER-6.4-RULE2-003",
         "VER-6.3-IDEMPOTENCY-001", "VER-6.3-FENCING-004")
NEEDS_CTX = ("VER-6.4-RULE1-008", "VER-6.4-RULE1-009")


def _pump(stream: IO[str], lines: queue.Queue[str]) -> None:
    for line in stream:
        lines.put(line)


@pytest.fixture
def standin(tmp_path: Path) -> Iterator[tuple[Path, queue.Queue[str], subprocess.Popen[str]]]:
    folder = tmp_path / "iut"
    _, path = spec_of("verifier").write_target(folder)
    path.write_text(render_target(dataclasses.replace(load_target(path), models=("bigram",)), folder),
                    encoding="utf-8")
    target = load_target(path)
    with (tmp_path / "standin.err").open("w") as errors:
        process = subprocess.Popen([sys.executable, "-c", CHILD, "--pki", str(folder), "--party", "verifier",
                                    "--router", target.router], stdout=subprocess.PIPE, stderr=errors, text=True)
        lines: queue.Queue[str] = queue.Queue()
        assert process.stdout is not None
        threading.Thread(target=_pump, args=(process.stdout, lines), daemon=True).start()
        try:
            first = lines.get(timeout=READY_TIMEOUT_S)
            assert first.startswith(READY_LINE) and first[len(READY_LINE):].strip() == target.base_uri, first
            yield path, lines, process
        finally:
            stop(process)


@pytest.mark.slow
def test_the_standin_passes_exact_cases_and_never_imports_torch(
        standin: tuple[Path, queue.Queue[str], subprocess.Popen[str]], tmp_path: Path) -> None:
    target, lines, process = standin
    reports = tmp_path / "reports"
    selection = [word for case in CASES for word in ("--only", case)]
    selection += [word for case in NEEDS_CTX for word in ("--exclude", case)]
    done = subprocess.run([*CLI, "certify", "--target", str(target), *selection, "--seed", "5",
                           "--report-dir", str(reports)], capture_output=True, text=True, timeout=STEP_TIMEOUT_S)
    assert done.returncode == 0, done.stdout + done.stderr
    document = json.loads((reports / "report.json").read_text(encoding="utf-8"))
    ran = {result["id"] for result in document["results"]}
    assert {"VER-6.4-RULE1-001", "VER-6.4-RULE1-007", "VER-6.4-RULE2-003", "VER-6.3-FENCING-004"} <= ran
    assert document["counts"] == {"PASSED": len(document["results"])}
    process.terminate()
    said = _until(lines, TORCH_LINE)
    assert said[-1] == f"{TORCH_LINE}False\n", said


def _until(lines: queue.Queue[str], prefix: str) -> list[str]:
    """The child's lines up to the first that starts with ``prefix`` (each within the step deadline)."""
    said: list[str] = []
    while not said or not said[-1].startswith(prefix):
        try:
            said.append(lines.get(timeout=STEP_TIMEOUT_S))
        except queue.Empty:
            pytest.fail(f"the child never printed {prefix!r}; it printed {said}")
    return said


def test_closed_form_rows_equal_the_bigram_network() -> None:
    """The port's rows are the torch runtime's on the shipped checkpoint (a Llama network), not a restatement."""
    from sdcp_conformance.reference.stack import READY_LINE as REFERENCE_READY_LINE
    from sdcp_conformance.testing.targets import cached_model

    network = cached_model("bigram")
    closed = ClosedFormBigram()
    assert (closed.model_sha256, closed.tokenizer_sha256, closed.vocab_size) == (
        network.model_sha256, network.tokenizer_sha256, VOCAB_SIZE)
    items = [ScoreItem(b"a" * 16, (5, 9, 14), (20, 2, 127)), ScoreItem(b"b" * 16, (0, 64), ()),
             ScoreItem(b"c" * 16, (1,), (3, 3, 3, 3, 3, 3, 3, 3))]
    for expected, got in zip(network.score(items), closed.score(items), strict=True):
        assert got.shape == expected.shape
        assert np.array_equal(got, expected)
    assert READY_LINE == REFERENCE_READY_LINE  # the benchmark and tests wait for the same line
