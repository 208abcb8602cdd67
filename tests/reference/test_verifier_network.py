"""The reference verifier over real HTTP/2 + TLS 1.3 + mTLS, with the real MLC and a stub router."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from typing import Any

from sdcp_conformance.cache.app import CacheApp
from sdcp_conformance.protocol.chain import extend_digest, prefix_digest
from sdcp_conformance.protocol.codec import decode, decode_sequence, encode
from sdcp_conformance.protocol.contract import digest_of
from sdcp_conformance.protocol.messages import Contract
from sdcp_conformance.reference.verifier.app import VerifierConfig
from sdcp_conformance.reference.verifier.service import PartyTls, VerifierService
from sdcp_conformance.transport.client import SdcpClient
from sdcp_conformance.transport.pki import init_pki
from sdcp_conformance.transport.server import H2Server, ServerConfig
from sdcp_conformance.transport.types import Request, Response
from tests.reference.async_tests import Inbox
from tests.reference.parties import SESSION, SESSION_ID
from tests.reference.test_verifier_app import PROMPT, FakeModel, contract, greedy


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class StubRouter(Inbox[Request]):
    async def __call__(self, request: Request) -> Response:
        self.put(request)
        return Response(204)


def test_verifier_round_over_tls_commits_through_the_mlc_log(tmp_path: Path) -> None:
    uris = {name: f"https://127.0.0.1:{_free_port()}/{name}/" for name in ("router", "verifier", "drafter", "cache")}
    pki = init_pki(tmp_path / "pki", uris)

    def tls(name: str) -> PartyTls:
        return PartyTls(pki.cert(name), pki.key(name), pki.ca_cert)

    def server(name: str, handler: Any) -> H2Server:
        port = int(uris[name].rsplit(":", 1)[1].split("/")[0])
        return H2Server(handler, ServerConfig(cert=pki.cert(name), key=pki.key(name), ca=pki.ca_cert, port=port))

    async def scenario() -> None:
        cache_app, router = CacheApp(), StubRouter()
        cache_server, router_server = server("cache", cache_app), server("router", router)
        await cache_server.start()
        await router_server.start()
        port = int(uris["verifier"].rsplit(":", 1)[1].split("/")[0])
        verifier = await VerifierService.start(
            VerifierConfig(base_uri=uris["verifier"], routers=frozenset({uris["router"]})),
            tls("verifier"), FakeModel(), uris["router"], port=port,
        )
        as_router = SdcpClient(uris["verifier"], pki.cert("router"), pki.key("router"), pki.ca_cert)
        as_drafter = SdcpClient(uris["verifier"], pki.cert("drafter"), pki.key("drafter"), pki.ca_cert)
        try:
            log_uri = uris["cache"] + "logs/s1"
            prompt_uri = uris["cache"] + "prompts/s1"
            await cache_app(Request("PUT", "/cache/prompts/s1", "", (), encode(PROMPT), None))
            body = {"session": SESSION, "epoch": 1, "contract": contract(), "prompt": prompt_uri, "commit_log": log_uri}
            opened = await as_router.send_message("POST", "sessions", body)
            assert opened.status == 201, opened.body
            d0 = prefix_digest(digest_of(Contract.from_obj(contract())), PROMPT)
            assignment = {"session": SESSION, "epoch": 1, "contract": contract(), "verifier": uris["verifier"],
                          "drafter": uris["drafter"], "prompt": PROMPT, "round": 0, "committed": 0,
                          "digest": d0, "m_init": 4}
            assert (await as_router.send_message("PUT", f"sessions/{SESSION_ID}/drafter", assignment)).status == 200
            # The drafter's own certificate is not the router's: it may not assign.
            assert (await as_drafter.send_message("PUT", f"sessions/{SESSION_ID}/drafter", assignment)).status == 403
            tokens = greedy(PROMPT, 3)
            proposal = {"session": SESSION, "epoch": 1, "round": 1, "drafter": uris["drafter"], "base": 0,
                        "base_digest": d0, "tokens": tokens[:2],
                        "status": {"instance": uris["drafter"], "role": 1, "load": 0, "queue": 0, "ttl_ms": 999}}
            # Proposed by the router's certificate: not the assigned drafter (§6.3 step 1).
            refused = await as_router.send_message("POST", "proposals", proposal)
            assert refused.status == 403 and refused.problem is not None
            answered = await as_drafter.send_message("POST", "proposals", proposal)
            assert answered.status == 200
            verdict = decode(answered.body)
            assert verdict["emitted"] == tokens and verdict["digest"] == extend_digest(d0, tokens)
            stored = cache_app.store.get("/cache/logs/s1", now=0.0)
            assert stored is not None
            log = decode_sequence(stored.data)
            assert log == [{"epoch": 1, "round": 1, "emitted": tokens, "committed": 3, "digest": verdict["digest"]}]
            output = await as_drafter.request("GET", f"sessions/{SESSION_ID}/output?from=0")
            assert decode(output.body)["tokens"] == tokens
            await asyncio.wait_for(router.arrived.wait(), 10)  # the status report reached the router
            assert router.received[0].method == "PUT" and router.received[0].path.startswith("/router/instances/")
        finally:
            await as_router.aclose()
            await as_drafter.aclose()
            await verifier.stop()
            await router_server.stop()
            await cache_server.stop()

    asyncio.run(asyncio.wait_for(scenario(), 60))
