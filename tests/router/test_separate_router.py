"""`pki init --iut router`, then the reference router as a separate process, then `certify --target` (and the
pytest plugin) through the target file it wrote."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from sdcp_conformance.harness.target import load_target
from tests.harness.separate_process import CLI, certify_mutant, certify_separate, run_plugin, separate_iut

STEP_TIMEOUT_S = 180.0
SELECTED = ["RTR-SANITY-001", "RTR-6.9-FAILOVER-001", "RTR-6.9-PARTITION-001", "RTR-6.1-ASSIGN-001",
            "RTR-6.6-POLICY-002", "RTR-5.2-UNKNOWN-KIND-001", "RTR-6.1-CANNOT-SERVE-001"]


@pytest.fixture(scope="module")
def separate_router(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str, str]]:
    folder = tmp_path_factory.mktemp("router-iut")
    with separate_iut("router", folder, folder / "router.err") as served:
        yield served


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
    document = certify_separate(target, base_uri, SELECTED, tmp_path / "reports", timeout_s=STEP_TIMEOUT_S)
    assert document["counts"] == {"PASSED": len(SELECTED) + 1}


@pytest.mark.slow
def test_pytest_plugin_against_a_separately_started_router(separate_router: tuple[Path, str, str],
                                                           tmp_path: Path) -> None:
    target, _, _ = separate_router
    done = run_plugin(target, ["RTR-6.9-FAILOVER-001"], tmp_path, timeout_s=STEP_TIMEOUT_S)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "RTR-6.9-FAILOVER-001 PASSED" in done.stdout and "3 passed" in done.stdout


@pytest.mark.slow
def test_a_separately_served_router_mutant_is_failed_by_its_killer(tmp_path: Path) -> None:
    """`serve router --mutant NAME`: what a vendor sees when a router is wrong (the bug: it assigns a drafter whose
    status expired, §6.1 MUST NOT; the profile-only `status-from-anyone` is NON-STRICT, P1-JUDGE-1)."""
    verdicts = certify_mutant("router", "assign-expired-drafter", ["RTR-6.1-EXPIRED-003"], tmp_path / "iut",
                              tmp_path / "router.err", timeout_s=STEP_TIMEOUT_S)
    assert verdicts["RTR-6.1-EXPIRED-003"] == "FAILED", verdicts


def test_serve_router_refuses_an_unknown_mutant(tmp_path: Path) -> None:
    done = subprocess.run([*CLI, "serve", "router", "--pki", str(tmp_path), "--cache", "https://127.0.0.1:1/",
                           "--verifier", "https://127.0.0.1:2/", "--drafter", "https://127.0.0.1:3/=bigram-draft-near",
                           "--mutant", "no-such-mutant"], capture_output=True, text=True, timeout=STEP_TIMEOUT_S)
    assert done.returncode == 2 and "no-such-mutant" in done.stderr, done.stderr
