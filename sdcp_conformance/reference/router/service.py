"""Start the reference router as a running service: its app behind the test front, its server, its links.

Kept apart from :mod:`sdcp_conformance.reference.roles` (which also starts the
model-serving roles) so that starting a router, as the router suite's embedded
IUT does, imports no model runtime.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from sdcp_conformance.cache.clients import HttpxObjectClient
from sdcp_conformance.reference.frontend import RouterFrontend
from sdcp_conformance.reference.links import party_http_client
from sdcp_conformance.reference.router.app import RouterApp
from sdcp_conformance.reference.router.driver import RouterConfig
from sdcp_conformance.reference.router.links import HttpLinks, MlcRouterCache
from sdcp_conformance.reference.router.ports import RouterCache
from sdcp_conformance.reference.running import RunningRole, serve_handler
from sdcp_conformance.reference.verifier.service import PartyTls

RouterFactory = Callable[[RouterConfig, HttpLinks, RouterCache], RouterFrontend]
"""Builds a router and its test front from its configuration, links and MLC port (a mutant's, say)."""


def reference_router(config: RouterConfig, links: HttpLinks, cache: RouterCache) -> RouterFrontend:
    """The reference router behind its test front (P1-FRONT-1..3)."""
    return RouterFrontend(RouterApp(config, links, links, cache))


async def start_router(base_uri: str, tls: PartyTls, *, cache_base: str, drafters: Mapping[str, bytes],
                       verifiers: Sequence[str], m_init: int = 4, host: str = "127.0.0.1",
                       watchdog_interval_s: float = 0.2, app_factory: RouterFactory | None = None) -> RunningRole:
    config = RouterConfig(base_uri=base_uri, cache_base=cache_base, drafters=dict(drafters), verifiers=list(verifiers),
                          m_init=m_init, watchdog_interval_s=watchdog_interval_s)
    links = HttpLinks(tls.cert, tls.key, tls.ca, http=tls.http)
    http = party_http_client(tls.cert, tls.key, tls.ca, http=tls.http)
    frontend = (app_factory or reference_router)(config, links, MlcRouterCache(HttpxObjectClient(http)))
    app = frontend.router
    server = await serve_handler(base_uri, frontend, tls, host)
    app.start()

    async def close_links() -> None:
        await app.close()
        await links.aclose()
        await http.aclose()

    return RunningRole("router", base_uri, app, server, [close_links])



__all__ = ["RouterFactory", "reference_router", "start_router"]
