"""Start each reference role as a running service: its app, its HTTP/2 server and its links.

One function per role, used by the stack (all roles in one process), by
``sdcp-conformance serve <role>`` (one role per process) and by tests.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path

from sdcp_conformance.cache.app import CacheApp
from sdcp_conformance.cache.clients import HttpxObjectClient
from sdcp_conformance.cache.store import MemoryStore, SqliteStore
from sdcp_conformance.reference.drafter.app import DrafterApp, DrafterConfig
from sdcp_conformance.reference.drafter.links import ClientRouterLink, ClientVerifierLink, ObjectClientCache
from sdcp_conformance.reference.links import party_http_client
from sdcp_conformance.reference.router.service import RouterFactory, reference_router, start_router
from sdcp_conformance.reference.running import RunningRole, port_of, serve_handler
from sdcp_conformance.reference.scoring import RuntimeDraftModel, RuntimeModel
from sdcp_conformance.reference.verifier.app import VerifierApp, VerifierConfig
from sdcp_conformance.reference.verifier.service import PartyTls, VerifierService
from sdcp_conformance.transport.client import SdcpClient, Timeouts, sdcp_client


async def start_cache(base_uri: str, tls: PartyTls, *, db: Path | None = None, host: str = "127.0.0.1",
                      enforce_fences: bool = True) -> RunningRole:
    store = SqliteStore(db) if db is not None else MemoryStore()
    app = CacheApp(store, enforce_fences=enforce_fences)
    server = await serve_handler(base_uri, app, tls, host)

    async def close_store() -> None:
        store.close()

    return RunningRole("cache", base_uri, app, server, [close_store])


async def start_verifier(base_uri: str, tls: PartyTls, model: RuntimeModel | Sequence[RuntimeModel], router_uri: str, *,
                         host: str = "127.0.0.1", pinned_load: int | None = None,
                         app_factory: Callable[..., VerifierApp] | None = None,
                         load_hook: bool = False, output_wait_s: float = VerifierConfig.output_wait_s,
                         round_wait_s: float = VerifierConfig.round_wait_s) -> RunningRole:
    """The reference verifier (or ``app_factory``'s app: a mutant's) as a running role; ``load_hook`` offers the
    router's identity ``PUT {base}test-control/load`` (:data:`~.verifier.app.LOAD_HOOK_PATH`); ``output_wait_s`` and
    ``round_wait_s`` are :class:`~.verifier.app.VerifierConfig`'s."""
    config = VerifierConfig(base_uri=base_uri, routers=frozenset({router_uri}), pinned_load=pinned_load,
                            load_hook=load_hook, output_wait_s=output_wait_s,
                            round_wait_s=round_wait_s)
    service = await VerifierService.start(config, tls, model, router_uri, host=host, port=port_of(base_uri),
                                          app_factory=app_factory)
    return RunningRole("verifier", base_uri, service.app, service.server, [service.stop])


def _client_factory(tls: PartyTls, clients: dict[str, SdcpClient], timeouts: Timeouts) -> Callable[[str], SdcpClient]:
    def client_for(base_uri: str) -> SdcpClient:
        if base_uri not in clients:
            clients[base_uri] = sdcp_client(tls.http, base_uri, tls.cert, tls.key, tls.ca, timeouts=timeouts,
                                            max_attempts=1)
        return clients[base_uri]

    return client_for


async def start_drafter(base_uri: str, tls: PartyTls, model: RuntimeModel | Sequence[RuntimeModel],
                        routers: Sequence[str], cache_base: str,
                        *, host: str = "127.0.0.1", seed: int | None = None,
                        measured_timing: bool = True,
                        app_factory: Callable[..., DrafterApp] | None = None,
                        proposal_timeout_s: float | None = None, status_ttl_ms: int | None = None) -> RunningRole:
    """The reference drafter (or ``app_factory``'s app: a mutant's) as a running role, reporting its status; it
    serves every model given (D-DRF-20). ``proposal_timeout_s`` and ``status_ttl_ms``, when given, replace the
    served defaults (the embedded IUT of a drafter certification shortens both, so that a verdict lost by silence
    is retried within a case)."""
    config = DrafterConfig(base_uri=base_uri, routers=frozenset(routers), cache_base=cache_base, seed=seed,
                           measured_timing=measured_timing)
    if proposal_timeout_s is not None:
        config = dataclasses.replace(config, proposal_timeout_s=proposal_timeout_s)
    if status_ttl_ms is not None:
        config = dataclasses.replace(config, status_ttl_ms=status_ttl_ms)
    http = party_http_client(tls.cert, tls.key, tls.ca, http=tls.http)
    clients: dict[str, SdcpClient] = {}
    factory = _client_factory(tls, clients, Timeouts())
    app = (app_factory or DrafterApp)(
        config, [RuntimeDraftModel(one) for one in (model if isinstance(model, Sequence) else [model])],
        ObjectClientCache(HttpxObjectClient(http)),
        ClientVerifierLink(factory), ClientRouterLink(factory),
    )
    server = await serve_handler(base_uri, app, tls, host)

    async def close_links() -> None:
        for client in clients.values():
            await client.aclose()
        await http.aclose()

    role = RunningRole("drafter", base_uri, app, server, [close_links], quiesce=[app.close])
    role.tasks.append(asyncio.create_task(app.report_status_forever()))
    return role


__all__ = ["RouterFactory", "RunningRole", "port_of", "reference_router", "start_cache", "start_drafter",
           "start_router", "start_verifier"]
