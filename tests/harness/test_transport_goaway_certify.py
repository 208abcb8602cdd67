"""A whole certification of the embedded reference behind servers that end every connection gracefully after
100 requests, as hypercorn (``max_requests``) and nginx (``keepalive_requests``) do: 0 failures.

Every server in the process gets the limit: the reference verifier's (so the harness's client towards the IUT
crosses a GOAWAY every 100 requests) and the harness's own cache and router listeners (so the reference
verifier's client crosses them too). RFC 9113 §6.8: the streams a GOAWAY names are still answered; the
harness must neither drop those answers nor call the verifier broken.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from sdcp_conformance.harness.case import Verdict
from sdcp_conformance.harness.certify import certify
from sdcp_conformance.harness.roles.recording import Recorder
from sdcp_conformance.harness.runner import RunReport
from sdcp_conformance.reference.verifier.app import VerifierApp
from sdcp_conformance.testing.misbehaving import MisbehavingServer, Mode
from sdcp_conformance.testing.targets import local_target, misbehaving_config, reference_app
from tests.harness.graceful_goaway import goaway_after

EVERY = 100


@pytest.mark.slow
def test_certification_behind_a_graceful_goaway_every_100_requests_has_no_failure(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    servers = goaway_after(monkeypatch, EVERY)
    report = asyncio.run(certify(seed=100, workdir=tmp_path))

    bad = [(r.case.id, r.run, r.verdict.value, r.message) for r in report.results
           if r.verdict not in (Verdict.PASSED, Verdict.SKIPPED)]
    assert not bad
    assert sum(r.verdict is Verdict.PASSED for r in report.results) > 100
    iut = [s for s in servers if isinstance(s.handler, VerifierApp)]
    cache = [s for s in servers if isinstance(s.handler, Recorder) and s.handler.party == "cache"]
    assert iut and cache
    # Both clients crossed GOAWAYs: the harness's towards the IUT, the reference verifier's towards the cache.
    assert iut[0].stats.graceful_goaways >= 5 and cache[0].stats.graceful_goaways >= 1
    print(f"\nGOAWAY certification: {report.counts()}, GOAWAYs by the IUT's server "
          f"{iut[0].stats.graceful_goaways}, by the harness's cache {cache[0].stats.graceful_goaways}")


KEEPALIVE_EVERY = 40


@pytest.mark.slow
def test_certification_behind_a_keepalive_limit_that_abandons_streams_passes(tmp_path: Path) -> None:
    """hypercorn's keep-alive limit every 40 requests (misbehaving mode ``keepalive-limit``): GOAWAY(NO_ERROR)
    naming a last stream, the streams in flight never answered, later frames answered with GOAWAY(PROTOCOL_ERROR).
    RFC 9113 §6.8 allows it; the harness resends what was lost (P1-JUDGE-6) and the run PASSES, each lost answer
    one INFORMATIONAL finding that says what was resent and how the resend was answered."""

    async def scenario() -> tuple[RunReport, int]:
        target = local_target(tmp_path, models=("bigram", "ctx"))
        async with reference_app(target) as app:
            config = misbehaving_config(target, Mode.KEEPALIVE_LIMIT, app, goaway_every=KEEPALIVE_EVERY)
            async with MisbehavingServer(config) as server:
                status = asyncio.create_task(app.report_status_forever())
                try:
                    report = await certify(target, seed=40)
                finally:
                    status.cancel()
                return report, server.stats.goaways

    report, goaways = asyncio.run(scenario())
    bad = [(r.case.id, r.run, r.verdict.value, r.message) for r in report.results
           if r.verdict not in (Verdict.PASSED, Verdict.SKIPPED, Verdict.INFORMATIONAL)]
    assert not bad
    assert report.status == "PASSED", report.incomplete_reasons()
    assert goaways >= 5
    lost = [finding for result in report.results for finding in result.findings
            if finding.row == "P1-JUDGE-6/LOST-ANSWER"]
    assert lost and all(finding.severity is Verdict.INFORMATIONAL for finding in lost)
    print(f"\nKEEPALIVE certification: {report.counts()}, {goaways} GOAWAYs, {len(lost)} lost answers resent")
