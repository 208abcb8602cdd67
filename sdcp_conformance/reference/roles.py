"""Start each reference role as a running service: its app, its HTTP/2 server and its links.

One function per role, used by the stack (all roles in one process), by
``sdcp-conformance serve <role>`` (one role per process) and by tests.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from sdcp_conformance.cache.app import CacheApp
from sdcp_conformance.cache.clients import HttpxObjectClient
from sdcp_conformance.cache.store import MemoryStore, SqliteStore
from sdcp_conformance.reference.drafter.app import DrafterApp, DrafterConfig
from sdcp_conformance.reference.drafter.links import ClientRouterLink, ClientVerifierLink, ObjectClientCache
from sdcp_conformance.reference.frontend import RouterFrontend
from sdcp_conformance.reference.links import party_http_client
from sdcp_conformance.reference.router.app import RouterApp
from sdcp_conformance.reference.router.driver import RouterConfig
from sdcp_conformance.reference.router.links import HttpLinks, MlcRouterCache
from sdcp_conformance.reference.scoring import RuntimeDraftModel, RuntimeModel
from sdcp_conformance.reference.verifier.app import VerifierConfig
from sdcp_conformance.reference.verifier.service import PartyTls, VerifierService
from sdcp_conformance.transport.client import SdcpClient, Timeouts
from sdcp_conformance.transport.server import H2Server, ServerConfig
from sdcp_conformance.transport.types import Handler

Closer = Callable[[], Awaitable[None]]


def port_of(base_uri: str) -> int:
    port = urlsplit(base_uri).port
    return 0 if port is None else port


@dataclass
class RunningRole:
    """A served role: stop it with :meth:`stop`, which undoes everything in reverse order."""

    name: str
    base_uri: str
    app: Any
    server: H2Server
    closers: list[Closer] = field(default_factory=list)
    tasks: list[asyncio.Task[None]] = field(default_factory=list)
    quiesce: list[Closer] = field(default_factory=list)
    """Run first: stop the role's own work (drafting loops) before its server goes."""

    async def stop(self) -> None:
        for task in self.tasks:
            task.cancel()
        for task in self.tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for close in self.quiesce:
            with contextlib.suppress(Exception):
                await close()
        await self.server.stop()
        for close in reversed(self.closers):
            with contextlib.suppress(Exception):
                await close()


async def _serve(name: str, base_uri: str, handler: Handler, tls: PartyTls, host: str) -> H2Server:
    server = H2Server(handler, ServerConfig(cert=tls.cert, key=tls.key, ca=tls.ca, host=host, port=port_of(base_uri)))
    await server.start()
    return server


async def start_cache(base_uri: str, tls: PartyTls, *, db: Path | None = None, host: str = "127.0.0.1",
                      enforce_fences: bool = True) -> RunningRole:
    store = SqliteStore(db) if db is not None else MemoryStore()
    app = CacheApp(store, enforce_fences=enforce_fences)
    server = await _serve("cache", base_uri, app, tls, host)

    async def close_store() -> None:
        store.close()

    return RunningRole("cache", base_uri, app, server, [close_store])


async def start_verifier(base_uri: str, tls: PartyTls, model: RuntimeModel | Sequence[RuntimeModel], router_uri: str, *,
                         host: str = "127.0.0.1", pinned_load: int | None = None) -> RunningRole:
    config = VerifierConfig(base_uri=base_uri, routers=frozenset({router_uri}), pinned_load=pinned_load)
    service = await VerifierService.start(config, tls, model, router_uri, host=host, port=port_of(base_uri))
    return RunningRole("verifier", base_uri, service.app, service.server, [service.stop])


def _client_factory(tls: PartyTls, clients: dict[str, SdcpClient], timeouts: Timeouts) -> Callable[[str], SdcpClient]:
    def client_for(base_uri: str) -> SdcpClient:
        if base_uri not in clients:
            clients[base_uri] = SdcpClient(base_uri, tls.cert, tls.key, tls.ca, timeouts=timeouts, max_attempts=1)
        return clients[base_uri]

    return client_for


async def start_drafter(base_uri: str, tls: PartyTls, model: RuntimeModel, routers: Sequence[str], cache_base: str,
                        *, host: str = "127.0.0.1", seed: int | None = None,
                        measured_timing: bool = True) -> RunningRole:
    config = DrafterConfig(base_uri=base_uri, routers=frozenset(routers), cache_base=cache_base, seed=seed,
                           measured_timing=measured_timing)
    http = party_http_client(tls.cert, tls.key, tls.ca)
    clients: dict[str, SdcpClient] = {}
    factory = _client_factory(tls, clients, Timeouts())
    app = DrafterApp(
        config, RuntimeDraftModel(model), ObjectClientCache(HttpxObjectClient(http)),
        ClientVerifierLink(factory), ClientRouterLink(factory),
    )
    server = await _serve("drafter", base_uri, app, tls, host)

    async def close_links() -> None:
        for client in clients.values():
            await client.aclose()
        await http.aclose()

    role = RunningRole("drafter", base_uri, app, server, [close_links], quiesce=[app.close])
    role.tasks.append(asyncio.create_task(app.report_status_forever()))
    return role


async def start_router(base_uri: str, tls: PartyTls, *, cache_base: str, drafters: Mapping[str, bytes],
                       verifiers: Sequence[str], m_init: int = 4, host: str = "127.0.0.1") -> RunningRole:
    config = RouterConfig(base_uri=base_uri, cache_base=cache_base, drafters=dict(drafters), verifiers=list(verifiers),
                          m_init=m_init)
    links = HttpLinks(tls.cert, tls.key, tls.ca)
    http = party_http_client(tls.cert, tls.key, tls.ca)
    app = RouterApp(config, links, links, MlcRouterCache(HttpxObjectClient(http)))
    frontend = RouterFrontend(app)
    server = await _serve("router", base_uri, frontend, tls, host)
    app.start()

    async def close_links() -> None:
        await app.close()
        await links.aclose()
        await http.aclose()

    return RunningRole("router", base_uri, app, server, [close_links])


__all__ = ["RunningRole", "port_of", "start_cache", "start_drafter", "start_router", "start_verifier"]
