"""The ``sdcp-conformance`` command line."""

from __future__ import annotations

import click
from rich.console import Console
from rich.table import Table

from sdcp_conformance import __version__
from sdcp_conformance.cache.cli import serve_cache
from sdcp_conformance.fuzz.cli import fuzz
from sdcp_conformance.harness.cli import certify
from sdcp_conformance.harness.pki_cli import pki
from sdcp_conformance.mutants.cli import selftest
from sdcp_conformance.reference.cli import generate, serve

CONFORMANCE_AREAS: tuple[tuple[str, str], ...] = (
    ("transport", "§5.1 HTTP/2 or HTTP/3 over TLS 1.3 with mutual certificates"),
    ("contract", "§4.1 session contract validation and contract digest"),
    ("session", "§6.1 session creation, d[0] and drafter assignment"),
    ("authorization", "§6.3 step 1: only the latest assigned drafter"),
    ("fencing", "§6.3 step 2, §6.8, §6.9: epochs and fenced commit logs"),
    ("idempotency", "§6.3 step 3: retried and concurrent identical proposals"),
    ("stale-base", "§4.2, §6.3 step 4: digest chain, base and round checks"),
    ("limits", "§6.2, §6.5.1: M within m_max and m_cap"),
    ("q-preconditions", "§6.3 step 5: draft rows fetched and checked before any draw"),
    ("rule-1", "§6.4 rule 1: greedy exactness"),
    ("rule-2", "§6.4 rule 2: speculative sampling, seeded exactness and distribution"),
    ("commit-log", "§6.3 commit, §6.8: records before verdicts and output"),
    ("output", "§6.7: stable indices, long-poll, epochs, final message"),
    ("truncation", "§6.3: stop tokens and max_new"),
    ("escalation", "§6.5: low rounds, reduce, switch, self_decode, fail"),
    ("policy", "§6.6: sampling policy updates from from_round"),
    ("recovery", "§6.9: failover resume at a new epoch"),
)


@click.group(invoke_without_command=True)
@click.version_option(__version__, prog_name="sdcp-conformance")
@click.pass_context
def main(ctx: click.Context) -> None:
    """Conformance harness and fuzzer for SDCP implementations."""
    if ctx.invoked_subcommand is None:
        ctx.invoke(info)


@main.command()
def info() -> None:
    """Print the version and the conformance areas the harness covers."""
    console = Console()
    console.print(f"sdcp-conformance {__version__}")
    table = Table(title="Conformance areas")
    table.add_column("area")
    table.add_column("what the draft requires")
    for area, text in CONFORMANCE_AREAS:
        table.add_row(area, text)
    console.print(table)


serve.add_command(serve_cache)
main.add_command(serve)
main.add_command(generate)
main.add_command(selftest)
main.add_command(pki)
main.add_command(certify)
main.add_command(fuzz)


if __name__ == "__main__":
    main()
