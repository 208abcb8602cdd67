"""The router's role spec: around a router under test the harness plays verifiers, drafters, MLC and front client.

With a target file the router runs elsewhere and the harness listens where the
file says; without one the reference router is started in-process as the IUT
(the embedded default), optionally as a named mutant. The played roles are
three verifiers serving the ``bigram`` mock target, three drafters (two of
``bigram-draft-near`` and one of ``bigram-draft-far``, so that a contract can
permit a strict subset of them), the MLC and the P1-FRONT client; everything
they see goes into one :class:`~.roles.router_history.History`.
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.harness.contexts.router import TARGET_MODEL, RouterContext
from sdcp_conformance.harness.environment import RoleEnvironment
from sdcp_conformance.harness.iut import Answer, IutLink
from sdcp_conformance.harness.judging import run_nonce
from sdcp_conformance.harness.role_spec import RoleSpec
from sdcp_conformance.harness.roles.played_drafters import PlayedDrafter
from sdcp_conformance.harness.roles.played_front import CLIENT_IDENTITY, FrontClient
from sdcp_conformance.harness.roles.played_verifier import PlayedVerifier, RouterLinks
from sdcp_conformance.harness.roles.recording import Recorder, current_only
from sdcp_conformance.harness.roles.router_history import History, PutSeen
from sdcp_conformance.harness.roles.router_truth import Facts, FrontSession
from sdcp_conformance.harness.roles.status_reports import StatusReporter
from sdcp_conformance.harness.target import TargetConfig
from sdcp_conformance.models.registry import mock_model
from sdcp_conformance.protocol.messages import ROLE_DRAFTER, ROLE_VERIFIER
from sdcp_conformance.transport.pki import Pki
from sdcp_conformance.transport.types import Handler

if TYPE_CHECKING:
    from sdcp_conformance.harness.case import Case
    from sdcp_conformance.reference.router.service import RouterFactory
    from sdcp_conformance.reference.running import RunningRole

VERIFIER_NAMES = ("verifier-1", "verifier-2", "verifier-3")
DRAFTER_MODELS = (("drafter-1", "bigram-draft-near"), ("drafter-2", "bigram-draft-far"),
                  ("drafter-3", "bigram-draft-near"))
IUT_PARTY = "router"
EMBEDDED_WATCHDOG_S = 0.05
"""The embedded reference router's watchdog interval: small, so failover cases stay short."""


class RouterEnvironment(RoleEnvironment):
    """Everything a router case talks to and through; start with :meth:`start`, end with :meth:`stop`."""

    role = "router"

    def __init__(self, config: TargetConfig, pki: Pki) -> None:
        super().__init__(config, pki)
        self.session_nonce = run_nonce(config.embedded)
        """Mixed into the session IDs the cases choose (D-ID-1: a rerun never meets the last run's sessions)."""
        self.history = History()
        self.cache.history = self.history
        names = {uri: name for name, uri in pki.base_uris.items()}
        self._quiet = IutLink(config.base_uri, config.ca, self.identities(), lambda: None,
                              max_response_bytes=config.max_response_bytes, patience=self.iut.patience,
                              http=config.http)
        self.front = FrontClient(self.iut.send, self.history)
        self.verifiers: dict[str, PlayedVerifier] = {}
        self.drafters: dict[str, PlayedDrafter] = {}
        target = mock_model(TARGET_MODEL).model_sha256
        for uri in config.verifiers:
            name = _named(names, uri, "verifier")
            self.verifiers[name] = PlayedVerifier(name, uri, links=RouterLinks(
                target, self.cache, self.history, self._reporter(name, uri, ROLE_VERIFIER), self._send_event))
        for uri, model in zip(config.drafters, drafter_models(config), strict=True):
            name = _named(names, uri, "drafter")
            self.drafters[name] = PlayedDrafter(
                name, uri, model, mock_model(model).model_sha256, mlc=self.cache, history=self.history,
                status=self._reporter(name, uri, ROLE_DRAFTER), put_lookup=self._latest_put)
        self.fronts: dict[bytes, FrontSession] = {}
        """Every session a case asked the front to open, by id."""
        self.embedded: RunningRole | None = None
        self.embedded_app: Any = None

    # ------------------------------------------------------------------ wiring

    def _reporter(self, name: str, uri: str, role: int) -> StatusReporter:
        return StatusReporter(name, uri, role, self.history, quiet=self._quiet.send, recorded=self.iut.send)

    async def _send_event(self, identity: str, body: dict[str, Any]) -> Answer:
        return await self.iut.send(identity, "POST", "events", body)

    def _latest_put(self, verifier_uri: str, session: bytes) -> PutSeen | None:
        played = next((v for v in self.verifiers.values() if v.uri == verifier_uri), None)
        return played.latest_put(session) if played is not None else None

    @property
    def facts(self) -> Facts:
        return Facts(router=self.config.base_uri, cache_base=self.config.cache,
                     verifiers={name: v.uri for name, v in self.verifiers.items()},
                     drafters={name: d.uri for name, d in self.drafters.items()},
                     drafter_models={name: d.digest for name, d in self.drafters.items()})

    def reporters(self) -> list[StatusReporter]:
        return [*(v.status for v in self.verifiers.values()), *(d.status for d in self.drafters.values())]

    def verifier_at(self, uri: str) -> PlayedVerifier | None:
        return next((v for v in self.verifiers.values() if v.uri == uri), None)

    # ------------------------------------------------------------------ cases

    def capabilities(self) -> set[str]:
        found = super().capabilities() | {f"verifiers:{count}" for count in range(1, len(self.verifiers) + 1)}
        found |= {f"drafters:{count}" for count in range(1, len(self.drafters) + 1)}
        if self.embedded is not None:
            found.add("embedded")
        return found

    def new_context(self, case: Case, seed: int, run: str) -> RouterContext:
        context = RouterContext(self, case, seed, run)
        self.current = context.transcript
        return context

    def reset(self) -> None:
        """Undo what a case switched in the harness (faults, fences, modes); :meth:`prepare` revives instances."""
        self.current = None
        self.cache.reset()
        for verifier in self.verifiers.values():
            verifier.reset()
        for drafter in self.drafters.values():
            drafter.reset()

    async def prepare(self) -> None:
        """Before a case: every instance reports afresh, unloaded, so every case starts from the same state."""
        for reporter in self.reporters():
            reporter.load, reporter.queue, reporter.accept_milli = 0, 0, None
        await asyncio.gather(*(reporter.revive() for reporter in self.reporters()))

    # ------------------------------------------------------------------ lifecycle


    async def ready(self) -> None:
        # together: against a router that never answers, one after another cost a request timeout each
        started = await asyncio.gather(*(reporter.start() for reporter in self.reporters()),
                                       return_exceptions=True)  # all settled before stop()
        for outcome in started:
            if isinstance(outcome, BaseException):
                raise outcome

    async def serve_played(self) -> None:
        handlers: list[tuple[str, str, Handler]] = [("cache", self.config.cache, self.cache)]
        handlers += [(name, v.uri, v) for name, v in self.verifiers.items()]
        handlers += [(name, d.uri, d) for name, d in self.drafters.items()]
        for name, uri, handler in handlers:
            await self.serve(name, uri, Recorder(name, handler, current_only(lambda: self.current)))

    async def start_embedded(self, app_factory: RouterFactory | None, **options: Any) -> None:
        from sdcp_conformance.reference.roles import start_router
        from sdcp_conformance.reference.verifier.service import PartyTls

        tls = PartyTls(self.pki.cert(IUT_PARTY), self.pki.key(IUT_PARTY), self.pki.ca_cert, self.config.http)
        self.embedded = await start_router(
            self.config.base_uri, tls, cache_base=self.config.cache,
            drafters={d.uri: d.digest for d in self.drafters.values()},
            verifiers=[v.uri for v in self.verifiers.values()], watchdog_interval_s=EMBEDDED_WATCHDOG_S,
            app_factory=app_factory)
        self.embedded_app = self.embedded.app

    async def stop_role(self) -> None:
        for reporter in self.reporters():
            await reporter.stop()
        await self._quiet.aclose()

    async def stop_embedded(self) -> None:
        if self.embedded is not None:
            await self.embedded.stop()
            self.embedded = None

    def describe(self) -> dict[str, Any]:
        return {
            "iut": self.config.base_uri, "role": self.config.role, "embedded": self.config.embedded,
            "harness_cache": self.config.cache, "verifiers": list(self.config.verifiers),
            "drafters": {d.uri: d.model for d in self.drafters.values()},
        }


def drafter_models(config: TargetConfig) -> tuple[str, ...]:
    """The mock model of each [harness] drafter (``drafter_models``, P1-RTR-2)."""
    models = config.extra.get("drafter_models")
    if not isinstance(models, list | tuple) or len(models) != len(config.drafters):
        raise InvalidArgument("a router target names one drafter model per drafter ([harness] drafter_models)")
    return tuple(str(model) for model in models)


def _named(names: dict[str, str], uri: str, kind: str) -> str:
    name = names.get(uri)
    if name is None:
        raise InvalidArgument(f"the PKI has no party for the harness's {kind} {uri} (P1-ID-1)")
    return name


def router_target(pki: Pki, uris: Mapping[str, str], source: Path | None = None) -> TargetConfig:
    """The target of a router at ``uris[IUT_PARTY]`` with the harness's parties at theirs."""
    return TargetConfig(
        role="router", base_uri=uris[IUT_PARTY], ca=pki.ca_cert, models=(), pki=pki.directory, cache=uris["cache"],
        drafters=tuple(uris[name] for name, _ in DRAFTER_MODELS),
        verifiers=tuple(uris[name] for name in VERIFIER_NAMES), source=source,
        extra={"drafter_models": [model for _, model in DRAFTER_MODELS]})


def serve_router_command(pki: Pki) -> list[str]:
    """The command that starts the reference router as the IUT of this PKI."""
    uris = pki.base_uris
    words = ["sdcp-conformance", "serve", "router", "--pki", str(pki.directory), "--party", IUT_PARTY,
             "--cache", uris["cache"]]
    for name in VERIFIER_NAMES:
        words += ["--verifier", uris[name]]
    for name, model in DRAFTER_MODELS:
        words += ["--drafter", f"{uris[name]}={model}"]
    return words


def router_instructions(pki: Pki, target_path: Path, serve: list[str]) -> str:
    router = pki.parties[IUT_PARTY]
    uris = pki.base_uris
    verifiers = [f"      {uris[name]}" for name in VERIFIER_NAMES]
    drafters = [f"      {uris[name]}  model {model}, SHA-256 {mock_model(model).model_sha256.hex()}"
                for name, model in DRAFTER_MODELS]
    target = mock_model(TARGET_MODEL)
    permitted = sorted({mock_model(model).model_sha256.hex() for _, model in DRAFTER_MODELS})
    return "\n".join([
        f"Wrote the PKI and {target_path} for a router under test.",
        "",
        "Start the router under test with:",
        f"  trust this CA (clients and servers):  {pki.ca_cert}",
        f"  serve with certificate / key:         {router.cert} / {router.key}",
        f"  listen at its base URI (= URI SAN):   {uris[IUT_PARTY]}",
        "  and offer the test front of PROFILE.md (P1-FRONT-1..3) on that base URI; its client presents",
        f"  the certificate of {uris[CLIENT_IDENTITY]} (any certificate of the CA is a client)",
        f"  the MLC (commit logs, committed_tokens):  {uris['cache']}",
        "  the verifiers (they report status with role 2):",
        *verifiers,
        "  the drafters and their models (P1-RTR-2: the router knows each drafter's model by configuration):",
        *drafters,
        f"  the contracts the front client opens sessions with carry (§4.1): target model {TARGET_MODEL}",
        f"    ({target.path}),",
        f"      target    SHA-256 {target.model_sha256.hex()}",
        f"      tokenizer SHA-256 {target.tokenizer_sha256.hex()}",
        "      drafters  (the permitted draft models, by SHA-256; a case may permit fewer):",
        *(f"        {digest}" for digest in permitted),
        "    (the played verifiers serve that target; the router needs no model of its own, P1-MODEL-1)",
        "",
        "The reference router, for example:",
        f"  {shlex.join(serve)}",
        "",
        "Then certify it:",
        f"  sdcp-conformance certify --target {target_path}",
        "",
    ])


PLAYED = ("cache", CLIENT_IDENTITY, *VERIFIER_NAMES, *(name for name, _ in DRAFTER_MODELS))
"""The parties the harness plays around a router under test (the front client among them)."""

SPEC = RoleSpec("router", IUT_PARTY, PLAYED, router_target, serve_router_command, router_instructions,
                RouterEnvironment)
"""A router under test meets the harness's MLC, three verifiers, three drafters and the P1-FRONT client."""


__all__ = [
    "CLIENT_IDENTITY",
    "DRAFTER_MODELS",
    "IUT_PARTY",
    "PLAYED",
    "SPEC",
    "VERIFIER_NAMES",
    "RouterEnvironment",
    "drafter_models",
    "router_instructions",
    "router_target",
    "serve_router_command",
]
