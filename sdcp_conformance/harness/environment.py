"""The harness's side of a certification: its cache, its router listener, its identities and the IUT.

With a target file the IUT runs elsewhere and the harness listens where the
file says; without one the reference verifier is started in-process as the
IUT (the embedded default), optionally as a named mutant.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from sdcp_conformance.harness.judging import run_nonce
from sdcp_conformance.harness.role_environment import RoleEnvironment
from sdcp_conformance.harness.roles.played_router import PlayedRouter
from sdcp_conformance.harness.roles.recording import Recorder
from sdcp_conformance.harness.rule2_judging import JudgeHost, new_judge_host
from sdcp_conformance.harness.target import DEFAULT_MODELS, TargetConfig
from sdcp_conformance.harness.transcript import CaseTranscript
from sdcp_conformance.protocol.codec import decode
from sdcp_conformance.protocol.errors import MalformedMessage
from sdcp_conformance.reference.running import RunningRole, port_of
from sdcp_conformance.reference.verifier.app import VerifierApp, VerifierConfig
from sdcp_conformance.reference.verifier.service import PartyTls, VerifierService
from sdcp_conformance.transport.pki import Pki, init_pki, load_pki
from sdcp_conformance.transport.ports import free_port, loopback_base_uris
from sdcp_conformance.transport.types import Handler, Request

if TYPE_CHECKING:
    from sdcp_conformance.harness.case import Case
    from sdcp_conformance.harness.context import CaseContext

AppFactory = Callable[..., VerifierApp]
"""Builds the embedded IUT's app: ``factory(config, models, cache, router)`` (a mutant's, say)."""

HARNESS_PARTIES = ("router", "cache", "drafter-1", "drafter-2")



class Environment(RoleEnvironment):
    """Everything the cases talk to and through; start with :meth:`start`, end with :meth:`stop`."""

    role = "verifier"
    supports_concurrency = True

    def __init__(self, config: TargetConfig, pki: Pki) -> None:
        self._current: contextvars.ContextVar[CaseTranscript | None] = contextvars.ContextVar("sdcp_transcript",
                                                                                               default=None)
        super().__init__(config, pki)
        self._active: dict[str, CaseContext] = {}
        """Running cases by their cache prefix (the path under which they name their objects)."""
        self._owners: dict[bytes, CaseContext] = {}
        """Which running case opened a session: the router's events are recorded there."""
        self.router = PlayedRouter(accepts_events=True)
        self.embedded: RunningRole | None = None
        self.embedded_app: VerifierApp | None = None
        self.session_nonce = run_nonce(config.embedded)
        """Mixed into every session ID the cases draw (D-ID-1: a rerun never meets the last run's sessions)."""
        self._serving: set[str] = set()
        """The harness listeners bound so far (``cache``, ``router``)."""
        self._judges: JudgeHost | None = None
        self._load_set = False
        """A case set the IUT's load through the target's hook or command and has not given it back yet."""

    # ------------------------------------------------------------------ identities

    def party_uri(self, name: str) -> str:
        return self.pki.base_uris[name]

    def drafter_uris(self) -> tuple[str, ...]:
        return self.config.drafters

    def capabilities(self) -> set[str]:
        """What the target offers beyond the protocol: its models, and how its load is known."""
        found = {f"model:{model}" for model in self.config.models}
        if self.config.pinned_load is not None:
            found.add("load:pinned")
        if self.embedded_app is not None or self.config.load_hook or self.config.load_command:
            found.add("load:control")
        return found

    # ------------------------------------------------------------------ cases

    @property
    def current(self) -> CaseTranscript | None:
        """The transcript the code running now records into (each case's task has its own)."""
        return self._current.get()

    @current.setter
    def current(self, transcript: CaseTranscript | None) -> None:
        self._current.set(transcript)

    def new_context(self, case: Case, seed: int, run: str) -> CaseContext:
        """The context a verifier case runs in; its transcript is where every exchange is recorded."""
        from sdcp_conformance.harness.context import CaseContext

        context = CaseContext(self, case, seed, run)
        self.current = context.transcript
        self._active[_path_of(context.cache_uri(""))] = context
        return context

    def judge_host(self) -> JudgeHost:
        """Where the statistical cases' rule-2 tests run (a worker process started on first use); ended by
        :meth:`stop`."""
        if self._judges is None:
            self._judges = new_judge_host()
        return self._judges

    def owns(self, context: CaseContext, session_id: bytes) -> None:
        """``context`` opened this session: events about it belong to its evidence."""
        self._owners[session_id] = context

    def release(self, context: CaseContext) -> None:
        """A case ended: its faults are disarmed (held requests let go), its evidence no longer collected."""
        prefix = _path_of(context.cache_uri(""))
        self._active.pop(prefix, None)
        for session in context.sessions:
            self._owners.pop(session.id, None)
        self.cache.faults.disarm_under(prefix)
        self.current = None

    def reset(self) -> None:
        """Undo what a case may have switched in the harness: faults (held requests let go), fences, pinned load."""
        self.current = None
        self.cache.reset()
        if self.embedded_app is not None:
            self.embedded_app.pinned_load = None

    def _cache_transcripts(self, request: Request) -> list[CaseTranscript]:
        for prefix, context in list(self._active.items()):
            if request.path.startswith(prefix):
                return [context.transcript]
        current = self.current
        return [current] if current is not None else []

    def _router_transcripts(self, request: Request) -> list[CaseTranscript]:
        try:
            session = decode(request.body).get("session") if request.path.endswith("/events") else None
        except (MalformedMessage, AttributeError):
            session = None
        owner = self._owners.get(session) if isinstance(session, bytes) else None
        if owner is not None:
            return [owner.transcript]
        if len(self._active) == 1:  # a status report, say: the one case running sees it
            return [next(iter(self._active.values())).transcript]
        current = self.current
        return [current] if current is not None else []

    # ------------------------------------------------------------------ lifecycle

    @classmethod
    def embedded_target(cls, folder: Path) -> TargetConfig:
        return embedded_target(folder)

    @classmethod
    async def start_beside_others(cls, config: TargetConfig) -> Environment:
        """Start for a target that other harness processes certify at the same time (pytest-xdist workers).

        Each process serves its own cache on a free port of the same host (every object is named by a full
        URI, so the IUT fetches from whichever process wrote it) and binds the router listener, which the IUT
        was configured with, only when a case that listens there runs (:meth:`before_case`); such cases are all
        sent to one process, so exactly one binds it.
        """
        host = urlsplit(config.cache).hostname or "127.0.0.1"
        cache = urlunsplit(urlsplit(config.cache)._replace(netloc=f"{host}:{free_port()}"))
        environment = cls(replace(config, cache=cache), load_pki(config.pki))
        try:
            await environment._serve("cache")
        except BaseException:
            await environment.stop()
            raise
        return environment

    async def before_case(self, case: Case) -> None:
        """Before ``case`` runs: the listeners it judges traffic at are up (bound now if deferred)."""
        if "router" in case.listens and "router" not in self._serving:
            await self._serve("router")

    async def serve_played(self) -> None:
        for name in ("cache", "router"):
            await self._serve(name)

    async def _serve(self, name: str) -> None:
        uri = self.config.cache if name == "cache" else self.config.router
        handler: Handler = (Recorder("cache", self.cache, self._cache_transcripts) if name == "cache"
                            else Recorder("router", self.router, self._router_transcripts))
        await self.serve(name, uri, handler)
        self._serving.add(name)

    async def start_embedded(self, app_factory: AppFactory | None, **options: Any) -> None:
        from sdcp_conformance.reference.stack import load_model  # torch: only for the embedded reference

        config = self.config
        tls = PartyTls(self.pki.cert("verifier"), self.pki.key("verifier"), self.pki.ca_cert)
        models = [load_model(model) for model in config.models]
        verifier_config = VerifierConfig(base_uri=config.base_uri, routers=frozenset({config.router}),
                                         output_wait_s=2.0, round_wait_s=20.0)
        service = await VerifierService.start(verifier_config, tls, models, config.router,
                                              port=port_of(config.base_uri), app_factory=app_factory)
        self.embedded = RunningRole("verifier", config.base_uri, service.app, service.server, [service.stop])
        self.embedded_app = service.app

    async def stop_role(self) -> None:
        if self._load_set and self.embedded_app is None:  # a case ended without giving the load back
            with contextlib.suppress(Exception):
                await self.set_load(None)

    async def stop_embedded(self) -> None:
        if self._judges is not None:
            await self._judges.aclose()
            self._judges = None
        if self.embedded is not None:
            await self.embedded.stop()
            self.embedded = None

    # ------------------------------------------------------------------ load control

    def pin_load(self, load: int | None) -> None:
        if self.embedded_app is None:
            raise RuntimeError("only the embedded IUT's load can be pinned in-process (set_load sets any)")
        self.embedded_app.pinned_load = load

    async def set_load(self, load: int | None) -> None:
        """Set the IUT's load (``None``: back to its own measure): in-process for the embedded IUT, else through
        the target's ``load_hook`` or ``load_command`` (:mod:`.load_control`); raises
        :class:`~.load_control.LoadControlError` when that fails, RuntimeError when the target offers neither."""
        from sdcp_conformance.harness import load_control

        if self.embedded_app is not None:
            self.pin_load(load)
        elif self.config.load_hook:
            await load_control.put_load(self.config.load_hook, load, cert=self.pki.cert("router"),
                                        key=self.pki.key("router"), ca=self.config.ca)
        elif self.config.load_command:
            await load_control.run_load_command(self.config.load_command, load)
        else:
            raise RuntimeError("the target offers no load control (load:control)")
        self._load_set = load is not None

    async def after_case(self, context: CaseContext) -> None:
        """After a case (the runner awaits it): a load it set through the target's hook or command is given back
        (the embedded IUT's is, in :meth:`reset`); a hook that refuses is noted in the case, and tried again
        before the harness stops."""
        from sdcp_conformance.harness.load_control import LoadControlError

        if not self._load_set or self.embedded_app is not None:
            return
        try:
            await self.set_load(None)
        except LoadControlError as exc:
            context.note(f"the load this case set was not given back: {exc}")

    def describe(self) -> dict[str, Any]:
        return {
            "iut": self.config.base_uri, "role": self.config.role, "models": list(self.config.models),
            "embedded": self.config.embedded, "harness_router": self.config.router,
            "harness_cache": self.config.cache, "drafters": list(self.config.drafters),
        }


def _path_of(uri: str) -> str:
    return urlsplit(uri).path


def embedded_target(folder: Path) -> TargetConfig:
    """A PKI and target for the reference verifier run in-process, on free loopback ports."""
    uris = loopback_base_uris(("verifier", *HARNESS_PARTIES))
    pki = init_pki(folder / "pki", uris, subject="verifier")
    return TargetConfig(
        role="verifier", base_uri=uris["verifier"], ca=pki.ca_cert, models=DEFAULT_MODELS, pki=pki.directory,
        router=uris["router"], cache=uris["cache"], drafters=(uris["drafter-1"], uris["drafter-2"]),
    )


__all__ = ["HARNESS_PARTIES", "AppFactory", "Environment", "embedded_target"]
