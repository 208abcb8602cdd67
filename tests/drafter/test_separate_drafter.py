"""`pki init --iut drafter`, the reference drafter as a separate process, then `certify --target` and the plugin."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sdcp_conformance.harness.target import load_target
from tests.harness.separate_process import certify_mutant, certify_separate, run_plugin, separate_iut

STEP_TIMEOUT_S = 240.0
CASES = ("DRF-SANITY-001", "DRF-6.2-PROPOSAL-001", "DRF-6.2-ARTIFACTS-001", "DRF-6.3-DISCARD-001",
         "DRF-6.3-DISCARD-003", "DRF-P1-DRF-6-RESYNC-001", "DRF-6.5.2-SWITCH-001", "DRF-6.9-LOST-003",
         "DRF-P1-DRF-1-001", "DRF-6.1-STATUS-001", "DRF-5.1-TRANSPORT-001", "DRF-6.4-NOT-HMAC-001", "DRF-P1-MLC-2-001")
"""One case or more of most areas: the target path end to end (the embedded certification runs them all), and one
with the context-dependent draft model, which the printed ``serve drafter`` command serves too."""


@pytest.fixture(scope="module")
def separate_drafter(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str, str]]:
    folder = tmp_path_factory.mktemp("drafter-iut")
    with separate_iut("drafter", folder / "pki", folder / "drafter.err") as served:
        yield served


def test_pki_init_says_what_the_drafter_is_configured_with(separate_drafter: tuple[Path, str, str]) -> None:
    target_path, base_uri, printed = separate_drafter
    target = load_target(target_path)
    assert target.role == "drafter" and target.base_uri == base_uri
    assert target.models == ("bigram-draft-near", "ctx-draft-near")
    assert len(target.verifiers) == 2 and target.router and target.cache
    for needed in (target.router, target.cache, "bigram-draft-near", "ctx-draft-near", "P1-DRF-1", str(target.ca)):
        assert needed in printed, needed


@pytest.mark.slow
def test_certify_a_separately_started_reference_drafter(separate_drafter: tuple[Path, str, str],
                                                         tmp_path: Path) -> None:
    target, base_uri, _ = separate_drafter
    document = certify_separate(target, base_uri, CASES, tmp_path / "reports", timeout_s=STEP_TIMEOUT_S)
    assert set(document["counts"]) == {"PASSED"}, document["counts"]
    assert document["counts"]["PASSED"] == len(CASES) + 1  # the sanity case runs first and last


@pytest.mark.slow
def test_pytest_plugin_against_a_separately_started_drafter(separate_drafter: tuple[Path, str, str],
                                                            tmp_path: Path) -> None:
    target, _, _ = separate_drafter
    empty = tmp_path / "empty"
    empty.mkdir()
    done = run_plugin(target, ["DRF-SANITY-001", "DRF-6.5.2-FINISH-001"], empty, timeout_s=STEP_TIMEOUT_S)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "DRF-SANITY-001 PASSED" in done.stdout and "DRF-6.5.2-FINISH-001 PASSED" in done.stdout
    assert "3 passed" in done.stdout


@pytest.mark.slow
def test_a_separately_served_drafter_mutant_is_failed_by_its_killer(tmp_path: Path) -> None:
    """`serve drafter --mutant NAME`: what a vendor sees when a drafter is wrong (the bug: it goes on proposing after
    a switch, a §6.5.2 MUST)."""
    verdicts = certify_mutant("drafter", "drf-continues-after-switch", ["DRF-6.5.2-SWITCH-001"], tmp_path / "pki",
                              tmp_path / "drafter.err", timeout_s=STEP_TIMEOUT_S)
    assert verdicts["DRF-6.5.2-SWITCH-001"] == "FAILED", verdicts
