"""Fixtures for transport tests: one test PKI per session and servers stopped at teardown."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from sdcp_conformance.transport.client import SdcpClient, Timeouts, TransportFailure
from sdcp_conformance.transport.h2client import H2Client
from sdcp_conformance.transport.limits import ServerLimits
from sdcp_conformance.transport.pki import Pki, init_pki
from sdcp_conformance.transport.server import RunningServer, ServerConfig, run_server_in_thread
from sdcp_conformance.transport.types import Handler, Request, Response

PARTIES = {
    "verifier": "https://127.0.0.1:9001/verifier/",
    "drafter-1": "https://127.0.0.1:9002/drafter-1/",
    "router": "https://127.0.0.1:9003/router/",
}


T = TypeVar("T")
ClientT = TypeVar("ClientT", SdcpClient, H2Client)
SHORT = Timeouts(connect=5, read=5, write=5, total=10)


def run(factory: Callable[[], Awaitable[T]]) -> T:
    return asyncio.run(asyncio.wait_for(factory(), timeout=30))


def drafter_client(cls: type[ClientT], pki: Pki, base_uri: str, pair: tuple[Any, Any] | None = None,
                   **kw: Any) -> ClientT:
    """A ``cls`` client of ``base_uri`` authenticated as drafter-1 (or with ``pair``), :data:`SHORT` by default."""
    cert, key = pair or (pki.cert("drafter-1"), pki.key("drafter-1"))
    kw.setdefault("timeouts", SHORT)
    return cls(base_uri, cert, key, pki.ca_cert, **kw)


def request_failure(make: Callable[[], H2Client], method: str, path: str, body: bytes | None = None
                    ) -> TransportFailure:
    """The :class:`TransportFailure` one request on a fresh client from ``make`` raises (the test fails if none)."""

    async def go() -> None:
        async with make() as client:
            await client.request(method, path, body)

    with pytest.raises(TransportFailure) as caught:
        run(go)
    return caught.value


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return init_pki(tmp_path_factory.mktemp("pki"), PARTIES, subject="drafter-1")


async def echo_identity(request: Request) -> Response:
    """Answers with the authenticated identity and the body length, so tests can check both."""
    identity = request.peer_identity or "<none>"
    text = f"{identity}|{request.method}|{request.path}|{request.query}|{len(request.body)}"
    return Response(200, text.encode(), [("content-type", "text/plain")])


StartServer = Callable[..., RunningServer]


@pytest.fixture
def start_server(pki: Pki) -> Iterator[StartServer]:
    """Start servers as the verifier; every one is stopped when the test ends.

    Keywords naming a :class:`ServerLimits` member set that limit; the others go to :class:`ServerConfig`.
    """
    with contextlib.ExitStack() as stack:

        def start(handler: Handler = echo_identity, **options: Any) -> RunningServer:
            names = {member.name for member in dataclasses.fields(ServerLimits)}
            limits = ServerLimits(**{name: options.pop(name) for name in list(options) if name in names})
            config = ServerConfig(pki.cert("verifier"), pki.key("verifier"), pki.ca_cert, limits=limits, **options)
            return stack.enter_context(run_server_in_thread(handler, config))

        yield start


REFUSED_CERTIFICATES = ("no-certificate", "wrong-ca", "expired")
"""Client certificates a server refuses at the handshake: none, one of another CA, an expired one."""


def handshake_material(pki: Pki, case: str) -> tuple[Path | None, Path | None]:
    """The client certificate and key of a :data:`REFUSED_CERTIFICATES` case, or drafter-1's for "tls-1.2-only"."""
    return {
        "no-certificate": (None, None),
        "wrong-ca": (pki.wrong_ca.cert, pki.wrong_ca.key),
        "expired": (pki.expired.cert, pki.expired.key),
        "tls-1.2-only": (pki.cert("drafter-1"), pki.key("drafter-1")),
    }[case]


def party_files(pki: Pki, name: str) -> tuple[Path, Path]:
    return pki.cert(name), pki.key(name)
