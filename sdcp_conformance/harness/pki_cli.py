"""The ``sdcp-conformance pki`` commands: mint and inspect a test PKI, or prepare a vendor's IUT (``--iut ROLE``).

It lives in the harness layer because ``--iut`` writes a target file; the
PKI itself is :mod:`sdcp_conformance.transport.pki`.
"""

from __future__ import annotations

from pathlib import Path

import click

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.harness.suites import SUITES, load_object, role_suite
from sdcp_conformance.transport.pki import init_pki, issue_party, load_pki, parties_text

DEFAULT_PARTIES = (
    "router=https://127.0.0.1:8441/router/",
    "verifier=https://127.0.0.1:8442/verifier/",
    "drafter-1=https://127.0.0.1:8443/drafter-1/",
    "drafter-2=https://127.0.0.1:8444/drafter-2/",
    "cache=https://127.0.0.1:8445/cache/",
    "harness=https://127.0.0.1:8440/harness/",
)
"""D-PKI-3: without ``--party`` the CLI mints these (ports are examples; reissue to change)."""


def refuse_non_empty(directory: Path, force: bool) -> None:
    """D-PKI-4: minting over an existing folder replaces its CA, and every IUT that trusts the old one then fails
    TLS; so ``pki init`` writes only into a missing or empty folder unless told ``--force``."""
    if directory.exists() and not directory.is_dir():
        raise click.UsageError(f"{directory} exists and is not a folder")
    if directory.is_dir() and any(directory.iterdir()) and not force:
        what = "a PKI (its CA would be replaced)" if (directory / "pki.json").is_file() else "files"
        raise click.UsageError(f"{directory} already holds {what}; choose an empty folder, or pass --force to "
                               "mint a new CA over it")


def _attestation_key(directory: Path) -> str:
    """Mint the Ed25519 key that signs certification bundles (``certify --bundle``), D-RPT-8."""
    from sdcp_conformance.report.bundle import generate_key

    private, public = generate_key(directory)
    return f"bundle signing key: {private} (public: {public})\n"


def _parse_parties(specs: tuple[str, ...]) -> dict[str, str]:
    parties: dict[str, str] = {}
    for spec in specs:
        name, sep, uri = spec.partition("=")
        if not sep or not name or not uri:
            raise click.BadParameter(f"{spec!r} is not NAME=BASE_URI", param_hint="--party")
        parties[name] = uri
    return parties


@click.group()
def pki() -> None:
    """Test PKI: a CA and URI-SAN certificates for SDCP parties (P1-ID-1)."""


@pki.command("init")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--party",
    "party_specs",
    multiple=True,
    metavar="NAME=BASE_URI",
    help="A party and its base URI (repeatable). Default: router, verifier, two drafters, "
    "cache and harness on 127.0.0.1.",
)
@click.option("--subject", help="Party the negative-test certificates impersonate.")
@click.option("--iut", type=click.Choice(sorted(SUITES)), default=None,
              help="Mint for an implementation under test and the conformance harness (free loopback ports; "
              "--party overrides a base URI), write DIRECTORY/target.toml and print how to start the IUT.")
@click.option("--force", is_flag=True, default=False,
              help="Mint into a folder that is not empty (replacing any CA there: IUTs that trust the old one fail).")
def init_command(directory: Path, party_specs: tuple[str, ...], subject: str | None, iut: str | None,
                 force: bool) -> None:
    """Mint a CA, party certificates and negative-test certificates into DIRECTORY (missing or empty)."""
    refuse_non_empty(directory, force)
    if iut is not None:
        _init_for_iut(iut, directory, _parse_parties(party_specs))
        click.echo(_attestation_key(directory), nl=False)
        return
    parties = _parse_parties(party_specs or DEFAULT_PARTIES)
    try:
        made = init_pki(directory, parties, subject=subject)
    except InvalidArgument as exc:
        raise click.UsageError(str(exc)) from exc
    click.echo(parties_text(made), nl=False)
    click.echo(_attestation_key(directory), nl=False)


def _init_for_iut(role: str, directory: Path, overrides: dict[str, str]) -> None:
    setup = load_object(role_suite(role).iut_setup)
    try:
        _made, _target, instructions = setup(directory, overrides)
    except InvalidArgument as exc:
        raise click.UsageError(str(exc)) from exc
    click.echo(instructions, nl=False)


@pki.command("issue")
@click.argument("directory", type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.argument("name")
@click.argument("base_uri")
def issue_command(directory: Path, name: str, base_uri: str) -> None:
    """(Re-)issue the certificate of party NAME for BASE_URI in an existing PKI."""
    try:
        issue_party(load_pki(directory), name, base_uri)
    except InvalidArgument as exc:
        raise click.UsageError(str(exc)) from exc
    click.echo(f"issued {name} for {base_uri}")


__all__ = ["pki", "refuse_non_empty"]
