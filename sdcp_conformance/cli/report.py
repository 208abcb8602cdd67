"""``sdcp-conformance report …`` (show, diff, html, merge) and ``sdcp-conformance bundle verify``.

They read what ``certify`` wrote (a run folder with ``report.json``), import
neither torch nor the suites (except ``merge``, which recomputes coverage over
the suite), and answer in well under a second. Exit
status: 0 done, 1 ``report diff`` found a regression or ``bundle verify``
rejected the bundle, 2 a usage error (no such report, not a report).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from sdcp_conformance.errors import InvalidArgument

EXIT_REGRESSION = 1
EXIT_REJECTED = 1


def _load(where: Path, *, with_evidence: bool = False) -> dict[str, object]:
    from sdcp_conformance.report.json_report import load_document

    try:
        return load_document(where, with_evidence=with_evidence)
    except InvalidArgument as exc:
        raise click.UsageError(str(exc)) from exc


@click.group("report")
def report() -> None:
    """Look at past runs: the console view, a comparison of two runs, the HTML page."""


@report.command("show")
@click.argument("directory", type=click.Path(exists=True, path_type=Path))
@click.option("--transcript", "tail", type=click.IntRange(0), default=4, show_default=True,
              help="How many of each flagged case's last exchanges to show.")
def show(directory: Path, tail: int) -> None:
    """Print the console view of the run in DIRECTORY (what `certify` printed at its end)."""
    from sdcp_conformance.report.console import log_console, print_document

    document = _load(directory)
    console = log_console()
    run = document["run"]
    assert isinstance(run, dict)
    console.print(f"{directory}: {run.get('role')} at {run.get('iut')}, started {run.get('started')}",
                  highlight=False, soft_wrap=True)
    print_document(console, document, tail=tail)


@report.command("merge")
@click.argument("shards", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("reports") / "merged",
              show_default=True, help="Where the merged report.json, junit.xml and report.html go.")
def merge(shards: tuple[Path, ...], out: Path) -> None:
    """Join the reports of `certify --shard K/N` runs (every K once) into the report of the whole run.

    Exits as certify would have: 0 PASSED, 1 FAILED, 3 INCOMPLETE."""
    from sdcp_conformance.report.console import log_console, print_document
    from sdcp_conformance.report.merge import merge_reports

    try:
        document, written, merged = merge_reports(list(shards), out)
    except InvalidArgument as exc:
        raise click.UsageError(str(exc)) from exc
    console = log_console()
    console.print(f"merged {len(shards)} shards into {out}", highlight=False, soft_wrap=True)
    print_document(console, document, reports=written)
    if merged.exit_code:
        sys.exit(merged.exit_code)


@report.command("diff")
@click.argument("before", type=click.Path(exists=True, path_type=Path))
@click.argument("after", type=click.Path(exists=True, path_type=Path))
@click.option("--force", is_flag=True, default=False,
              help="Compare runs of different roles or targets anyway (their cases then mostly show as new and "
              "removed).")
def diff(before: Path, after: Path, force: bool) -> None:
    """Compare two runs by case ID: regressions, fixes, new and removed cases; exit 1 on any regression.

    Runs of different roles or targets (target files; the embedded reference is one target, whatever its mutant)
    are refused unless --force."""
    from sdcp_conformance.report.diff import diff_documents, mismatch, render_diff

    documents = _load(before), _load(after)
    different = mismatch(*documents)
    if different and not force:
        raise click.UsageError(f"{before} and {after} are runs of different {different}: their cases do not "
                               "compare; diff runs of one role and target, or pass --force")
    result = diff_documents(*documents)
    for line in render_diff(result, str(before), str(after)):
        click.echo(line)
    sys.exit(result.exit_code)


@report.command("html")
@click.argument("directory", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Where to write the page (default: DIRECTORY/report.html).")
def html(directory: Path, output: Path | None) -> None:
    """(Re)build the self-contained HTML report of the run in DIRECTORY."""
    from sdcp_conformance.report.html import HTML_NAME, write_html

    written = write_html(output or directory / HTML_NAME, _load(directory, with_evidence=True))
    click.echo(f"wrote {written}")


# `report merge DIR…` (issue 17) goes here, as one more command of this group.


@click.group("bundle")
def bundle() -> None:
    """Signed certification bundles (`certify --bundle FILE` writes them)."""


@bundle.command("verify")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--key", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="The signer's Ed25519 public key (PEM) to pin; default: the key the bundle carries.")
def verify(file: Path, key: Path | None) -> None:
    """Check a bundle's in-toto attestation (signature, every member's SHA-256) and print what was certified."""
    from sdcp_conformance.report.bundle import BundleRejected, describe_verified, verify_bundle

    try:
        verified = verify_bundle(file, key=key)
    except BundleRejected as exc:
        click.echo(f"REJECTED: {exc}", err=True)
        sys.exit(EXIT_REJECTED)
    except InvalidArgument as exc:
        raise click.UsageError(str(exc)) from exc
    for line in describe_verified(verified, file):
        click.echo(line)


__all__ = ["bundle", "report"]
