"""One party's listeners: HTTP/2 on TCP, HTTP/3 on UDP, or both on the same port number (§5.1).

§5.1: "HTTP/2 [RFC9113] or HTTP/3 [RFC9114] over TLS 1.3 [RFC8446] with mutual certificate authentication is
REQUIRED." A target says which its parties speak (``http = "2" | "3" | "both"``); every listener the harness or
the reference stack opens goes through :class:`Listeners`, and every client through :func:`client_for`, so the
choice is made in these two places only.

D-JUDGE-HTTP-1: under ``both`` the two listeners share the port number of the party's base URI, TCP for HTTP/2 and UDP
for HTTP/3 (an ``https`` URI names one port for both, RFC 9114 §3.1), and clients of such a party speak HTTP/2:
the HTTP/3 listener of an IUT serving ``both`` is reached by the transport cases that check each listener.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Literal, Protocol, cast

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.transport.h2client import H2Client
from sdcp_conformance.transport.server import H2Server, RefusedConnection, ServerConfig
from sdcp_conformance.transport.types import Handler

HttpVersions = Literal["2", "3", "both"]
HTTP_VERSIONS: tuple[HttpVersions, ...] = ("2", "3", "both")
DEFAULT_HTTP: HttpVersions = "2"


def http_versions(value: object, where: str = "http") -> HttpVersions:
    """``value`` read as a target's ``http`` member; a one-line error naming ``where`` otherwise."""
    text = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
    if text not in HTTP_VERSIONS:
        raise InvalidArgument(f"{where} must be one of \"2\", \"3\" or \"both\" (HTTP/2, HTTP/3, or both on one "
                              f"port), not {value!r}")
    return text  # checked against HTTP_VERSIONS above (mypy narrows by the `in`)


def speaks_h2(http: HttpVersions) -> bool:
    return http in ("2", "both")


def speaks_h3(http: HttpVersions) -> bool:
    return http in ("3", "both")


class PartyServer(Protocol):
    """What :class:`~.server.H2Server` and :class:`~.h3_server.H3Server` both offer."""

    config: ServerConfig

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    @property
    def port(self) -> int: ...

    @property
    def base_uri(self) -> str: ...

    def refused_since(self, since: float) -> list[RefusedConnection]: ...


class Listeners:
    """The listeners of one party, started and stopped together; ``port`` and ``base_uri`` as one server's."""

    def __init__(self, handler: Handler, config: ServerConfig, http: HttpVersions = DEFAULT_HTTP) -> None:
        self.handler = handler
        self.config = config
        self.http = http
        self.servers: list[PartyServer] = []

    async def start(self) -> None:
        config = self.config
        try:
            if speaks_h2(self.http):
                h2 = H2Server(self.handler, config)
                await h2.start()
                self.servers.append(h2)
                config = dataclasses.replace(config, port=h2.port)  # HTTP/3 beside it on the same number
            if speaks_h3(self.http):
                from sdcp_conformance.transport.h3_server import H3Server  # aioquic only where HTTP/3 is spoken

                h3 = H3Server(self.handler, config)
                await h3.start()
                self.servers.append(h3)
        except BaseException:
            await self.stop()
            raise

    async def stop(self) -> None:
        servers, self.servers = self.servers, []
        for server in servers:
            await server.stop()

    @property
    def port(self) -> int:
        if not self.servers:
            raise InvalidArgument("the listeners are not started")
        return self.servers[0].port

    @property
    def base_uri(self) -> str:
        if not self.servers:
            raise InvalidArgument("the listeners are not started")
        return self.servers[0].base_uri

    def refused_since(self, since: float) -> list[RefusedConnection]:
        return sorted((refusal for server in self.servers for refusal in server.refused_since(since)),
                      key=lambda refusal: refusal.at)


async def start_listeners(handler: Handler, config: ServerConfig, http: HttpVersions = DEFAULT_HTTP) -> Listeners:
    listeners = Listeners(handler, config, http)
    await listeners.start()
    return listeners


def client_class(http: HttpVersions) -> Any:
    """The client class for a party serving ``http``: HTTP/3 only where it serves nothing else (D-JUDGE-HTTP-1)."""
    if http == "3":
        from sdcp_conformance.transport.h3_client import H3Client

        return H3Client
    return H2Client


def client_for(http: HttpVersions, base_uri: str, cert: Path | None, key: Path | None, ca: Path,
               **options: Any) -> H2Client:
    """A client of ``base_uri`` speaking what a party serving ``http`` answers (typed as the HTTP/2 client, whose
    interface the HTTP/3 one offers)."""
    return cast(H2Client, client_class(http)(base_uri, cert, key, ca, **options))


__all__ = ["DEFAULT_HTTP", "HTTP_VERSIONS", "HttpVersions", "Listeners", "PartyServer", "client_class",
           "client_for", "http_versions", "speaks_h2", "speaks_h3", "start_listeners"]
