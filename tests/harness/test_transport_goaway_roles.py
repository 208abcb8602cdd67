"""The drafter and router suites against the embedded references behind servers that end every connection
gracefully after two requests: no finding.

Every server in the process gets the limit: the reference drafter's or router's own (so the harness's client
towards the IUT crosses a GOAWAY every other request: assignments, status reports, events, the front) and the
harness's played verifiers, drafters, router and MLC (so the reference's clients cross them too). RFC 9113 §6.8:
a graceful GOAWAY is conformant; a finding here would be the harness's (a retried request taken for a second one,
a proposal answered while an assignment was on its way) or the reference's, never the server's.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import sdcp_conformance.transport.server as server_module
from sdcp_conformance.harness.case import Verdict
from sdcp_conformance.harness.certify import certify
from sdcp_conformance.transport.limits import ServerLimits
from sdcp_conformance.transport.server import H2Server

EVERY = 2


@pytest.mark.slow
@pytest.mark.parametrize("role", ["drafter", "router"])
def test_a_role_suite_behind_a_graceful_goaway_every_two_requests_has_no_finding(
        role: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(server_module, "DEFAULT_LIMITS", ServerLimits(max_requests=EVERY))
    servers: list[H2Server] = []
    start = H2Server.start

    async def recording_start(self: H2Server) -> None:
        servers.append(self)
        await start(self)

    monkeypatch.setattr(H2Server, "start", recording_start)
    report = asyncio.run(certify(seed=7, workdir=tmp_path, role=role))

    found = [(r.case.id, r.run, r.verdict.value, r.message) for r in report.results
             if r.verdict not in (Verdict.PASSED, Verdict.SKIPPED)]
    assert not found
    assert sum(r.verdict is Verdict.PASSED for r in report.results) > 50
    goaways = sorted((s.stats.graceful_goaways for s in servers), reverse=True)
    assert len(goaways) >= 3 and goaways[2] >= 5, goaways  # the IUT's server and the harness's crossed many
    print(f"\nGOAWAY {role} certification: {report.counts()}, graceful GOAWAYs per server {goaways}")
