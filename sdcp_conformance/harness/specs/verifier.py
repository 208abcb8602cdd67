"""The verifier's role spec: around a verifier under test the harness plays its router, cache and drafters.

With a target file the IUT runs elsewhere and the harness listens where the
file says; without one the reference verifier is started in-process as the
IUT (the embedded default), optionally as a named mutant.
"""

from __future__ import annotations

import contextlib
import contextvars
import shlex
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from sdcp_conformance.harness.contexts.verifier import VerifierContext
from sdcp_conformance.harness.environment import RoleEnvironment
from sdcp_conformance.harness.judging import run_nonce
from sdcp_conformance.harness.role_spec import RoleSpec
from sdcp_conformance.harness.roles.played_router import PlayedRouter
from sdcp_conformance.harness.roles.recording import Recorder
from sdcp_conformance.harness.rule2_judging import JudgeHost, new_judge_host
from sdcp_conformance.harness.target import DEFAULT_MODELS, TargetConfig
from sdcp_conformance.harness.transcript import CaseTranscript
from sdcp_conformance.judge.status_budget import STATUS_TIMED_TTL_MS
from sdcp_conformance.protocol.codec import decode
from sdcp_conformance.protocol.errors import MalformedMessage
from sdcp_conformance.reference.running import RunningRole
from sdcp_conformance.reference.verifier.app import VerifierApp
from sdcp_conformance.reference.verifier.service import PartyTls
from sdcp_conformance.transport.pki import Pki, load_pki
from sdcp_conformance.transport.ports import free_port
from sdcp_conformance.transport.types import Handler, Request

if TYPE_CHECKING:
    from sdcp_conformance.harness.case import Case

AppFactory = Callable[..., VerifierApp]
"""Builds the embedded IUT's app: ``factory(config, models, cache, router)`` (a mutant's, say)."""

VERIFIER = "verifier"
"""The party name of a verifier under test."""
HARNESS_PARTIES = ("router", "cache", "drafter-1", "drafter-2")
EMBEDDED_OUTPUT_WAIT_S = 2.0
EMBEDDED_ROUND_WAIT_S = 20.0
"""How long the embedded reference verifier holds a long-poll of output and waits for a round: short, so that
the cases that wait on it stay short."""
"""The parties the harness plays around a verifier under test."""



class VerifierEnvironment(RoleEnvironment):
    """Everything the cases talk to and through; start with :meth:`start`, end with :meth:`stop`."""

    role = "verifier"
    supports_concurrency = True
    shares_target = True

    def __init__(self, config: TargetConfig, pki: Pki) -> None:
        self._current: contextvars.ContextVar[CaseTranscript | None] = contextvars.ContextVar("sdcp_transcript",
                                                                                               default=None)
        super().__init__(config, pki)
        self._active: dict[str, VerifierContext] = {}
        """Running cases by their cache prefix (the path under which they name their objects)."""
        self._owners: dict[bytes, VerifierContext] = {}
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
        found = super().capabilities()
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

    def new_context(self, case: Case, seed: int, run: str) -> VerifierContext:
        """The context a verifier case runs in; its transcript is where every exchange is recorded."""
        context = VerifierContext(self, case, seed, run)
        self.current = context.transcript
        self._active[_path_of(context.cache_uri(""))] = context
        return context

    def judge_host(self) -> JudgeHost:
        """Where the statistical cases' rule-2 tests run (a worker process started on first use); ended by
        :meth:`stop`."""
        if self._judges is None:
            self._judges = new_judge_host()
        return self._judges

    def owns(self, context: VerifierContext, session_id: bytes) -> None:
        """``context`` opened this session: events about it belong to its evidence."""
        self._owners[session_id] = context

    def release(self, context: VerifierContext) -> None:
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
    async def start_beside_others(cls, config: TargetConfig) -> VerifierEnvironment:
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
        """The reference verifier through :mod:`sdcp_conformance.reference.roles` (the one place that wires the
        reference), with short waits (:data:`EMBEDDED_ROUND_WAIT_S`)."""
        from sdcp_conformance.reference.roles import start_verifier
        from sdcp_conformance.reference.stack import load_model  # torch: only for the embedded reference

        if options:
            raise TypeError(f"unknown options of the embedded verifier: {sorted(options)}")
        config = self.config
        tls = PartyTls(self.pki.cert(VERIFIER), self.pki.key(VERIFIER), self.pki.ca_cert, self.config.http)
        self.embedded = await start_verifier(config.base_uri, tls, [load_model(model) for model in config.models],
                                             config.router, app_factory=app_factory,
                                             output_wait_s=EMBEDDED_OUTPUT_WAIT_S,
                                             round_wait_s=EMBEDDED_ROUND_WAIT_S)
        self.embedded_app = self.embedded.app

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
                                        key=self.pki.key("router"), ca=self.config.ca, http=self.config.http)
        elif self.config.load_command:
            await load_control.run_load_command(self.config.load_command, load)
        else:
            raise RuntimeError("the target offers no load control (load:control)")
        self._load_set = load is not None

    async def after_case(self, context: VerifierContext) -> None:
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


def verifier_target(pki: Pki, uris: Mapping[str, str]) -> TargetConfig:
    """The target of a verifier at ``uris[VERIFIER]`` with the harness's parties at theirs."""
    return TargetConfig(
        role="verifier", base_uri=uris[VERIFIER], ca=pki.ca_cert, models=DEFAULT_MODELS, pki=pki.directory,
        router=uris["router"], cache=uris["cache"], drafters=(uris["drafter-1"], uris["drafter-2"]),
    )


def serve_verifier_command(pki: Pki) -> list[str]:
    """The command that starts the reference verifier as the IUT of this PKI."""
    words = ["sdcp-conformance", "serve", "verifier", "--pki", str(pki.directory), "--party", VERIFIER,
             "--router", pki.base_uris["router"]]
    for model in DEFAULT_MODELS:
        words += ["--model", model]
    return words


def verifier_instructions(pki: Pki, target_path: Path, serve: list[str]) -> str:
    from sdcp_conformance.models.registry import mock_model
    from sdcp_conformance.reference.verifier.app import LOAD_HOOK_PATH

    verifier = pki.parties[VERIFIER]
    models = "\n".join(f"      {model}: {mock_model(model).path}" for model in DEFAULT_MODELS)
    return "\n".join([
        f"Wrote the PKI and {target_path} for a verifier under test.",
        "",
        "Start the verifier under test with:",
        f"  trust this CA (clients and servers):  {pki.ca_cert}",
        f"  serve with certificate / key:         {verifier.cert} / {verifier.key}",
        f"  listen at its base URI (= URI SAN):   {pki.base_uris[VERIFIER]}",
        f"  report status and events to router:   {pki.base_uris['router']}",
        f"    (status as role 2, every < ttl_ms; a ttl_ms of {STATUS_TIMED_TTL_MS} or less has its intervals timed)",
        f"  accept router-only requests only from {pki.base_uris['router']} (P1-ID-2)",
        "  load the mock models (Llama checkpoints, P1-MODEL-1):",
        models,
        "",
        "The reference verifier, for example:",
        f"  {shlex.join(serve)}",
        "(its load is then the one it measures and reports, `load = \"reported\"` in the target; to pin it, add",
        " --pin-load N and `pinned_load = N` under [target], so the §6.5.2 load cases choose self_load from it)",
        "",
        "Load control (optional): VER-6.5-ESC-009 changes the verifier's load while it self-decodes, so it runs only",
        f"when the harness can set the load; name how under [target] in {target_path}, one of:",
        '  load_hook = "https://…"          the harness PUTs {"load": N} (JSON; {"load": null} gives it back),',
        f"                                   as {pki.base_uris['router']} (its router certificate), trusting the CA",
        '  load_command = "… {load}"        the harness runs it, {load} being N (or none to give it back)',
        "The reference offers the hook with --load-hook:",
        f'  load_hook = "{pki.base_uris[VERIFIER]}{LOAD_HOOK_PATH}"',
        "Without either the case is SKIPPED, its reason naming these keys.",
        "",
        "Then certify it:",
        f"  sdcp-conformance certify --target {target_path}",
        "",
    ])


SPEC = RoleSpec("verifier", VERIFIER, HARNESS_PARTIES, verifier_target, serve_verifier_command,
                verifier_instructions, VerifierEnvironment)
"""A verifier under test meets the harness's router, MLC and two drafters."""


__all__ = ["HARNESS_PARTIES", "SPEC", "VERIFIER", "AppFactory", "VerifierEnvironment", "serve_verifier_command",
           "verifier_instructions", "verifier_target"]
