"""The Node.js stand-in router and drafter, written apart from the reference, pass their role's whole suite.

They are the targets of the planted-bug campaigns (``python -m tests.standins.mutants --role router|drafter``),
which are worth something only while the unplanted stand-ins pass: a case that fails them judges a conformant
implementation nobody on the harness's side wrote, so it is a false FAIL. Each is started exactly as a vendor
starts theirs, with the command line ``pki init --iut ROLE`` prints for the reference, and certified over the
network with every case. Needs Node.js and npm (``.ci/run`` installs them).
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from sdcp_conformance.harness.certify import default_catalogue
from tests.harness import separate_process
from tests.harness.separate_process import CLI, certify_target, running
from tests.standins.standin_node_drafter import PROPOSAL_TIMEOUT_S
from tests.standins.standin_node_router import drafter_argument
from tests.system_binaries import require_program

STEP_TIMEOUT_S = 120.0
CERTIFY_TIMEOUT_S = 600.0


def _standin(role: str, folder: Path) -> tuple[list[str], Path]:
    """``pki init FOLDER --iut ROLE``; the printed ``serve ROLE`` command with the stand-in's launcher instead."""
    made = subprocess.run([*CLI, "pki", "init", str(folder), "--iut", role], capture_output=True, text=True,
                          timeout=STEP_TIMEOUT_S, check=True)
    printed = next(line.strip() for line in made.stdout.splitlines()
                   if line.strip().startswith(f"sdcp-conformance serve {role}"))
    words = shlex.split(printed)[3:]
    return [sys.executable, "-m", f"tests.standins.standin_node_{role}", *words], folder / "target.toml"


def _certified(role: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, harness_lines: str = "",
               models: tuple[str, str] | None = None) -> dict:
    """``models``: (what the written target lists, what the stand-in serves): the target lists the latter, and only
    the cases that need no other model run."""
    require_program("node")
    require_program("npm")
    command, target = _standin(role, tmp_path / "iut")
    text = target.read_text(encoding="utf-8")
    if harness_lines:
        assert "\n[harness]\n" in text
        text = text.replace("\n[harness]\n", f"\n[harness]\n{harness_lines}\n")
    served_model: str | None = None
    if models is not None:
        listed, served_model = models
        assert listed in text
        text = text.replace(listed, f'models = ["{served_model}"]')
    # Every case but those of an HTTP/3 listener: the stand-in serves HTTP/2 only, as its target says (http = "2").
    cases = [case.id for case in default_catalogue(role).select([]) if "http:3" not in case.requires
             and all(not need.startswith("model:") or need == f"model:{served_model}" or served_model is None
                     for need in case.requires)]
    target.write_text(text, encoding="utf-8")
    monkeypatch.setattr(separate_process, "READY_TIMEOUT_S", 300.0)  # the first start installs the npm packages
    with running(command, tmp_path / "standin.err"):
        done, document = certify_target(target, cases, tmp_path / "reports", timeout_s=CERTIFY_TIMEOUT_S)
    failed = {result["id"]: result.get("message") for result in document.get("results", [])
              if result["verdict"] != "PASSED"}
    assert done.returncode == 0 and not failed, f"{failed}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return document


@pytest.mark.slow
def test_the_node_standin_router_passes_every_router_case(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    document = _certified("router", tmp_path, monkeypatch)
    ran = {result["id"] for result in document["results"]}
    assert {"RTR-SANITY-001", "RTR-6.9-PARTITION-001", "RTR-6.7-FRONT-003", "RTR-5.1-TRANSPORT-001"} <= ran
    assert len(ran) >= 55


@pytest.mark.slow
def test_the_node_standin_drafter_passes_every_drafter_case(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Its deadline for a verdict, said in the target file, lets the case of a proposal never answered run.
    # It serves the bigram draft model only: the cases with the context-dependent one are left out.
    document = _certified("drafter", tmp_path, monkeypatch, f"proposal_timeout_s = {PROPOSAL_TIMEOUT_S:g}",
                          ('models = ["bigram-draft-near", "ctx-draft-near"]', "bigram-draft-near"))
    ran = {result["id"] for result in document["results"]}
    assert {"DRF-SANITY-001", "DRF-6.9-LOST-006"} <= ran
    assert len(ran) >= 65


def test_the_router_launcher_names_drafter_models_by_digest() -> None:
    from sdcp_conformance.models.registry import mock_model

    digest = mock_model("bigram-draft-near").model_sha256.hex()
    assert drafter_argument("https://127.0.0.1:9/drafter-1/=bigram-draft-near") == f"https://127.0.0.1:9/drafter-1/={digest}"
    assert drafter_argument(f"https://h:1/d/={digest.upper()}") == f"https://h:1/d/={digest.upper()}"
    with pytest.raises(Exception, match="URI=MODEL"):
        drafter_argument("bigram-draft-near")
