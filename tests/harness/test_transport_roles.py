"""A misbehaving router or drafter is judged for what it did first, and a failed exchange is never a refusal.

Against a router whose front answers 200 with bytes that are not CBOR (and never opens a session anywhere),
the sanity case once failed on "no drafter was assigned": the assignment is the second thing such a router
never did. Against a drafter that never answers, the assignment was said to be "refused" (P1-JUDGE-3: a
timeout is never a refusal). Each run here must also not pass (P1-JUDGE-3: its sanity case did not).
"""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import pytest

from sdcp_conformance.harness import router_context
from sdcp_conformance.harness.case import Verdict
from sdcp_conformance.harness.certify import certify
from sdcp_conformance.harness.drafter_setup import write_drafter_target
from sdcp_conformance.harness.iut import Answer
from sdcp_conformance.harness.router_setup import write_router_target
from sdcp_conformance.harness.runner import RUN_INCOMPLETE, RunReport
from sdcp_conformance.harness.target import load_target
from sdcp_conformance.reference.roles import port_of
from sdcp_conformance.testing.misbehaving import MisbehavingConfig, MisbehavingServer, Mode
from sdcp_conformance.transport.failures import Stage
from sdcp_conformance.transport.pki import load_pki

RUN_DEADLINE_S = 120.0


async def _certify(role: str, mode: Mode, folder: Path, sanity: str) -> RunReport:
    writer = write_router_target if role == "router" else write_drafter_target
    _, path = writer(folder)
    target = dataclasses.replace(load_target(path), request_timeout_s=1.0)
    pki = load_pki(target.pki)
    config = MisbehavingConfig(mode, pki.cert(role), pki.key(role), pki.ca_cert, port=port_of(target.base_uri))
    async with MisbehavingServer(config):
        return await asyncio.wait_for(certify(target, selectors=[sanity], seed=3), RUN_DEADLINE_S)


def test_a_front_answering_garbage_fails_on_the_session_open_it_never_sent(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(router_context, "ACT_S", 1.0)
    report = asyncio.run(_certify("router", Mode.GARBAGE_CBOR, tmp_path, "RTR-SANITY-001"))
    assert report.status == RUN_INCOMPLETE
    first = report.results[0]
    assert first.verdict is Verdict.FAILED
    assert "accepted a session-open" in first.message and "not well-formed CBOR" in first.message
    assert "assigned" not in first.message


@pytest.mark.parametrize("mode", [Mode.HANG, Mode.STREAM_RESET])
def test_a_drafter_that_never_answers_did_not_refuse(tmp_path: Path, mode: Mode) -> None:
    report = asyncio.run(_certify("drafter", mode, tmp_path, "DRF-SANITY-001"))
    assert report.status == RUN_INCOMPLETE
    first = report.results[0]
    assert first.verdict is Verdict.FAILED
    assert "was not answered" in first.message and "refused" not in first.message


def test_refused_names_a_refusal_only_when_there_was_an_answer() -> None:
    refusal = Answer(503, b"", None)
    assert refusal.refused() == "was refused (503)"
    timeout = Answer(None, b"", None, stage=Stage.HEADERS_TIMEOUT, failure_detail="no response headers within 1 s")
    assert timeout.refused() == "was not answered (headers timeout: no response headers within 1 s)"


def test_a_front_that_never_answers_leaves_the_run_incomplete(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The front is the profile's (P1-FRONT-1), so its silence is NON-STRICT; but the sanity case stopped there,
    so nothing was tested (D-JUDGE-SANITY, P1-JUDGE-3)."""
    monkeypatch.setattr(router_context, "ACT_S", 1.0)
    report = asyncio.run(_certify("router", Mode.HANG, tmp_path, "RTR-SANITY-001"))
    first = report.results[0]
    assert first.verdict is Verdict.NON_STRICT and not first.completed and "headers timeout" in first.message
    assert report.status == RUN_INCOMPLETE
