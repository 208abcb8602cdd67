"""The harness's side of a drafter certification: the router, verifiers and cache it plays, and the IUT.

With a target file the drafter runs elsewhere and the harness listens where
the file's [harness] table says (its router, its MLC, its verifiers); without
one the reference drafter is started in-process on the shipped draft models
(:data:`DRAFT_MODELS`), as ``sdcp-conformance serve drafter`` would run it (or a mutant of it,
through ``app_factory``). The drafter reaches every played role over HTTP/2
with mutual TLS, exactly as it would reach real ones.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from sdcp_conformance.cache.app import CacheApp
from sdcp_conformance.harness.iut import Identity, IutLink
from sdcp_conformance.harness.patience import Patience
from sdcp_conformance.harness.roles.played_cache import CacheObserver
from sdcp_conformance.harness.roles.played_router import StatusInbox
from sdcp_conformance.harness.roles.played_verifier import Pace, PlayedVerifier, VerifierBoard
from sdcp_conformance.harness.roles.proposal_checks import DrafterFacts
from sdcp_conformance.harness.target import TargetConfig
from sdcp_conformance.harness.transcript import CaseTranscript
from sdcp_conformance.models.registry import mock_model
from sdcp_conformance.transport.pki import Pki, init_pki, load_pki
from sdcp_conformance.transport.server import H2Server, ServerConfig
from sdcp_conformance.transport.types import Handler

if TYPE_CHECKING:
    from sdcp_conformance.harness.case import Case
    from sdcp_conformance.harness.drafter_context import DrafterContext

IUT_PARTY = "drafter"
VERIFIER_PARTIES = ("verifier-1", "verifier-2")
HARNESS_PARTIES = ("router", "cache", *VERIFIER_PARTIES)
DRAFT_MODEL = "bigram-draft-near"
"""The shipped draft model the suite's cases use (its target is ``bigram``; both have closed forms)."""
CTX_DRAFT_MODEL = "ctx-draft-near"
"""The context-dependent draft model (target ``ctx``) of the cases whose observation depends on more than the last
token (``requires=("model:ctx-draft-near",)``): what a drafter keeps in its context beyond the committed prefix."""
DRAFT_MODELS = (DRAFT_MODEL, CTX_DRAFT_MODEL)
"""The draft models a drafter under test serves: the embedded reference's, and what ``pki init --iut drafter``
asks for (D-DRF-20: one drafter, several models)."""
EMBEDDED_PROPOSAL_TIMEOUT_S = 2.0
"""The embedded reference drafter's proposal timeout: short, so that a verdict lost by silence is retried
within a case (P1-DRF-5 "timeout"); a target file says its drafter's with [harness] proposal_timeout_s."""
EMBEDDED_STATUS_TTL_MS = 3000
BIND_ATTEMPTS = 3
MAX_TIMEOUT_CASE_S = 10.0
"""A lost-by-silence case runs only when the drafter's proposal timeout is known and at most this long."""

DrafterAppFactory = Callable[..., Any]
"""Builds the embedded IUT: ``factory(config, model, cache, verifier, router)`` → a drafter app (a mutant's)."""


@dataclass
class _Embedded:
    app: Any
    server: H2Server
    closers: list[Callable[[], Any]] = field(default_factory=list)
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    async def stop(self) -> None:
        for task in self.tasks:
            task.cancel()
        for task in self.tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        with contextlib.suppress(Exception):
            await self.app.close()
        await self.server.stop()
        for close in self.closers:
            with contextlib.suppress(Exception):
                await close()


class DrafterEnvironment:
    """Everything a drafter case talks to and through; :meth:`start` it, :meth:`stop` it."""

    def __init__(self, config: TargetConfig, pki: Pki) -> None:
        self.config = config
        self.pki = pki
        self.current: CaseTranscript | None = None
        self.context: DrafterContext | None = None
        self.cache = CacheApp()
        self.cache_observer = CacheObserver(self.cache, lambda: self.current)
        self.inbox = StatusInbox(lambda: self.current)
        self.board = VerifierBoard(self.facts, transcript=lambda: self.current)
        self.servers: list[H2Server] = []
        self.embedded: _Embedded | None = None
        self.draft_model = DRAFT_MODEL if DRAFT_MODEL in config.models else config.models[0]
        self.target_model = mock_model(self.draft_model).drafts_for or "bigram"
        timeout = config.extra.get("proposal_timeout_s")
        self.proposal_timeout_s: float | None = float(timeout) if timeout is not None else None
        self.iut = IutLink(config.base_uri, config.ca, self._identities(), lambda: self.current,
                           request_timeout_s=config.request_timeout_s, output_timeout_s=config.output_timeout_s,
                           max_response_bytes=config.max_response_bytes)
        self._tempdir: tempfile.TemporaryDirectory[str] | None = None

    def _identities(self) -> dict[str, Identity]:
        pki = self.pki
        identities = {name: Identity(name, pki.cert(name), pki.key(name)) for name in pki.parties}
        identities["no-cert"] = Identity("no-cert", None, None)
        identities["wrong-ca"] = Identity("wrong-ca", pki.wrong_ca.cert, pki.wrong_ca.key)
        identities["expired"] = Identity("expired", pki.expired.cert, pki.expired.key)
        return identities

    # ------------------------------------------------------------------ what cases use

    def now(self) -> float:
        return asyncio.get_running_loop().time()

    def put(self, uri: str, data: bytes) -> None:
        """Store an object in the harness's MLC directly (as the router would have written it)."""
        self.cache.store.put(urlsplit(uri).path, data, lease_ms=None, now=0.0)

    def facts(self) -> DrafterFacts:
        """What the played verifier checks proposals against: the draft model of the case running now."""
        draft = self.context.draft_model if self.context is not None else self.draft_model
        target = mock_model(draft).drafts_for or "bigram"
        return DrafterFacts(self.config.base_uri, mock_model(target).vocab_size, draft,
                            self.proposal_timeout_s, self.cache_observer.of,
                            lambda uri: self.cache_observer.stored(uri, self.cache_clock()))

    def cache_clock(self) -> float:
        import time

        return time.time()  # the clock the cache measures leases with (CacheApp's default)

    @property
    def pace(self) -> Pace:
        return self.board.pace

    @property
    def patience(self) -> Patience:
        """The deadlines of this certification's requests to the IUT (P1-JUDGE-5; the runner scales them)."""
        return self.iut.patience

    def capabilities(self) -> set[str]:
        found = {f"model:{model}" for model in self.config.models}
        timeout = self.proposal_timeout_s
        if timeout is not None and timeout <= MAX_TIMEOUT_CASE_S:
            found.add("timeout:proposal")
        return found

    def new_context(self, case: Case, seed: int, run: str) -> DrafterContext:
        from sdcp_conformance.harness.drafter_context import DrafterContext

        context = DrafterContext(self, case, seed, run)
        self.current, self.context = context.transcript, context
        return context

    def reset(self) -> None:
        """End of a case: judge what it left untaken, close its sessions, let every fault and hold go."""
        if self.context is not None:
            self.context.settle()
        self.board.close_all()
        self.cache.faults.disarm()
        self.current, self.context = None, None

    def describe(self) -> dict[str, Any]:
        return {"iut": self.config.base_uri, "role": self.config.role, "models": list(self.config.models),
                "embedded": self.config.embedded, "harness_router": self.config.router,
                "harness_cache": self.config.cache, "verifiers": list(self.config.verifiers),
                "proposal_timeout_s": self.proposal_timeout_s}

    # ------------------------------------------------------------------ lifecycle

    @classmethod
    async def start(cls, config: TargetConfig | None = None, *, app_factory: DrafterAppFactory | None = None,
                    workdir: Path | None = None, reproducible: bool = False) -> DrafterEnvironment:
        """``reproducible``: the embedded drafter chooses M from its priors and seeds its randomness (D-DRF-17),
        so that the fuzzer's replays and shrinking see the same drafter every time."""
        if config is not None:
            return await cls._started(config, None, app_factory, reproducible)
        for attempt in range(1, BIND_ATTEMPTS + 1):
            tempdir = tempfile.TemporaryDirectory(prefix="sdcp-certify-drafter-")
            embedded = embedded_drafter_target(Path(workdir or tempdir.name) / f"attempt-{attempt}")
            try:
                return await cls._started(embedded, tempdir, app_factory, reproducible)
            except OSError:
                # D-DRF-19: a free port is only free until someone binds it (parallel certifications pick
                # theirs at the same time); the embedded target is drawn again on fresh ports.
                if attempt == BIND_ATTEMPTS:
                    raise
        raise AssertionError("unreachable")

    @classmethod
    async def _started(cls, config: TargetConfig, tempdir: tempfile.TemporaryDirectory[str] | None,
                       app_factory: DrafterAppFactory | None, reproducible: bool) -> DrafterEnvironment:
        environment = cls(config, load_pki(config.pki))
        environment._tempdir = tempdir
        try:
            await environment._serve_harness()
            if config.embedded:
                await environment._start_embedded(app_factory, reproducible)
        except BaseException:
            await environment.stop()
            raise
        return environment

    async def _serve_harness(self) -> None:
        served: list[tuple[str, str, Handler]] = [
            ("cache", self.config.cache, self.cache_observer), ("router", self.config.router, self.inbox)]
        for index, uri in enumerate(self.config.verifiers):
            name = VERIFIER_PARTIES[index] if index < len(VERIFIER_PARTIES) else f"verifier-{index + 1}"
            served.append((name, uri, PlayedVerifier(uri, self.board)))
        for name, uri, handler in served:
            server = H2Server(handler, ServerConfig(cert=self.pki.cert(name), key=self.pki.key(name),
                                                    ca=self.pki.ca_cert, host=urlsplit(uri).hostname or "127.0.0.1",
                                                    port=urlsplit(uri).port or 443, label=name))
            await server.start()
            self.servers.append(server)

    async def _start_embedded(self, app_factory: DrafterAppFactory | None, reproducible: bool = False) -> None:
        from sdcp_conformance.harness.drafter_embedded import start_embedded_drafter

        self.proposal_timeout_s = EMBEDDED_PROPOSAL_TIMEOUT_S
        app, server, closers, tasks = await start_embedded_drafter(self.config, self.pki, self.config.models,
                                                                   app_factory, reproducible=reproducible)
        self.embedded = _Embedded(app, server, closers, tasks)

    async def stop(self) -> None:
        await self.iut.aclose()
        if self.embedded is not None:
            await self.embedded.stop()
            self.embedded = None
        self.board.close_all()
        for server in self.servers:
            await server.stop()
        self.servers.clear()
        self.cache.store.close()
        if self._tempdir is not None:
            self._tempdir.cleanup()
            self._tempdir = None


def embedded_drafter_target(folder: Path) -> TargetConfig:
    """A PKI and target for the reference drafter run in-process, on free loopback ports."""
    from sdcp_conformance.harness.drafter_setup import drafter_parties

    uris = drafter_parties()
    pki = init_pki(folder / "pki", uris, subject=IUT_PARTY)
    return TargetConfig(role="drafter", base_uri=uris[IUT_PARTY], ca=pki.ca_cert, models=DRAFT_MODELS,
                        pki=pki.directory, router=uris["router"], cache=uris["cache"],
                        verifiers=tuple(uris[name] for name in VERIFIER_PARTIES))


__all__ = ["CTX_DRAFT_MODEL", "DRAFT_MODEL", "DRAFT_MODELS", "EMBEDDED_PROPOSAL_TIMEOUT_S", "HARNESS_PARTIES",
           "IUT_PARTY", "VERIFIER_PARTIES", "DrafterAppFactory", "DrafterEnvironment", "embedded_drafter_target"]
