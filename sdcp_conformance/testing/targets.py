"""Targets for certifying servers started in this process: a misbehaving server, or the reference verifier
behind chosen server limits.

``certify(target)`` then talks to them exactly as to a vendor's verifier: a
target file's worth of configuration, the harness's own listeners, no
embedded shortcuts.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from sdcp_conformance.harness.specs.verifier import SPEC
from sdcp_conformance.harness.target import TargetConfig, render_target
from sdcp_conformance.reference.links import HttpRouterLink, MlcCache, party_http_client
from sdcp_conformance.reference.roles import port_of
from sdcp_conformance.reference.scoring import RuntimeModel
from sdcp_conformance.reference.stack import load_model
from sdcp_conformance.reference.verifier.app import VerifierApp, VerifierConfig
from sdcp_conformance.testing.misbehaving import MisbehavingConfig, Mode
from sdcp_conformance.transport.limits import ServerLimits
from sdcp_conformance.transport.pki import load_pki
from sdcp_conformance.transport.server import H2Server, ServerConfig

_MODELS: dict[str, RuntimeModel] = {}


def cached_model(name: str) -> RuntimeModel:
    """A mock model loaded once per process (the weights do not depend on the event loop)."""
    if name not in _MODELS:
        _MODELS[name] = load_model(name)
    return _MODELS[name]


def local_target(folder: Path, *, models: Sequence[str] = ("bigram",), **options: Any) -> TargetConfig:
    """A PKI and a target on free loopback ports for a verifier this process serves (``options``: e.g.
    ``request_timeout_s``); written to ``folder/target.toml`` so the target is not the embedded one."""
    target = dataclasses.replace(SPEC.embedded_target(folder), models=tuple(models), **options)
    source = folder / "target.toml"
    source.write_text(render_target(target, folder), encoding="utf-8")
    return dataclasses.replace(target, source=source)


@contextlib.asynccontextmanager
async def reference_app(target: TargetConfig, **config: Any) -> AsyncIterator[VerifierApp]:
    """The reference verifier's app for ``target`` (its links reach the harness's cache and router)."""
    pki = load_pki(target.pki)
    http = party_http_client(pki.cert("verifier"), pki.key("verifier"), pki.ca_cert)
    settings = {"output_wait_s": 2.0, "round_wait_s": 20.0, **config}
    app = VerifierApp(VerifierConfig(base_uri=target.base_uri, routers=frozenset({target.router}), **settings),
                      [cached_model(name) for name in target.models], MlcCache(http),
                      HttpRouterLink(http, target.router, target.base_uri))
    try:
        yield app
    finally:
        await app.close()
        await http.aclose()


@contextlib.asynccontextmanager
async def reference_server(target: TargetConfig, limits: ServerLimits, **config: Any) -> AsyncIterator[H2Server]:
    """The reference verifier served at the target's base URI by the project's server with ``limits``."""
    pki = load_pki(target.pki)
    async with reference_app(target, **config) as app:
        server = H2Server(app, ServerConfig(pki.cert("verifier"), pki.key("verifier"), pki.ca_cert,
                                            port=port_of(target.base_uri), limits=limits))
        await server.start()
        try:
            yield server
        finally:
            await server.stop()


def misbehaving_config(target: TargetConfig, mode: Mode, inner: VerifierApp | None, **options: Any
                       ) -> MisbehavingConfig:
    """A misbehaving server at the target's base URI, with the target PKI's verifier (and other-CA) certificate."""
    pki = load_pki(target.pki)
    return MisbehavingConfig(mode, pki.cert("verifier"), pki.key("verifier"), pki.ca_cert,
                             other_cert=pki.wrong_ca.cert, other_key=pki.wrong_ca.key, inner=inner,
                             port=port_of(target.base_uri), **options)


__all__ = ["cached_model", "local_target", "misbehaving_config", "reference_app", "reference_server"]
