"""``pki init DIR --iut drafter``: certificates for a drafter under test and the harness, and its target file.

The drafter is configured with (P1-DRF-1, P1-TLS-2) the router identity it
accepts assignments from and reports status to, the MLC base URI where it
writes q_rows, and the shipped draft models it serves (P1-MODEL-1): the
bigram one every case uses and the context-dependent one of the cases that
see more than the last token (a target without it skips those); the printed
instructions say so, and how the reference drafter is started with them
(``sdcp-conformance serve drafter …``).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path

from sdcp_conformance.harness.target import TargetConfig, render_target
from sdcp_conformance.transport.pki import Pki, init_pki

TARGET_FILE = "target.toml"


def drafter_parties(overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """Base URIs of the drafter under test and of the harness's parties: free loopback ports unless given."""
    from sdcp_conformance.harness.drafter_environment import HARNESS_PARTIES, IUT_PARTY
    from sdcp_conformance.transport.ports import loopback_base_uris

    return loopback_base_uris((IUT_PARTY, *HARNESS_PARTIES), overrides)


def write_drafter_target(directory: Path, overrides: Mapping[str, str] | None = None) -> tuple[Pki, Path]:
    from sdcp_conformance.harness.drafter_environment import DRAFT_MODELS, IUT_PARTY, VERIFIER_PARTIES

    parties = drafter_parties(overrides)
    pki = init_pki(directory, parties, subject=IUT_PARTY)
    config = TargetConfig(role="drafter", base_uri=parties[IUT_PARTY], ca=pki.ca_cert, models=DRAFT_MODELS,
                          pki=pki.directory, router=parties["router"], cache=parties["cache"],
                          verifiers=tuple(parties[name] for name in VERIFIER_PARTIES))
    path = directory / TARGET_FILE
    path.write_text(render_target(config, directory), encoding="utf-8")
    return pki, path


def drafter_serve_command(pki: Pki) -> list[str]:
    """The command that starts the reference drafter as the IUT of this PKI."""
    from sdcp_conformance.harness.drafter_environment import DRAFT_MODELS, IUT_PARTY

    return ["sdcp-conformance", "serve", "drafter", "--pki", str(pki.directory), "--party", IUT_PARTY,
            "--router", pki.base_uris["router"], "--cache", pki.base_uris["cache"],
            *(word for model in DRAFT_MODELS for word in ("--model", model))]


def drafter_iut_setup(directory: Path, overrides: Mapping[str, str]) -> tuple[Pki, Path, str]:
    """``pki init DIR --iut drafter`` (:data:`~sdcp_conformance.harness.suites.IutSetup`)."""
    pki, path = write_drafter_target(directory, overrides)
    return pki, path, drafter_instructions(pki, path)


def drafter_instructions(pki: Pki, target_path: Path) -> str:
    from sdcp_conformance.harness.drafter_environment import CTX_DRAFT_MODEL, DRAFT_MODEL, IUT_PARTY, VERIFIER_PARTIES
    from sdcp_conformance.models.registry import mock_model
    from sdcp_conformance.suites.status_judging import STATUS_TIMED_TTL_MS

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
        f"  {shlex.join(drafter_serve_command(pki))}",
        "(its proposal timeout is 30 s; if yours is at most 10 s, add `proposal_timeout_s = N` under [harness]",
        " so that the case that loses a verdict by silence runs)",
        "",
        "Then certify it:",
        f"  sdcp-conformance certify --target {target_path}",
        "",
    ])


__all__ = ["TARGET_FILE", "drafter_instructions", "drafter_iut_setup", "drafter_parties", "drafter_serve_command",
           "write_drafter_target"]
