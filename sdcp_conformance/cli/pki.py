"""The ``sdcp-conformance pki`` commands: mint and inspect a test PKI, or prepare a vendor's IUT (``--iut ROLE``).

It lives in the harness layer because ``--iut`` writes a target file; the
PKI itself is :mod:`sdcp_conformance.transport.pki`.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import click

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.harness.role_spec import spec_of
from sdcp_conformance.harness.suites import SUITES
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

IUT_PARTY_NAMES: dict[str, tuple[str, ...]] = {
    "verifier": ("verifier", "router", "cache", "drafter-1", "drafter-2"),
    "drafter": ("drafter", "router", "cache", "verifier-1", "verifier-2"),
    "router": ("router", "cache", "client", "verifier-1", "verifier-2", "verifier-3", "drafter-1", "drafter-2",
               "drafter-3"),
}
"""``pki init --iut ROLE``: the IUT's party and the parties the harness plays, the names ``--party`` may set
(kept here so that ``--help`` says them without importing the role; a test holds them equal to the setups')."""


def party_names() -> tuple[str, ...]:
    """The parties of a plain ``pki init`` (:data:`DEFAULT_PARTIES`)."""
    return tuple(spec.partition("=")[0] for spec in DEFAULT_PARTIES)


PARTY_HELP = (
    "Set a party's base URI (repeatable; https://, ending in '/'). NAME is one of "
    f"{', '.join(party_names())}; with --iut verifier: {', '.join(IUT_PARTY_NAMES['verifier'])}; "
    f"--iut drafter: {', '.join(IUT_PARTY_NAMES['drafter'])}; --iut router: {', '.join(IUT_PARTY_NAMES['router'])}. "
    "The other parties keep their defaults (example ports on 127.0.0.1; with --iut, free loopback ports)."
)


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


def make_folder(directory: Path) -> None:
    """Create ``directory`` (and its parents) now, so a folder that cannot be made is one line, not a traceback."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise click.UsageError(f"cannot create the folder {directory}: {exc.strerror or exc}; choose a folder "
                               "you can write (every part of its path must be a folder)") from exc


def _parse_parties(specs: tuple[str, ...], known: tuple[str, ...] | None, what: str) -> dict[str, str]:
    """NAME=BASE_URI pairs; with ``known``, an unknown NAME is refused, naming the valid ones."""
    parties: dict[str, str] = {}
    for spec in specs:
        name, sep, uri = spec.partition("=")
        if not sep or not name or not uri:
            raise click.BadParameter(f"{spec!r} is not NAME=BASE_URI", param_hint="--party")
        if known is not None and name not in known:
            from difflib import get_close_matches

            close = get_close_matches(name, known, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise click.BadParameter(f"no party {name!r} {what}; {hint}the parties are {', '.join(known)}",
                                     param_hint="--party")
        if not uri.startswith("https://") or not uri.endswith("/"):  # P1-ID-1, as init_pki checks it
            raise click.BadParameter(f"{name}: base URI {uri!r} must be https:// and end with '/' (P1-ID-1)",
                                     param_hint="--party")
        parties[name] = uri
    return parties


def _port_warning(given: dict[str, str], made: dict[str, str], iut: str | None) -> str | None:
    """The base URIs ``pki init`` chose itself: their ports are bound only when the parties start."""
    chosen = sorted(name for name in made if name not in given and (iut is None or name not in (iut, "client")))
    if not chosen:
        return None
    if iut is not None:
        ports = ", ".join(f"{name} :{urlsplit(made[name]).port}" for name in chosen)
        return (f"warning: the harness's listeners ({ports}) were on free ports just now but are bound only when "
                "`certify` starts; if another process takes one meanwhile, `certify` exits 4 naming it: mint again "
                "(`pki init --force`) or choose the ports with --party NAME=BASE_URI")
    return (f"warning: the ports of {', '.join(chosen)} are examples, not checked, bound only when each party "
            "starts; if one is taken, choose another with --party NAME=BASE_URI (or `pki issue`)")


@click.group()
def pki() -> None:
    """Test PKI: a CA and URI-SAN certificates for SDCP parties (P1-ID-1)."""


@pki.command("init")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option("--party", "party_specs", multiple=True, metavar="NAME=BASE_URI", help=PARTY_HELP)
@click.option("--custom-parties", is_flag=True, default=False,
              help="Without --iut: the --party pairs are the whole PKI, of any names (instead of setting some of "
              "the default parties).")
@click.option("--subject", help="Party the negative-test certificates impersonate.")
@click.option("--iut", type=click.Choice(sorted(SUITES)), default=None,
              help="Mint for an implementation under test and the conformance harness (free loopback ports; "
              "--party overrides a base URI), write DIRECTORY/target.toml and print how to start the IUT.")
@click.option("--http", type=click.Choice(["2", "3", "both"]), default=None,
              help="With --iut: what the IUT and the harness's parties speak, written as the target's `http` "
              "(HTTP/2 on TCP, HTTP/3 on UDP, or both on each base URI's port; default 2).")
@click.option("--force", is_flag=True, default=False,
              help="Mint into a folder that is not empty (replacing any CA there: IUTs that trust the old one fail).")
def init_command(directory: Path, party_specs: tuple[str, ...], custom_parties: bool, subject: str | None,
                 iut: str | None, http: str | None, force: bool) -> None:
    """Mint a CA, party certificates and negative-test certificates into DIRECTORY (missing or empty)."""
    if http is not None and iut is None:
        raise click.UsageError("--http goes with --iut (it is written in the target file)")
    refuse_non_empty(directory, force)
    if iut is not None:
        if custom_parties:
            raise click.UsageError("--custom-parties goes without --iut (an IUT's parties are fixed by its role)")
        given = _parse_parties(party_specs, IUT_PARTY_NAMES[iut], f"when minting for a {iut} under test")
        make_folder(directory)
        uris = _init_for_iut(iut, directory, given, http or "2")
        click.echo(_attestation_key(directory), nl=False)
        _warn(_port_warning(given, uris, iut))
        return
    if custom_parties:
        if not party_specs:
            raise click.UsageError("--custom-parties needs at least one --party NAME=BASE_URI")
        parties = given = _parse_parties(party_specs, None, "")
    else:
        given = _parse_parties(party_specs, party_names(), "in a plain PKI (--custom-parties mints others)")
        parties = {**_parse_parties(DEFAULT_PARTIES, None, ""), **given}
    make_folder(directory)
    try:
        made = init_pki(directory, parties, subject=subject)
    except InvalidArgument as exc:
        raise click.UsageError(str(exc)) from exc
    click.echo(parties_text(made), nl=False)
    click.echo(_attestation_key(directory), nl=False)
    _warn(_port_warning(given, made.base_uris, None))


def _warn(line: str | None) -> None:
    if line is not None:
        click.echo(line, err=True)


def _init_for_iut(role: str, directory: Path, overrides: dict[str, str], http: str = "2") -> dict[str, str]:
    from sdcp_conformance.transport.listeners import http_versions

    try:
        made, _target, instructions = spec_of(role).iut_setup(directory, overrides, http_versions(http, "--http"))
    except InvalidArgument as exc:
        raise click.UsageError(str(exc)) from exc
    click.echo(instructions, nl=False)
    return dict(made.base_uris)


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


__all__ = ["DEFAULT_PARTIES", "IUT_PARTY_NAMES", "make_folder", "party_names", "pki", "refuse_non_empty"]
