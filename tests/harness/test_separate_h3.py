"""Issue 44's path for a vendor on QUIC: ``pki init --iut ROLE --http 3`` (or ``both``), the printed ``serve`` line
as a separate process, ``check --target`` and ``certify --target`` — for the reference verifier, drafter and
router. Over HTTP/3 the sanity case and the transport cases pass; the cases that probe an HTTP/2 listener are
SKIPPED under ``http = "3"`` (the IUT serves none), and run beside the HTTP/3 ones under ``both``."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.harness.separate_process import CLI, STEP_TIMEOUT_S, certify_separate, separate_iut

PREFIX = {"verifier": "VER", "drafter": "DRF", "router": "RTR"}
H3_CASES = {"verifier": (12, 13, 14, 15), "drafter": (7, 8, 9, 10), "router": (7, 8, 9, 10)}
"""The HTTP/3 transport cases of each role (suites/transport_h3.py), numbered in its transport area."""
HTTP2_PROBES = {"verifier": (4, 5, 6, 7), "drafter": (3, 4, 5), "router": (3, 4, 5)}
"""The cases that probe the HTTP/2 listener with raw TLS (TLS 1.2, HTTP/1.1, ALPN)."""


@pytest.mark.slow
@pytest.mark.parametrize("http", ["3", "both"])
@pytest.mark.parametrize("role", ["verifier", "drafter", "router"])
def test_a_separately_served_reference_passes_over_http3(tmp_path: Path, role: str, http: str) -> None:
    with separate_iut(role, tmp_path / "iut", tmp_path / "iut.err", init=("--http", http)) as (target, base_uri, _):
        check = subprocess.run([*CLI, "check", "--target", str(target)], capture_output=True, text=True,
                               timeout=STEP_TIMEOUT_S)
        assert check.returncode == 0, check.stdout + check.stderr
        assert "[  ok] HTTP/3 listener" in check.stdout and "[  ok] HTTP/3 client certificate" in check.stdout
        assert ("HTTP/2 over TLS 1.3" in check.stdout) == (http == "both"), check.stdout
        prefix = PREFIX[role]
        document = certify_separate(target, base_uri, [f"{prefix}-SANITY-001", f"{prefix}-5.1-TRANSPORT"],
                                    tmp_path / "reports", seed=44)
    verdicts = {result["id"]: result["verdict"] for result in document["results"]}
    for number in H3_CASES[role]:
        assert verdicts[f"{prefix}-5.1-TRANSPORT-{number:03d}"] == "PASSED", verdicts
    for number in HTTP2_PROBES[role]:
        expected = "SKIPPED" if http == "3" else "PASSED"
        assert verdicts[f"{prefix}-5.1-TRANSPORT-{number:03d}"] == expected, verdicts
    assert verdicts[f"{prefix}-SANITY-001"] == "PASSED"
    assert document["run"]["status"] == "PASSED", document["run"]
