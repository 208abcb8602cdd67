"""Fixtures for transport tests: one test PKI per session and servers stopped at teardown."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from sdcp_conformance.transport.limits import ServerLimits
from sdcp_conformance.transport.pki import Pki, init_pki
from sdcp_conformance.transport.server import RunningServer, ServerConfig, run_server_in_thread
from sdcp_conformance.transport.types import Handler, Request, Response

PARTIES = {
    "verifier": "https://127.0.0.1:9001/verifier/",
    "drafter-1": "https://127.0.0.1:9002/drafter-1/",
    "router": "https://127.0.0.1:9003/router/",
}


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


def party_files(pki: Pki, name: str) -> tuple[Path, Path]:
    return pki.cert(name), pki.key(name)
