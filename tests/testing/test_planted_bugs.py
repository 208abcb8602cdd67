"""Planted bugs in the independent Node.js stand-ins, each judged by the cases that found them, at the level the
draft or the profile gives (``python -m tests.standins.mutants`` runs every planted bug with every case; this runs
the ones whose judgement a change of the harness fixed, with their cases only, so CI keeps them fixed).

Each entry: the stand-in's role, the planted bug (``tests/standins/planted.py``), the cases, and the run's
outcome. A FAILED row shows a blind spot closed (the bug breaks a MUST the suite did not see); a NON-STRICT row a
finding that was FAILED although only the profile decides it (P1-JUDGE-1); PASSED-with-NON-STRICT runs show a
sanity case that completes with a profile finding no longer stopping the run (D-JUDGE-SANITY).

Not here: ``status-interval-equals-ttl``, whose FAILED rests on gaps about 1.5 ms over ttl_ms each (D-JUDGE-D15),
which a loaded machine's arrival jitter may hide; the campaign runs it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.standins import mutants as campaign
from tests.system_binaries import require_program

CASES: list[tuple[str, str, tuple[str, ...], str]] = [
    ("router", "counted-strict-gt", ("RTR-6.9-FAILOVER-005",), "FAILED"),
    ("router", "resume-from-router-state", ("RTR-6.9-FAILOVER-001",), "FAILED"),
    ("router", "tokens-ref-stale-cache", ("RTR-6.1-ASSIGN-003",), "FAILED"),
    ("router", "unknown-kind-as-finish", ("RTR-5.2-UNKNOWN-KIND-001",), "FAILED"),
    ("router", "open-contract-mmax-clamped", ("RTR-6.1-OPEN-001",), "FAILED"),
    ("router", "failover-may-pick-failed", ("RTR-6.9-FAILOVER-006",), "FAILED"),
    ("router", "committed-tokens-omitted", ("RTR-6.1-ASSIGN-003", "RTR-6.9-DRAFTER-001"), "NON-STRICT"),
    ("router", "status-sender-unchecked", ("RTR-P1-RTR-2-STATUS-001",), "NON-STRICT"),
    ("router", "session-id-ignored", ("RTR-6.1-OPEN-002",), "NON-STRICT"),
    ("router", "front-final-no-finish", ("RTR-6.7-FRONT-003",), "NON-STRICT"),
    ("router", "status-id-unchecked", ("RTR-P1-RTR-1-PATH-001",), "NON-STRICT"),
    ("router", "problem-prefix-wrong", ("RTR-6.9-EVENTS-001",), "NON-STRICT"),
    ("router", "failures-not-reset", ("RTR-P1-RTR-5-INTERMITTENT-001",), "NON-STRICT"),
    ("router", "resume-digest-unchecked", ("RTR-P1-RTR-6-DIGEST-001",), "NON-STRICT"),
    ("router", "front-no-minepoch-check", ("RTR-6.9-PARTITION-002",), "FAILED"),
    ("drafter", "argmax-ties-to-larger", ("DRF-6.3-DISCARD-001", "DRF-6.2-OUTSTANDING-002"), "NON-STRICT"),
    ("drafter", "equal-epoch-refused", ("DRF-P1-DRF-7-003", "DRF-6.5.2-SWITCH-002"), "NON-STRICT"),
    ("drafter", "429-is-final", ("DRF-6.9-LOST-002",), "NON-STRICT"),
    ("drafter", "retry-window-2500ms", ("DRF-P1-DRF-5-OUTAGE-001",), "NON-STRICT"),
    ("drafter", "drafters-first-entry-only", ("DRF-P1-DRF-3-003",), "NON-STRICT"),
    ("drafter", "replaced-loop-keeps-running", ("DRF-P1-DRF-7-003",), "FAILED"),
    ("drafter", "m-cap-only-on-reduce", ("DRF-6.2-LIMIT-001",), "FAILED"),
    ("drafter", "timeout-redrafts", ("DRF-6.9-LOST-003", "DRF-6.9-LOST-006"), "FAILED"),
    ("drafter", "committed-tokens-trusted", ("DRF-6.9-NEW-DRAFTER-002",), "FAILED"),
    ("drafter", "drafts-from-prompt-only", ("DRF-6.3-DISCARD-002", "DRF-6.2-OUTSTANDING-002"), "NON-STRICT"),
    ("drafter", "stale-base-final", ("DRF-5.2-UNKNOWN-KEYS-003",), "NON-STRICT"),
    ("drafter", "prompt-token-v-accepted", ("DRF-P1-MSG-2-VOCAB-001",), "NON-STRICT"),
    ("router", "front-final-before-tokens", ("RTR-6.5.2-END-001",), "FAILED"),
    ("verifier", "assignment-body-session-unchecked", ("VER-5.1-SESSION-015",), "NON-STRICT"),
    ("verifier", "assignment-leaves-self-decoding-on", ("VER-6.5-ESC-020",), "NON-STRICT"),
    ("verifier", "identity-includes-status", ("VER-6.3-IDEMPOTENCY-003",), "NON-STRICT"),
    ("verifier", "policy-sampling-closed", ("VER-6.6-POLICY-007",), "FAILED"),
    ("verifier", "fence-of-own-epoch-fences", ("VER-6.9-RESUME-002",), "FAILED"),
    ("verifier", "output-timeout-from-zero", ("VER-6.7-OUTPUT-004",), "FAILED"),
    ("verifier", "event-epoch-one", ("VER-6.9-RESUME-008",), "FAILED"),
    ("verifier", "self-decode-end-event-kind-2", ("VER-6.5-ESC-008",), "NON-STRICT"),
    ("verifier", "first-append-unconditional", ("VER-6.8-FENCING-104",), "FAILED"),
    ("verifier", "rule-3-accepted", ("VER-4.1-CONTRACT-026",), "FAILED"),
    ("router", "contract-error-bad-message", ("RTR-6.1-CANNOT-SERVE-003",), "FAILED"),
    ("router", "waiting-sessions-never-assigned", ("RTR-6.1-EXPIRED-004",), "FAILED"),
    ("router", "front-epoch-always-1", ("RTR-6.9-PARTITION-001",), "NON-STRICT"),
    ("router", "rt2-sampling-merged", ("RTR-6.6-POLICY-003",), "FAILED"),
    ("router", "rt2-first-422-final", ("RTR-6.1-CANNOT-SERVE-004",), "NON-STRICT"),
    ("drafter", "status-instance-without-slash", ("DRF-6.2-OUTSTANDING-001",), "NON-STRICT"),
]


@pytest.fixture(scope="module")
def targets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    require_program("node")  # every planted bug runs in a copy of a Node.js stand-in
    require_program("npm")
    folder = tmp_path_factory.mktemp("planted")
    return {role: campaign.ROLES[role].target(folder / f"pki-{role}")[0] for role in ("router", "drafter", "verifier")}


@pytest.mark.slow
@pytest.mark.parametrize(("role", "name", "cases", "expected"), CASES, ids=[f"{r}:{n}" for r, n, _, _ in CASES])
def test_a_planted_bug_is_judged_by_its_cases_at_its_level(
        role: str, name: str, cases: tuple[str, ...], expected: str, targets: dict[str, Path], tmp_path: Path) -> None:
    assert campaign.PLANTED[role][name].expected in (expected, "INCOMPLETE")  # the campaign's own expectation agrees
    report, status = campaign.certify_planted(role, name, targets[role], tmp_path, seed=5,
                                              select=[word for case in cases for word in ("--only", case)])
    assert report is not None, f"no report (exit {status})"
    judged = {result["id"]: result["verdict"] for result in report["results"] if result["run"] == "main"}
    assert set(judged) == set(cases)
    assert campaign.outcome(report) == expected, judged
    assert any(verdict == expected for verdict in judged.values()), judged  # one of its cases says so itself
    row = campaign.PLANTED[role][name].row
    if row:  # and for the bug's own reason
        assert row in campaign.failed_rows(report, expected), (row, judged)


def test_every_planted_line_occurs_once_in_its_standin() -> None:
    for role, bugs in campaign.PLANTED.items():
        source = campaign.ROLES[role].source
        for name, planted in bugs.items():
            assert (source / planted.file).read_text(encoding="utf-8").count(planted.line) == 1, f"{role}:{name}"
