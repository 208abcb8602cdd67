"""The reference verifier as a running service: app + listeners + links to the MLC and router."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

from sdcp_conformance.reference.links import HttpRouterLink, MlcCache, party_http_client
from sdcp_conformance.reference.verifier.app import VerifierApp, VerifierConfig
from sdcp_conformance.reference.verifier.ports import TargetModel
from sdcp_conformance.transport.listeners import DEFAULT_HTTP, HttpVersions, Listeners, start_listeners
from sdcp_conformance.transport.origins import H2Origins
from sdcp_conformance.transport.server import ServerConfig


@dataclass(frozen=True)
class PartyTls:
    """A party's certificate, key and the CA it trusts, and the HTTP versions its listeners and peers speak."""

    cert: Path
    key: Path
    ca: Path
    http: HttpVersions = DEFAULT_HTTP


class VerifierService:
    """Serves a :class:`VerifierApp` and reports its status to the router until stopped."""

    def __init__(self, app: VerifierApp, server: Listeners, http: httpx.AsyncClient, origins: H2Origins) -> None:
        self.app = app
        self.server = server
        self._http = http
        self._origins = origins
        self._status: asyncio.Task[None] | None = None

    @classmethod
    async def start(
        cls,
        config: VerifierConfig,
        tls: PartyTls,
        model: TargetModel | Sequence[TargetModel],
        router_uri: str,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        report_status: bool = True,
        app_factory: Callable[..., VerifierApp] | None = None,
    ) -> VerifierService:
        """``app_factory(config, model, cache, router)`` builds the app (a mutant's, for the harness)."""
        http = party_http_client(tls.cert, tls.key, tls.ca, http=tls.http)
        origins = H2Origins(tls.cert, tls.key, tls.ca, http=tls.http)  # the MLC, every round: no httpx layer there
        factory = app_factory or VerifierApp
        app = factory(config, model, MlcCache(origins), HttpRouterLink(http, router_uri, config.base_uri))
        server = await start_listeners(app, ServerConfig(cert=tls.cert, key=tls.key, ca=tls.ca, host=host, port=port),
                                       tls.http)
        service = cls(app, server, http, origins)
        if report_status:
            service._status = asyncio.create_task(app.report_status_forever())
        return service

    async def stop(self) -> None:
        if self._status is not None:
            self._status.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._status
        await self.server.stop()
        await self.app.close()
        await self._http.aclose()
        await self._origins.aclose()


__all__ = ["PartyTls", "VerifierService"]
