"""The harness's played verifiers and drafters announce themselves to the router under test together.

One after another, each first status report waited for the last one's answer: against a router that never
answers, the run's start cost a request timeout per played instance before the first case. Here the router
answers no status report until every played instance has sent its first one, so reports sent one after another
would time out (the first waits on the others), while reports sent together are all answered.
"""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

from sdcp_conformance.harness.role_spec import spec_of
from sdcp_conformance.harness.specs.router import RouterEnvironment
from sdcp_conformance.harness.target import load_target
from sdcp_conformance.reference.roles import port_of
from sdcp_conformance.transport.pki import load_pki
from sdcp_conformance.transport.server import H2Server, ServerConfig
from sdcp_conformance.transport.types import Request, Response

HOLD_S = 2.5
"""How long the router holds an instance's first report for the others: longer than reports sent together take to
arrive, shorter than the two request timeouts (1 s each) reports sent one after another would take."""


def test_the_first_status_reports_are_sent_together(tmp_path: Path) -> None:
    _, path, _ = spec_of("router").iut_setup(tmp_path, {})
    target = dataclasses.replace(load_target(path), request_timeout_s=1.0)
    expected = len(target.verifiers) + len(target.drafters)
    pki = load_pki(target.pki)

    async def go() -> dict[str, bool]:
        together: dict[str, bool] = {}  # instance path → whether its first report met every other's first report
        everyone = asyncio.Event()

        async def router(request: Request) -> Response:
            if request.method != "PUT":
                return Response(404)
            if request.path in together:
                return Response(204)  # a heartbeat
            together[request.path] = False
            if len(together) == expected:
                everyone.set()
            try:
                await asyncio.wait_for(everyone.wait(), HOLD_S)
            except TimeoutError:
                return Response(503)
            together[request.path] = True
            return Response(204)

        server = H2Server(router, ServerConfig(pki.cert("router"), pki.key("router"), pki.ca_cert,
                                               port=port_of(target.base_uri)))
        await server.start()
        try:
            environment = await asyncio.wait_for(RouterEnvironment.start(target), 60)
            await environment.stop()
        finally:
            await server.stop()
        return together

    together = asyncio.run(go())
    assert len(together) == expected and all(together.values()), together
