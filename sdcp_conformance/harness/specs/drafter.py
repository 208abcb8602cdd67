"""The drafter's role spec: around a drafter under test the harness plays its router, verifiers and cache.

With a target file the drafter runs elsewhere and the harness listens where
the file's [harness] table says (its router, its MLC, its verifiers); without
one the reference drafter is started in-process on the shipped draft models
(:data:`DRAFT_MODELS`), as ``sdcp-conformance serve drafter`` would run it (or a mutant of it,
through ``app_factory``). The drafter reaches every played role over HTTP/2
with mutual TLS, exactly as it would reach real ones.
"""

from __future__ import annotations

import logging
import shlex
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from sdcp_conformance.harness.capabilities import MAX_TIMEOUT_CASE_S
from sdcp_conformance.harness.contexts.drafter import DrafterContext
from sdcp_conformance.harness.environment import RoleEnvironment
from sdcp_conformance.harness.role_spec import RoleSpec
from sdcp_conformance.harness.roles.played_router import PlayedRouter
from sdcp_conformance.harness.roles.played_verifier import PlayedVerifier
from sdcp_conformance.harness.roles.proposal_board import Pace, VerifierBoard
from sdcp_conformance.harness.roles.proposal_checks import DrafterFacts
from sdcp_conformance.harness.target import TargetConfig
from sdcp_conformance.judge.status_budget import STATUS_TIMED_TTL_MS
from sdcp_conformance.models.registry import mock_model
from sdcp_conformance.reference.running import RunningRole
from sdcp_conformance.transport.pki import Pki

if TYPE_CHECKING:
    from sdcp_conformance.harness.case import Case

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

DrafterAppFactory = Callable[..., Any]
"""Builds the embedded IUT: ``factory(config, model, cache, verifier, router)`` → a drafter app (a mutant's)."""


class DrafterEnvironment(RoleEnvironment):
    """Everything a drafter case talks to and through; :meth:`start` it, :meth:`stop` it."""

    role = "drafter"

    def __init__(self, config: TargetConfig, pki: Pki) -> None:
        super().__init__(config, pki)
        self.context: DrafterContext | None = None
        self.cache.transcript = lambda: self.current
        self.router = PlayedRouter(transcript=lambda: self.current)
        self.board = VerifierBoard(self.facts, transcript=lambda: self.current)
        self.embedded: RunningRole | None = None
        self.draft_model = DRAFT_MODEL if DRAFT_MODEL in config.models else config.models[0]
        self.target_model = mock_model(self.draft_model).drafts_for or "bigram"
        timeout = config.extra.get("proposal_timeout_s")
        self.proposal_timeout_s: float | None = float(timeout) if timeout is not None else None

    # ------------------------------------------------------------------ what cases use

    def facts(self) -> DrafterFacts:
        """What the played verifier checks proposals against: the draft model of the case running now."""
        draft = self.context.draft_model if self.context is not None else self.draft_model
        target = mock_model(draft).drafts_for or "bigram"
        return DrafterFacts(self.config.base_uri, mock_model(target).vocab_size, draft,
                            self.proposal_timeout_s, self.cache.of, self.cache.stored)

    @property
    def pace(self) -> Pace:
        return self.board.pace

    def capabilities(self) -> set[str]:
        found = super().capabilities()
        timeout = self.proposal_timeout_s
        if timeout is not None and timeout <= MAX_TIMEOUT_CASE_S:
            found.add("timeout:proposal")
        return found

    def new_context(self, case: Case, seed: int, run: str) -> DrafterContext:
        context = DrafterContext(self, case, seed, run)
        self.current, self.context = context.transcript, context
        return context

    def reset(self) -> None:
        """End of a case: judge what it left untaken, close its sessions, let every fault and hold go."""
        if self.context is not None:
            self.context.settle()
        self.board.close_all()
        self.cache.reset()
        self.current, self.context = None, None

    def describe(self) -> dict[str, Any]:
        return {"iut": self.config.base_uri, "role": self.config.role, "models": list(self.config.models),
                "embedded": self.config.embedded, "harness_router": self.config.router,
                "harness_cache": self.config.cache, "verifiers": list(self.config.verifiers),
                "proposal_timeout_s": self.proposal_timeout_s}

    # ------------------------------------------------------------------ lifecycle


    async def serve_played(self) -> None:
        await self.serve("cache", self.config.cache, self.cache)
        await self.serve("router", self.config.router, self.router)
        for index, uri in enumerate(self.config.verifiers):
            name = VERIFIER_PARTIES[index] if index < len(VERIFIER_PARTIES) else f"verifier-{index + 1}"
            await self.serve(name, uri, PlayedVerifier(name, uri, board=self.board))

    async def start_embedded(self, app_factory: DrafterAppFactory | None, **options: Any) -> None:
        """``reproducible=True``: the embedded drafter chooses M from its priors and seeds its randomness
        (D-DRF-17), so that the fuzzer's replays and shrinking see the same drafter every time."""
        from sdcp_conformance.reference.roles import start_drafter
        from sdcp_conformance.reference.stack import load_model
        from sdcp_conformance.reference.verifier.service import PartyTls

        reproducible = bool(options.pop("reproducible", False))
        if options:
            raise TypeError(f"unknown options of the embedded drafter: {sorted(options)}")
        # The IUT's own log lines (it stops sessions the cases end) are noise in a certification's console;
        # what it did is in the transcripts.
        logging.getLogger("sdcp_conformance.reference.drafter").setLevel(logging.CRITICAL)
        self.proposal_timeout_s = EMBEDDED_PROPOSAL_TIMEOUT_S
        config = self.config
        tls = PartyTls(self.pki.cert(IUT_PARTY), self.pki.key(IUT_PARTY), self.pki.ca_cert, self.config.http)
        self.embedded = await start_drafter(
            config.base_uri, tls, [load_model(model) for model in config.models], [config.router], config.cache,
            host=urlsplit(config.base_uri).hostname or "127.0.0.1", seed=0 if reproducible else None,
            measured_timing=not reproducible, app_factory=app_factory,
            proposal_timeout_s=EMBEDDED_PROPOSAL_TIMEOUT_S, status_ttl_ms=EMBEDDED_STATUS_TTL_MS)

    async def stop_embedded(self) -> None:
        if self.embedded is not None:
            await self.embedded.stop()
            self.embedded = None
        self.board.close_all()


def drafter_target(pki: Pki, uris: Mapping[str, str]) -> TargetConfig:
    """The target of a drafter at ``uris[IUT_PARTY]`` with the harness's parties at theirs."""
    return TargetConfig(role="drafter", base_uri=uris[IUT_PARTY], ca=pki.ca_cert, models=DRAFT_MODELS,
                        pki=pki.directory, router=uris["router"], cache=uris["cache"],
                        verifiers=tuple(uris[name] for name in VERIFIER_PARTIES))


def serve_drafter_command(pki: Pki) -> list[str]:
    """The command that starts the reference drafter as the IUT of this PKI."""
    return ["sdcp-conformance", "serve", "drafter", "--pki", str(pki.directory), "--party", IUT_PARTY,
            "--router", pki.base_uris["router"], "--cache", pki.base_uris["cache"],
            *(word for model in DRAFT_MODELS for word in ("--model", model))]


def drafter_instructions(pki: Pki, target_path: Path, serve: list[str]) -> str:
    from sdcp_conformance.models.registry import mock_model

    drafter = pki.parties[IUT_PARTY]
    model, ctx_model = mock_model(DRAFT_MODEL), mock_model(CTX_DRAFT_MODEL)
    verifiers = ", ".join(pki.base_uris[name] for name in VERIFIER_PARTIES)
    return "\n".join([
        f"Wrote the PKI and {target_path} for a drafter under test.",
        "",
        "Start the drafter under test with:",
        f"  trust this CA (clients and servers):       {pki.ca_cert}",
        f"  serve with certificate / key:              {drafter.cert} / {drafter.key}",
        f"  listen at its base URI (= URI SAN):        {pki.base_uris[IUT_PARTY]}",
        f"  accept POST assignments only from router:  {pki.base_uris['router']} (P1-DRF-1)",
        f"  report status to that router:              {pki.base_uris['router']}instances/{{id}}/status",
        f"    (as role 1, every < ttl_ms; a ttl_ms of {STATUS_TIMED_TTL_MS} or less has its intervals timed)",
        f"  write q_rows under the MLC base URI:       {pki.base_uris['cache']}",
        f"  serve the draft models (P1-MODEL-1):       {DRAFT_MODEL}: {model.path}",
        f"                                             {CTX_DRAFT_MODEL}: {ctx_model.path}",
        f"    (their targets are {model.drafts_for} and {ctx_model.drafts_for}; the harness plays the verifiers at "
        f"{verifiers};",
        "    a session uses the draft model its contract's drafters list names, P1-DRF-3; a drafter without",
        f"    {CTX_DRAFT_MODEL} removes it from the target file's models, and the cases needing it are skipped)",
        "",
        "The reference drafter, for example:",
        f"  {shlex.join(serve)}",
        "(its proposal timeout is 30 s; if yours is at most 10 s, add `proposal_timeout_s = N` under [harness]",
        " so that the case that loses a verdict by silence runs)",
        "",
        "Then certify it:",
        f"  sdcp-conformance certify --target {target_path}",
        "",
    ])


SPEC = RoleSpec("drafter", IUT_PARTY, HARNESS_PARTIES, drafter_target, serve_drafter_command, drafter_instructions,
                DrafterEnvironment)
"""A drafter under test meets the harness's router, MLC and two verifiers."""


__all__ = [
    "CTX_DRAFT_MODEL",
    "DRAFT_MODEL",
    "DRAFT_MODELS",
    "EMBEDDED_PROPOSAL_TIMEOUT_S",
    "HARNESS_PARTIES",
    "IUT_PARTY",
    "SPEC",
    "VERIFIER_PARTIES",
    "DrafterAppFactory",
    "DrafterEnvironment",
    "drafter_instructions",
    "drafter_target",
    "serve_drafter_command",
]
