"""``sdcp-conformance declare --role ROLE``: the declaration template a vendor fills in (D-JUDGE-DECL-1).

Written to ``sdcp-declaration.toml`` in the current folder unless ``--out`` says otherwise; an existing file is
never overwritten (it holds a vendor's claims). ``certify --declaration FILE`` then follows it.
"""

from __future__ import annotations

from pathlib import Path

import click

from sdcp_conformance.harness.suites import SUITES
from sdcp_conformance.judge.declaration import features_of, template

DEFAULT_NAME = "sdcp-declaration.toml"


@click.command("declare")
@click.option("--role", type=click.Choice(sorted(SUITES)), required=True, help="The role of the IUT.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=Path(DEFAULT_NAME),
              show_default=True, help="Where to write the declaration.")
def declare(role: str, out: Path) -> None:
    """Write the declaration a vendor fills in: its implementation and the optional features it claims."""
    if out.exists():
        raise click.UsageError(f"{out} exists: a declaration is never overwritten (give --out another file)")
    try:
        out.write_text(template(role), encoding="utf-8")
    except OSError as exc:
        raise click.UsageError(f"cannot write {out}: {exc.strerror}") from exc
    click.echo(f"wrote {out}: fill in implementation, version (a tag or commit) and contact, and set each of the "
               f"{len(features_of(role))} features your {role} offers to true; then "
               f"`sdcp-conformance certify --declaration {out} …`")


__all__ = ["DEFAULT_NAME", "declare"]
