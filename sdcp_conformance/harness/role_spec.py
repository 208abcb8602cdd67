"""A role spec: what the harness plays around an IUT of one role, and how a vendor is told to set it up.

Each IUT role has one spec (``sdcp_conformance.harness.specs.<role>:SPEC``) saying which parties the harness plays
around it (their names in the PKI, the listeners the target file gives them), the target its certification runs
against, the command that starts the role's reference so configured, and what ``pki init DIR --iut ROLE`` prints.
Everything built from a spec is built here once: the base URIs on free loopback ports, the PKI minted for them
(the IUT's certificate the subject), the target file, the embedded target a certification without a target file
runs. The environment class of the spec (:class:`~.environment.RoleEnvironment`'s subclass) plays those parties.

- A **verifier** under test is configured with the router it reports status to and accepts router-only requests
  from (P1-ID-2), and the mock target and draft models (P1-MODEL-1); the harness plays the router, the MLC and the
  drafters.
- A **drafter** is configured with (P1-DRF-1, P1-TLS-2) the router identity it accepts assignments from and
  reports status to, the MLC base URI where it writes q_rows, and the shipped draft models it serves.
- A **router** is configured with what the harness plays (P1-TLS-2: "Operators configure each party's base
  URIs"): the MLC, three verifiers and three drafters with their model digests (P1-RTR-2).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from sdcp_conformance.harness.target import TargetConfig, render_target
from sdcp_conformance.transport.listeners import DEFAULT_HTTP, HttpVersions
from sdcp_conformance.transport.pki import Pki, init_pki
from sdcp_conformance.transport.ports import loopback_base_uris

TARGET_FILE = "target.toml"
"""What ``pki init DIR --iut ROLE`` writes beside the PKI."""


@dataclass(frozen=True)
class RoleSpec:
    """The parties the harness plays around an IUT of ``role``, and the setup a vendor is given."""

    role: str
    iut_party: str
    """The IUT's party name in the PKI (its certificate's subject)."""
    played: tuple[str, ...]
    """The parties the harness plays (and the front client of a router), by their PKI names."""
    target: Callable[[Pki, Mapping[str, str]], TargetConfig]
    """The target for a minted PKI and every party's base URI."""
    serve_command: Callable[[Pki], list[str]]
    """The command that starts the role's reference as the IUT of that PKI."""
    instructions: Callable[[Pki, Path, list[str]], str]
    """What ``pki init --iut ROLE`` prints: how to configure and start the IUT (the reference's :meth:`serve_line`
    given), then certify it."""
    environment: type[Any]
    """The environment class that plays the parties (a :class:`~.environment.RoleEnvironment`; not imported here,
    which the environment imports)."""

    def parties(self, overrides: Mapping[str, str] | None = None) -> dict[str, str]:
        """Base URIs of the IUT and of every played party: free loopback ports unless ``overrides`` sets them
        (an override naming no party of the role is ignored)."""
        return loopback_base_uris((self.iut_party, *self.played), overrides)

    def write_target(self, directory: Path, overrides: Mapping[str, str] | None = None,
                     http: HttpVersions = DEFAULT_HTTP) -> tuple[Pki, Path]:
        """Mint the PKI for the IUT and the played parties, and write ``directory/target.toml`` (``http``: what
        every listener speaks, :mod:`~sdcp_conformance.transport.listeners`)."""
        parties = self.parties(overrides)
        pki = init_pki(directory, parties, subject=self.iut_party)
        path = directory / TARGET_FILE
        path.write_text(render_target(replace(self.target(pki, parties), http=http), directory), encoding="utf-8")
        return pki, path

    def serve_line(self, pki: Pki, http: HttpVersions = DEFAULT_HTTP) -> list[str]:
        """The command that starts the role's reference as the IUT of ``pki``, speaking ``http``."""
        return [*self.serve_command(pki), *(["--http", http] if http != DEFAULT_HTTP else [])]

    def iut_setup(self, directory: Path, overrides: Mapping[str, str],
                  http: HttpVersions = DEFAULT_HTTP) -> tuple[Pki, Path, str]:
        """``pki init DIR --iut ROLE [--http V]``: the PKI, the target file, and what to tell the vendor."""
        pki, path = self.write_target(directory, overrides, http)
        text = self.instructions(pki, path, self.serve_line(pki, http))
        return pki, path, f"{text.rstrip()}\n\n{HTTP_WORDS[http]}\n"

    def embedded_target(self, folder: Path, http: HttpVersions = DEFAULT_HTTP) -> TargetConfig:
        """A PKI under ``folder`` and the target of the role's reference run in-process on free loopback ports."""
        parties = self.parties()
        return replace(self.target(init_pki(folder / "pki", parties, subject=self.iut_party), parties), http=http)


HTTP_WORDS: dict[str, str] = {
    "2": "Transport (http = \"2\" in the target): HTTP/2 over TLS 1.3 on TCP, mutual certificates (§5.1).",
    "3": "Transport (http = \"3\" in the target): HTTP/3 only, QUIC on UDP at each base URI's port, ALPN h3, mutual "
         "certificates (§5.1); the harness's parties listen on UDP too.",
    "both": "Transport (http = \"both\" in the target): HTTP/2 on TCP and HTTP/3 on UDP at each base URI's port, "
            "both requiring client certificates (§5.1); the harness checks each listener.",
}


def spec_of(role: str) -> RoleSpec:
    """The spec of ``role`` (its module imported now); an unknown role is an :class:`InvalidArgument`."""
    from sdcp_conformance.harness.suites import load_object, role_suite

    spec: Any = load_object(role_suite(role).spec)
    return spec  # type: ignore[no-any-return]


__all__ = ["TARGET_FILE", "RoleSpec", "spec_of"]
