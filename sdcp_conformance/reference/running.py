"""A reference role as a running service (its app, its listeners, what stopping it undoes), and serving one.

Shared by :mod:`sdcp_conformance.reference.roles` and the torch-free
:mod:`sdcp_conformance.reference.router.service`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from sdcp_conformance.reference.verifier.service import PartyTls
from sdcp_conformance.transport.listeners import Listeners, start_listeners
from sdcp_conformance.transport.ports import port_of
from sdcp_conformance.transport.server import ServerConfig
from sdcp_conformance.transport.types import Handler

READY_LINE = "serving "
"""What a reference role started as a process (``sdcp-conformance serve ROLE``) prints, followed by its base URI,
once it listens: whoever started it waits for this line (:mod:`sdcp_conformance.testing.children`)."""

Closer = Callable[[], Awaitable[None]]



@dataclass
class RunningRole:
    """A served role: stop it with :meth:`stop`, which undoes everything in reverse order."""

    name: str
    base_uri: str
    app: Any
    server: Listeners
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


async def serve_handler(base_uri: str, handler: Handler, tls: PartyTls, host: str) -> Listeners:
    """Serve ``handler`` at ``base_uri``'s port over the HTTP versions ``tls`` names."""
    config = ServerConfig(cert=tls.cert, key=tls.key, ca=tls.ca, host=host, port=port_of(base_uri))
    return await start_listeners(handler, config, tls.http)



__all__ = ["READY_LINE", "Closer", "RunningRole", "port_of", "serve_handler"]
