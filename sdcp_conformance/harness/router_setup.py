"""``pki init DIR --iut router``: mint the router's certificate and the harness's, write the target, say how to start.

The router under test is configured with what the harness plays (P1-TLS-2:
"Operators configure each party's base URIs"): the MLC, three verifiers and
three drafters with their model digests (P1-RTR-2: "The router knows each
drafter's model digest by configuration"). The instructions print all of it
and the command that starts the reference router so configured.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path

from sdcp_conformance.harness.router_environment import (
    CLIENT_IDENTITY,
    DRAFTER_MODELS,
    IUT_PARTY,
    TARGET_MODEL,
    VERIFIER_NAMES,
    router_parties,
    router_target,
)
from sdcp_conformance.harness.target import render_target
from sdcp_conformance.models.registry import mock_model
from sdcp_conformance.transport.pki import Pki, init_pki

TARGET_FILE = "target.toml"


def write_router_target(directory: Path, overrides: Mapping[str, str] | None = None) -> tuple[Pki, Path]:
    """Mint the PKI for a router under test and the harness's parties, and write ``directory/target.toml``."""
    parties = router_parties()
    parties.update({name: uri for name, uri in (overrides or {}).items() if name in parties})
    pki = init_pki(directory, parties, subject=IUT_PARTY)
    path = directory / TARGET_FILE
    path.write_text(render_target(router_target(pki, parties), directory), encoding="utf-8")
    return pki, path


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


def router_iut_setup(directory: Path, overrides: Mapping[str, str]) -> tuple[Pki, Path, str]:
    """``pki init DIR --iut router`` (:data:`~sdcp_conformance.harness.suites.IutSetup`)."""
    pki, path = write_router_target(directory, overrides)
    return pki, path, router_instructions(pki, path)


def router_instructions(pki: Pki, target_path: Path) -> str:
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


__all__ = ["TARGET_FILE", "router_instructions", "router_iut_setup", "serve_router_command", "write_router_target"]
