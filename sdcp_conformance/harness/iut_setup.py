"""``pki init DIR --iut ROLE``: certificates for an IUT of that role and the parties the harness plays around it,
its target file, and what to tell the vendor (:data:`~sdcp_conformance.harness.suites.IutSetup`, one per role).

- A **verifier** under test is configured with the router it reports status to and accepts router-only requests
  from (P1-ID-2), and the mock target and draft models (P1-MODEL-1); the harness plays the router, the MLC and the
  drafters.
- A **drafter** is configured with (P1-DRF-1, P1-TLS-2) the router identity it accepts assignments from and
  reports status to, the MLC base URI where it writes q_rows, and the shipped draft models it serves
  (P1-MODEL-1): the bigram one every case uses and the context-dependent one of the cases that see more than the
  last token (a target without it skips those).
- A **router** is configured with what the harness plays (P1-TLS-2: "Operators configure each party's base
  URIs"): the MLC, three verifiers and three drafters with their model digests (P1-RTR-2: "The router knows each
  drafter's model digest by configuration").

Each prints how the reference implementation of the role is started so configured (``sdcp-conformance serve
ROLE …``). The role environments are imported where a function needs them: ``pki init`` without ``--iut`` stays
light.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from pathlib import Path

from sdcp_conformance.harness.target import DEFAULT_MODELS, TargetConfig, render_target
from sdcp_conformance.judge.status_budget import STATUS_TIMED_TTL_MS
from sdcp_conformance.transport.pki import Pki, init_pki

TARGET_FILE = "target.toml"
VERIFIER = "verifier"
"""The party name of a verifier under test."""


def _write_target(directory: Path, parties: Mapping[str, str], iut: str,
                  config: Callable[[Pki], TargetConfig]) -> tuple[Pki, Path]:
    """Mint the PKI for ``parties`` (the IUT's certificate the subject) and write ``directory/target.toml``."""
    pki = init_pki(directory, dict(parties), subject=iut)
    path = directory / TARGET_FILE
    path.write_text(render_target(config(pki), directory), encoding="utf-8")
    return pki, path


# --------------------------------------------------------------------------- a verifier under test


def verifier_parties(overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """Base URIs for the verifier under test and the harness's parties: free loopback ports unless given."""
    from sdcp_conformance.harness.environment import HARNESS_PARTIES
    from sdcp_conformance.transport.ports import loopback_base_uris

    return loopback_base_uris((VERIFIER, *HARNESS_PARTIES), overrides)


def write_verifier_target(directory: Path, overrides: Mapping[str, str] | None = None) -> tuple[Pki, Path]:
    """Mint the PKI for a verifier under test and the harness's parties, and write ``directory/target.toml``."""
    parties = verifier_parties(overrides)
    return _write_target(directory, parties, VERIFIER, lambda pki: TargetConfig(
        role="verifier", base_uri=parties[VERIFIER], ca=pki.ca_cert, models=DEFAULT_MODELS, pki=pki.directory,
        router=parties["router"], cache=parties["cache"], drafters=(parties["drafter-1"], parties["drafter-2"])))


def serve_verifier_command(pki: Pki) -> list[str]:
    """The command that starts the reference verifier as the IUT of this PKI."""
    words = ["sdcp-conformance", "serve", "verifier", "--pki", str(pki.directory), "--party", VERIFIER,
             "--router", pki.base_uris["router"]]
    for model in DEFAULT_MODELS:
        words += ["--model", model]
    return words


def verifier_iut_setup(directory: Path, overrides: Mapping[str, str]) -> tuple[Pki, Path, str]:
    """``pki init DIR --iut verifier``."""
    pki, path = write_verifier_target(directory, overrides)
    return pki, path, verifier_instructions(pki, path)


def verifier_instructions(pki: Pki, target_path: Path) -> str:
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
        f"  {shlex.join(serve_verifier_command(pki))}",
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


# --------------------------------------------------------------------------- a drafter under test


def drafter_parties(overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """Base URIs of the drafter under test and of the harness's parties: free loopback ports unless given."""
    from sdcp_conformance.harness.drafter_environment import HARNESS_PARTIES, IUT_PARTY
    from sdcp_conformance.transport.ports import loopback_base_uris

    return loopback_base_uris((IUT_PARTY, *HARNESS_PARTIES), overrides)


def write_drafter_target(directory: Path, overrides: Mapping[str, str] | None = None) -> tuple[Pki, Path]:
    """Mint the PKI for a drafter under test and the harness's parties, and write ``directory/target.toml``."""
    from sdcp_conformance.harness.drafter_environment import DRAFT_MODELS, IUT_PARTY, VERIFIER_PARTIES

    parties = drafter_parties(overrides)
    return _write_target(directory, parties, IUT_PARTY, lambda pki: TargetConfig(
        role="drafter", base_uri=parties[IUT_PARTY], ca=pki.ca_cert, models=DRAFT_MODELS, pki=pki.directory,
        router=parties["router"], cache=parties["cache"], verifiers=tuple(parties[name] for name in VERIFIER_PARTIES)))


def serve_drafter_command(pki: Pki) -> list[str]:
    """The command that starts the reference drafter as the IUT of this PKI."""
    from sdcp_conformance.harness.drafter_environment import DRAFT_MODELS, IUT_PARTY

    return ["sdcp-conformance", "serve", "drafter", "--pki", str(pki.directory), "--party", IUT_PARTY,
            "--router", pki.base_uris["router"], "--cache", pki.base_uris["cache"],
            *(word for model in DRAFT_MODELS for word in ("--model", model))]


def drafter_iut_setup(directory: Path, overrides: Mapping[str, str]) -> tuple[Pki, Path, str]:
    """``pki init DIR --iut drafter``."""
    pki, path = write_drafter_target(directory, overrides)
    return pki, path, drafter_instructions(pki, path)


def drafter_instructions(pki: Pki, target_path: Path) -> str:
    from sdcp_conformance.harness.drafter_environment import CTX_DRAFT_MODEL, DRAFT_MODEL, IUT_PARTY, VERIFIER_PARTIES
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
        f"  {shlex.join(serve_drafter_command(pki))}",
        "(its proposal timeout is 30 s; if yours is at most 10 s, add `proposal_timeout_s = N` under [harness]",
        " so that the case that loses a verdict by silence runs)",
        "",
        "Then certify it:",
        f"  sdcp-conformance certify --target {target_path}",
        "",
    ])


# --------------------------------------------------------------------------- a router under test


def write_router_target(directory: Path, overrides: Mapping[str, str] | None = None) -> tuple[Pki, Path]:
    """Mint the PKI for a router under test and the harness's parties, and write ``directory/target.toml``."""
    from sdcp_conformance.harness.router_environment import IUT_PARTY, router_parties, router_target

    parties = router_parties()
    parties.update({name: uri for name, uri in (overrides or {}).items() if name in parties})
    return _write_target(directory, parties, IUT_PARTY, lambda pki: router_target(pki, parties))


def serve_router_command(pki: Pki) -> list[str]:
    """The command that starts the reference router as the IUT of this PKI."""
    from sdcp_conformance.harness.router_environment import DRAFTER_MODELS, IUT_PARTY, VERIFIER_NAMES

    uris = pki.base_uris
    words = ["sdcp-conformance", "serve", "router", "--pki", str(pki.directory), "--party", IUT_PARTY,
             "--cache", uris["cache"]]
    for name in VERIFIER_NAMES:
        words += ["--verifier", uris[name]]
    for name, model in DRAFTER_MODELS:
        words += ["--drafter", f"{uris[name]}={model}"]
    return words


def router_iut_setup(directory: Path, overrides: Mapping[str, str]) -> tuple[Pki, Path, str]:
    """``pki init DIR --iut router``."""
    pki, path = write_router_target(directory, overrides)
    return pki, path, router_instructions(pki, path)


def router_instructions(pki: Pki, target_path: Path) -> str:
    from sdcp_conformance.harness.router_environment import (
        CLIENT_IDENTITY,
        DRAFTER_MODELS,
        IUT_PARTY,
        TARGET_MODEL,
        VERIFIER_NAMES,
    )
    from sdcp_conformance.models.registry import mock_model

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
        f"  {shlex.join(serve_router_command(pki))}",
        "",
        "Then certify it:",
        f"  sdcp-conformance certify --target {target_path}",
        "",
    ])


__all__ = [
    "TARGET_FILE",
    "VERIFIER",
    "drafter_instructions",
    "drafter_iut_setup",
    "drafter_parties",
    "router_instructions",
    "router_iut_setup",
    "serve_drafter_command",
    "serve_router_command",
    "serve_verifier_command",
    "verifier_instructions",
    "verifier_iut_setup",
    "verifier_parties",
    "write_drafter_target",
    "write_router_target",
    "write_verifier_target",
]
