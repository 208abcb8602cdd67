"""The lifecycle every role's environment shares: bind, start, ready, stop (the design's "roles on both sides").

An environment is the harness's side of a certification: the parties it plays around the IUT (each served on
its own HTTP/2 listener with its own certificate), the link to the IUT, and, without a target file, the embedded
reference of the role started in-process on free loopback ports. What differs by role — which parties are played,
how the embedded reference starts, the context a case runs in — is each subclass's (the verifier's
:class:`~.specs.verifier.VerifierEnvironment`, :class:`~.specs.drafter.DrafterEnvironment`,
:class:`~.specs.router.RouterEnvironment`); the order of starting and stopping, the one retry policy for
ports taken meanwhile, the identities and the listeners are here, once.
"""

from __future__ import annotations

import asyncio
import errno
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar
from urllib.parse import urlsplit

from sdcp_conformance.harness.iut import Identity, IutLink
from sdcp_conformance.harness.judging import JudgedContext
from sdcp_conformance.harness.patience import Patience
from sdcp_conformance.harness.roles.played_cache import PlayedCache
from sdcp_conformance.harness.target import TargetConfig
from sdcp_conformance.harness.transcript import CaseTranscript
from sdcp_conformance.judge.declaration import Declaration
from sdcp_conformance.transport.listeners import (
    DEFAULT_HTTP,
    HttpVersions,
    Listeners,
    PartyServer,
    speaks_h2,
    speaks_h3,
    start_listeners,
)
from sdcp_conformance.transport.pki import Pki, load_pki
from sdcp_conformance.transport.ports import port_of
from sdcp_conformance.transport.server import ServerConfig
from sdcp_conformance.transport.types import Handler

if TYPE_CHECKING:
    from sdcp_conformance.harness.case import Case

BIND_ATTEMPTS = 3
"""D-PORTS-2: a free port is free only until someone binds it (parallel certifications choose theirs at the same
time); an embedded target whose listeners could not bind (EADDRINUSE) is drawn again on fresh ports, this many
times in all. Any other error is said at once."""

Self = TypeVar("Self", bound="RoleEnvironment")


EMBEDDED_HTTP: HttpVersions = "both"
"""What the embedded reference and the harness's parties around it serve: HTTP/2 and HTTP/3 (the reference serves
both, so a certification of it runs every transport case; the harness's clients speak HTTP/2, D-JUDGE-HTTP-1)."""


class RoleEnvironment:
    """What every role's environment does the same way; subclasses say what they play and how the IUT starts."""

    role: ClassVar[str]
    """The IUT's role (``verifier``, ``drafter``, ``router``)."""
    supports_concurrency: ClassVar[bool] = False
    """Cases that declare no global state may run at the same time (:func:`~.runner.run_catalogue`)."""
    shares_target: ClassVar[bool] = False
    """Several harness processes may certify one target at once (pytest-xdist workers,
    :meth:`start_beside_others`); otherwise one process runs every case of the target."""

    def __init__(self, config: TargetConfig, pki: Pki) -> None:
        self.config = config
        self.pki = pki
        self.current: CaseTranscript | None = None
        """The transcript of the case running now (where the IUT link records)."""
        self.servers: list[Listeners] = []
        self.cache = PlayedCache(config.cache)
        """The MLC the harness plays (§5.1 Table 1), for an IUT of every role."""
        self._tempdir: tempfile.TemporaryDirectory[str] | None = None
        self.iut = self.new_link(self.recording_into)
        self.declaration: Declaration | None = None
        """The vendor's declaration the certification follows (``certify --declaration``; D-JUDGE-DECL-1)."""

    def recording_into(self) -> CaseTranscript | None:
        """Where an exchange with the IUT is recorded now: the current case's transcript."""
        return self.current

    def new_link(self, transcript: Callable[[], CaseTranscript | None]) -> IutLink:
        """The harness's HTTP/2 link to the IUT, as every identity of the PKI (and the refused ones)."""
        config = self.config
        return IutLink(config.base_uri, config.ca, self.identities(), transcript,
                       request_timeout_s=config.request_timeout_s, output_timeout_s=config.output_timeout_s,
                       max_response_bytes=config.max_response_bytes, http=config.http)

    def identities(self) -> dict[str, Identity]:
        """Every party of the PKI, and the clients a conformant IUT refuses (§5.1: no certificate, another CA,
        an expired certificate, a certificate naming another party)."""
        pki = self.pki
        identities = {name: Identity(name, pki.cert(name), pki.key(name)) for name in pki.parties}
        identities["no-cert"] = Identity("no-cert", None, None)
        identities["wrong-ca"] = Identity("wrong-ca", pki.wrong_ca.cert, pki.wrong_ca.key)
        identities["expired"] = Identity("expired", pki.expired.cert, pki.expired.key)
        identities["other-party"] = Identity("other-party", pki.other_party.cert, pki.other_party.key)
        return identities

    @property
    def patience(self) -> Patience:
        """The deadlines of this certification's requests to the IUT (P1-JUDGE-5; the runner scales them)."""
        return self.iut.patience

    def now(self) -> float:
        return asyncio.get_running_loop().time()

    def claims(self) -> frozenset[str] | None:
        """The features the declaration claims (None without one: every feature is taken as claimed)."""
        return self.declaration.claims if self.declaration is not None else None

    # ------------------------------------------------------------------ what the runner calls around a case

    def capabilities(self) -> set[str]:
        """What the target offers beyond the protocol (``requires`` of a case names them): its models, and the
        listeners it serves (``http:2``, ``http:3``; a transport case that probes one listener needs it)."""
        found = {f"model:{model}" for model in self.config.models}
        found |= {name for name, speaks in (("http:2", speaks_h2), ("http:3", speaks_h3)) if speaks(self.config.http)}
        return found

    def new_context(self, case: Case, seed: int, run: str) -> JudgedContext:
        raise NotImplementedError

    def reset(self) -> None:
        """Undo what a case may have switched in the harness."""

    async def before_case(self, case: Case) -> None:
        """Before ``case`` runs: the listeners it needs are up."""

    def release(self, context: Any) -> None:
        """A case that ran beside others ended: undo what it alone switched."""

    async def after_case(self, context: Any) -> None:
        """After a case: asynchronous undoing (a load set through the target's hook)."""

    def describe(self) -> dict[str, Any]:
        return {"iut": self.config.base_uri, "role": self.config.role, "embedded": self.config.embedded}

    # ------------------------------------------------------------------ lifecycle

    @classmethod
    def embedded_target(cls, folder: Path, http: HttpVersions = DEFAULT_HTTP) -> TargetConfig:
        """A PKI under ``folder`` and a target for the role's reference run in-process on free loopback ports
        (:meth:`~.role_spec.RoleSpec.embedded_target` of the role's spec), serving ``http``."""
        from sdcp_conformance.harness.role_spec import spec_of

        return spec_of(cls.role).embedded_target(folder, http)

    @classmethod
    async def start(cls: type[Self], config: TargetConfig | None = None, *, app_factory: Any = None,
                    workdir: Path | None = None, http: HttpVersions | None = None, **options: Any) -> Self:
        """Start for ``config``'s IUT, or for the embedded reference of the role serving ``http`` (default
        :data:`EMBEDDED_HTTP`; ``app_factory`` builds a mutant's app instead; ``options`` go to
        :meth:`start_embedded`)."""
        if config is not None:
            return await cls._started(config, None, app_factory, options)
        for attempt in range(1, BIND_ATTEMPTS + 1):
            tempdir = tempfile.TemporaryDirectory(prefix=f"sdcp-certify-{cls.role}-")
            folder = Path(workdir or tempdir.name) / f"attempt-{attempt}"
            try:
                return await cls._started(cls.embedded_target(folder, http or EMBEDDED_HTTP), tempdir, app_factory,
                                          options)
            except OSError as error:
                if error.errno != errno.EADDRINUSE or attempt == BIND_ATTEMPTS:
                    raise
        raise AssertionError("unreachable")

    @classmethod
    async def start_beside_others(cls: type[Self], config: TargetConfig) -> Self:
        """Start for a target other harness processes certify at the same time (only where
        :attr:`shares_target`)."""
        raise NotImplementedError(f"a {cls.role} target is certified by one harness process at a time")

    @classmethod
    async def _started(cls: type[Self], config: TargetConfig, tempdir: tempfile.TemporaryDirectory[str] | None,
                       app_factory: Any, options: dict[str, Any]) -> Self:
        environment = cls(config, load_pki(config.pki))
        environment._tempdir = tempdir  # cleaned up by stop(), also when starting fails
        try:
            await environment.serve_played()
            if config.embedded:
                await environment.start_embedded(app_factory, **options)
            await environment.ready()
        except BaseException:
            await environment.stop()
            raise
        return environment

    async def serve(self, name: str, uri: str, handler: Handler) -> Listeners:
        """Serve ``handler`` as the played party ``name`` at ``uri`` (its certificate, mutual TLS), over what the
        target's ``http`` says."""
        server = await start_listeners(handler, ServerConfig(
            cert=self.pki.cert(name), key=self.pki.key(name), ca=self.pki.ca_cert,
            host=urlsplit(uri).hostname or "127.0.0.1", port=port_of(uri), label=name), self.config.http)
        self.servers.append(server)
        return server

    async def serve_played(self) -> None:
        """Bind and start the listeners of the parties the harness plays."""
        raise NotImplementedError

    async def start_embedded(self, app_factory: Any, **options: Any) -> None:
        """Start the role's reference (or ``app_factory``'s app) in-process as the IUT."""
        raise NotImplementedError

    async def ready(self) -> None:
        """After the listeners and the IUT are up: what must happen before the first case."""

    async def stop_role(self) -> None:
        """What the role stops before the common part (its played parties' own tasks, its links)."""

    async def stop_embedded(self) -> None:
        """Stop the embedded IUT, if one runs."""

    async def stop(self) -> None:
        """Stop everything :meth:`start` started, in reverse order; safe after a start that failed halfway."""
        await self.stop_role()
        await self.iut.aclose()
        await self.stop_embedded()
        for server in self.servers:
            await server.stop()
        self.servers.clear()
        self.cache.store.close()
        if self._tempdir is not None:
            self._tempdir.cleanup()
            self._tempdir = None


class PlayedParts(Protocol):
    """What every case context takes from its environment (:class:`RoleEnvironment` has it). A role's context
    declares what more it takes as a protocol of its own, so that it depends on the parts it uses, not on the
    environment class that builds it (which imports the context to build it)."""

    config: TargetConfig
    pki: Pki
    iut: IutLink
    cache: PlayedCache
    servers: list[Listeners]

    @property
    def patience(self) -> Patience: ...

    def now(self) -> float: ...


Env = TypeVar("Env", bound=PlayedParts)


class RoleContext(JudgedContext, Generic[Env]):
    """A case's context in a role's environment: its judgements (:class:`~.judging.JudgedContext`) and the
    environment whose played parties it talks through."""

    def __init__(self, env: Env, case: Case, seed: int, run: str = "main") -> None:
        super().__init__(case, seed, run)
        self.env = env
        # What every case reaches by one name (the played parties of each role: its own context).
        self.iut: IutLink = env.iut
        """The harness's link to the IUT, as any identity of the PKI."""
        self.target: TargetConfig = env.config
        """The target under certification (its base URI, models, the parties' URIs)."""
        self.pki: Pki = env.pki
        self.patience: Patience = env.patience
        """The deadlines of this certification's requests to the IUT (P1-JUDGE-5)."""
        self.cache: PlayedCache = env.cache
        """The MLC the harness plays: what the IUT asked of it, its objects, its faults."""
        self.now = env.now
        """The event loop's clock (what arrivals are stamped with)."""

    def played_servers(self) -> Sequence[PartyServer]:
        return self.env.servers

    def cache_uri(self, name: str) -> str:
        """The URI of an object of this case in the harness's MLC (named under the case, P1-MLC-1)."""
        return f"{self.target.cache}{self.case_id}/{name}"

    def put_object(self, name: str, data: bytes) -> str:
        """Store an object in the harness's MLC directly (no IUT traffic); returns its URI."""
        uri = self.cache_uri(name)
        self.cache.put(uri, data)
        return uri


__all__ = ["BIND_ATTEMPTS", "PlayedParts", "RoleContext", "RoleEnvironment"]
