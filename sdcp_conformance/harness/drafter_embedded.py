"""The embedded IUT of a drafter certification: the reference drafter, in-process, as ``serve drafter`` runs it.

The app is built by ``app_factory`` when one is given (a mutant of the
reference, :mod:`sdcp_conformance.mutants.drafter_catalogue`), over the
same links the served reference uses: the torch runtime for each draft
model it serves, the MLC over HTTP/2, the verifier and router clients. Only the
proposal timeout and the status ttl are shorter than the served defaults
(:data:`~sdcp_conformance.harness.drafter_environment.EMBEDDED_PROPOSAL_TIMEOUT_S`),
so that a verdict lost by silence is retried within a case.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlsplit

from sdcp_conformance.harness.target import TargetConfig
from sdcp_conformance.transport.pki import Pki
from sdcp_conformance.transport.server import H2Server, ServerConfig


async def start_embedded_drafter(config: TargetConfig, pki: Pki, models: Sequence[str],
                                 app_factory: Callable[..., Any] | None = None, *, reproducible: bool = False
                                 ) -> tuple[Any, H2Server, list[Callable[[], Any]], list[asyncio.Task[None]]]:
    """Start the reference drafter (or ``app_factory``'s) for ``config``, serving ``models`` (D-DRF-20); returns
    (app, server, closers, tasks)."""
    from sdcp_conformance.cache.clients import HttpxObjectClient
    from sdcp_conformance.harness.drafter_environment import EMBEDDED_PROPOSAL_TIMEOUT_S, EMBEDDED_STATUS_TTL_MS
    from sdcp_conformance.reference.drafter.app import DrafterApp, DrafterConfig
    from sdcp_conformance.reference.drafter.links import ClientRouterLink, ClientVerifierLink, ObjectClientCache
    from sdcp_conformance.reference.links import party_http_client
    from sdcp_conformance.reference.scoring import RuntimeDraftModel
    from sdcp_conformance.reference.stack import load_model
    from sdcp_conformance.transport.client import SdcpClient, Timeouts

    # The IUT's own log lines (it stops sessions the cases end) are noise in a certification's console;
    # what it did is in the transcripts.
    logging.getLogger("sdcp_conformance.reference.drafter").setLevel(logging.CRITICAL)
    cert, key, ca = pki.cert("drafter"), pki.key("drafter"), pki.ca_cert
    drafter_config = DrafterConfig(base_uri=config.base_uri, routers=frozenset({config.router}),
                                   cache_base=config.cache, proposal_timeout_s=EMBEDDED_PROPOSAL_TIMEOUT_S,
                                   status_ttl_ms=EMBEDDED_STATUS_TTL_MS, measured_timing=not reproducible,
                                   seed=0 if reproducible else None)
    http = party_http_client(cert, key, ca)
    clients: dict[str, SdcpClient] = {}

    def client_for(base_uri: str) -> SdcpClient:
        if base_uri not in clients:
            clients[base_uri] = SdcpClient(base_uri, cert, key, ca, timeouts=Timeouts(), max_attempts=1)
        return clients[base_uri]

    factory = app_factory or DrafterApp
    runtimes = [RuntimeDraftModel(load_model(model)) for model in models]
    app = factory(drafter_config, runtimes, ObjectClientCache(HttpxObjectClient(http)),
                  ClientVerifierLink(client_for), ClientRouterLink(client_for))
    server = H2Server(app, ServerConfig(cert=cert, key=key, ca=ca, host=urlsplit(config.base_uri).hostname or
                                        "127.0.0.1", port=urlsplit(config.base_uri).port or 443))
    await server.start()

    async def close_links() -> None:
        for client in clients.values():
            await client.aclose()
        await http.aclose()

    return app, server, [close_links], [asyncio.create_task(app.report_status_forever())]


__all__ = ["start_embedded_drafter"]
