"""``sdcp-conformance check --target FILE``: the preflight, one line per check (:mod:`.check`).

Exit status 0 when nothing failed, 1 when a check failed, 2 for an unusable
target file. It imports no torch: the first thing a vendor runs answers at once.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from sdcp_conformance.errors import InvalidArgument


@click.command("check")
@click.option("--target", "target_path", required=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path), help="Target description (TOML).")
@click.option("--timeout", "timeout_s", type=click.FloatRange(0.1, 60), default=5.0, show_default=True,
              help="Deadline of each connection, in seconds.")
def check(target_path: Path, timeout_s: float) -> None:
    """Preflight: is the IUT of a target file ready to be certified? One line per check."""
    from sdcp_conformance.harness.check import preflight
    from sdcp_conformance.harness.target import load_target
    from sdcp_conformance.transport.pki import load_pki

    try:
        config = load_target(target_path)
        load_pki(config.pki)
    except InvalidArgument as exc:
        raise click.UsageError(str(exc)) from exc
    click.echo(f"preflight of the {config.role} at {config.base_uri} ({target_path}):")
    result = preflight(config, timeout_s=timeout_s)
    for line in result.lines():
        click.echo(line)
    verdict = "ready to certify" if result.ok else "not ready: fix the FAIL lines first"
    click.echo(f"{verdict} (sdcp-conformance certify --target {target_path})")
    sys.exit(0 if result.ok else 1)


__all__ = ["check"]
