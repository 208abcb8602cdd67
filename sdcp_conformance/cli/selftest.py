"""``sdcp-conformance selftest``: run the suite against the reference and every mutant, print the kill matrix.

After the matrix comes, per mutant, every case that killed it with its
verdict and message, so a reader sees what each planted bug looks like from
outside. The in-process servers' log lines (a mutant's handler raising
shows as a logged traceback) go to ``--log FILE``, not above the output.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from sdcp_conformance.cli.seeds import SEED_MAX, SEED_METAVAR, drawn_line, resolve_seed, seed_option
from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.harness.runner import CaseResult
from sdcp_conformance.harness.runner import Progress as CaseProgress
from sdcp_conformance.mutants.base import Mutant
from sdcp_conformance.mutants.catalogue import ROLES, find_mutant, killers_path, mutants_for, write_killers
from sdcp_conformance.mutants.selftest import SelftestReport, run_selftest
from sdcp_conformance.transport import event_loops


@click.command()
@click.option("--mutant", "names", multiple=True, metavar="NAME", help="Run only this mutant (repeatable).")
@click.option("--only", "selectors", multiple=True, metavar="ID-OR-AREA",
              help="Run only these cases (IDs, ID prefixes or areas; repeatable).")
@seed_option("Seed of the case order.")
@click.option("--jobs", type=click.IntRange(1, 16), default=1, show_default=True,
              help="Mutants certified at the same time.")
@click.option("--no-reference", is_flag=True, help="Skip the run against the clean reference.")
@click.option("--write-killers", "write_killers_flag", is_flag=True,
              help="Record each mutant's killing cases in killers.json.")
@click.option("--killers-file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Where --write-killers writes (default: the role's killers file in the package).")
@click.option("--role", type=click.Choice(sorted(ROLES)), default="verifier", show_default=True,
              help="Whose reference and mutants to certify.")
@click.option("--log", "log_path", type=click.Path(dir_okay=False, path_type=Path),
              default=Path(".sdcp-selftest") / "servers.log", show_default=True,
              help="Where the in-process servers' warnings and tracebacks go.")
@click.option("--list", "list_only", is_flag=True, default=False,
              help="List the role's mutants (name, area, the planted bug) and exit; `certify --mutant NAME` "
              "certifies one.")
@click.option("--seeds", "seed_list", default=None, metavar="S1,S2,…",
              help="Instead of the full matrix: run each mutant against its recorded killers once per seed and "
              "print which seeds, if any, it survived (a kill must not depend on the seed).")
def selftest(names: tuple[str, ...], selectors: tuple[str, ...], seed: int | None, jobs: int, no_reference: bool,
             write_killers_flag: bool, killers_file: Path | None, role: str, log_path: Path, list_only: bool,
             seed_list: str | None) -> None:
    """Certify a role's reference and every mutant; exit non-zero if the reference fails or a mutant survives."""
    from sdcp_conformance.cli.extras import require
    from sdcp_conformance.report.logs import captured_logs

    if list_only:
        for mutant in mutants_for(role):
            click.echo(f"{mutant.name:36} {mutant.area:16} {' '.join(mutant.description.split())}")
        click.echo(f"{len(mutants_for(role))} {role} mutants; `sdcp-conformance certify --role {role} --mutant NAME` "
                   "certifies one")
        return
    require("reference", "`sdcp-conformance selftest` (the embedded reference and its mutants)")

    console = Console()
    if not console.is_terminal:  # a log file: wide enough that case IDs are not cut
        console = Console(width=200)
    try:
        mutants = [find_mutant(name, role)[1] for name in names] if names else list(mutants_for(role))
    except InvalidArgument as exc:
        raise click.BadParameter(str(exc), param_hint="--mutant") from exc
    if seed_list is not None:
        seeds = _seeds(seed_list)
        with captured_logs(log_path) as logs:
            code = _per_seed(console, mutants, seeds, role, jobs, killers_file)
        console.print(logs.describe(), highlight=False, soft_wrap=True)
        sys.exit(code)
    if seed is None:
        seed = resolve_seed(None)
        console.print(drawn_line(seed), highlight=False)
    with captured_logs(log_path) as logs:
        report = _run(console, mutants, selectors, seed, jobs, not no_reference, role)
    killers_file = killers_file or killers_path(role)
    _print_reference(console, report)
    _print_matrix(console, report)
    _print_kills(console, report)
    console.print(logs.describe(), highlight=False, soft_wrap=True)
    if write_killers_flag:
        write_killers(report.matrix(), killers_file)
        console.print(f"killers written to {killers_file}")
    sys.exit(0 if report.ok else 1)


def _seeds(text: str) -> list[int]:
    try:
        seeds = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise click.BadParameter(f"{text!r} is not a comma-separated list of integers", param_hint="--seeds") from None
    if not seeds:
        raise click.BadParameter("give at least one seed", param_hint="--seeds")
    if any(not 0 <= seed <= SEED_MAX for seed in seeds):
        raise click.BadParameter(f"every seed is in {SEED_METAVAR}", param_hint="--seeds")
    return seeds


def _per_seed(console: Console, mutants: list[Mutant], seeds: list[int], role: str, jobs: int,
              killers_file: Path | None) -> int:
    from sdcp_conformance.mutants.catalogue import load_killers
    from sdcp_conformance.mutants.selftest import killers_under_seeds

    killers = load_killers(killers_file or killers_path(role))
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=False) as bars:
        task = bars.add_task(f"{len(mutants)} mutants x {len(seeds)} seeds", total=len(mutants) * len(seeds))
        matrix = event_loops.run(killers_under_seeds(mutants, seeds, role=role, killers=killers, jobs=jobs,
                                                     progress=lambda name, seed, killed: bars.advance(task)))
    table = Table(title=f"Kill matrix per seed ({role}, recorded killers only)")
    table.add_column("mutant", no_wrap=True)
    for seed in seeds:
        table.add_column(f"seed {seed}", justify="center")
    for mutant in mutants:
        survived = set(matrix.survived.get(mutant.name, []))
        if mutant.name in matrix.unrecorded:
            table.add_row(mutant.name, *["[red]no killers[/red]"] * len(seeds))
            continue
        table.add_row(mutant.name, *("[red]SURVIVED[/red]" if s in survived else "killed" for s in seeds))
    console.print(table)
    bad = sorted(set(matrix.survived) | set(matrix.unrecorded))
    colour = "red" if bad else "green"
    console.print(f"[{colour}]{len(mutants) - len(bad)} of {len(mutants)} mutants killed under every seed "
                  f"{seeds}[/{colour}]" + (f"; not: {', '.join(bad)}" if bad else ""))
    return 0 if matrix.ok else 1


def _run(console: Console, mutants: list[Mutant], selectors: tuple[str, ...], seed: int, jobs: int,
         with_reference: bool, role: str) -> SelftestReport:
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=False) as bars:
        def factory(label: str, total: int) -> CaseProgress:
            task = bars.add_task(label, total=total)

            def advance(result: CaseResult) -> None:
                bars.advance(task)
            return advance

        return event_loops.run(run_selftest(mutants, selectors=selectors, seed=seed, jobs=jobs,
                                            with_reference=with_reference, progress=factory, role=role))


def _print_reference(console: Console, report: SelftestReport) -> None:
    if report.reference is None:
        return
    counts = ", ".join(f"{verdict} {count}" for verdict, count in sorted(report.reference.counts().items()))
    problems = report.reference_problems()
    colour = "red" if problems else "green"
    console.print(f"[{colour}]reference: {counts}[/{colour}] (seed {report.seed})")
    for result in problems:
        console.print(f"  [red]{result.case.id} {result.verdict.value}[/red]: {result.message[:300]}")


def _print_kills(console: Console, report: SelftestReport) -> None:
    """Per mutant: the cases that killed it, each with its verdict and message (one line each, never folded)."""
    console.print()
    console.print("What each mutant looks like (its killing cases):", highlight=False)
    for outcome in report.mutants:
        head = f"{outcome.mutant.name} ({outcome.mutant.area}): {outcome.mutant.description}"
        console.print(head, highlight=False, soft_wrap=True, markup=False)
        if outcome.crashed:
            console.print(f"  certification crashed: {outcome.crashed}", soft_wrap=True, markup=False)
        elif outcome.survived:
            console.print("  SURVIVED: no case detected it", highlight=False)
        for case_id in outcome.killers:
            message = outcome.messages.get(case_id, "")
            console.print(f"  {case_id} {message}".rstrip(), highlight=False, soft_wrap=True, markup=False)


def _print_matrix(console: Console, report: SelftestReport) -> None:
    table = Table(title="Kill matrix")
    table.add_column("mutant", no_wrap=True)
    table.add_column("area", no_wrap=True)
    table.add_column("killed by", overflow="fold")
    table.add_column("verdicts")
    for outcome in report.mutants:
        if outcome.crashed:
            killed = f"[red]SURVIVOR (certification crashed: {outcome.crashed})[/red]"
        elif outcome.survived:
            killed = "[red bold]SURVIVOR[/red bold]"
        else:
            killed = ", ".join(outcome.killers)
        verdicts = ", ".join(f"{verdict} {count}" for verdict, count in sorted(outcome.counts.items()))
        if outcome.harness_errors:
            verdicts += f" [yellow](ERROR in {', '.join(outcome.harness_errors)})[/yellow]"
        table.add_row(outcome.mutant.name, outcome.mutant.area, killed, verdicts)
    console.print(table)
    survivors = report.survivors()
    total = len(report.mutants)
    colour = "red" if survivors else "green"
    console.print(f"[{colour}]{total - len(survivors)} of {total} mutants killed[/{colour}]")


__all__ = ["selftest"]
