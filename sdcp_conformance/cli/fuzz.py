"""``sdcp-conformance fuzz``: stateful or message fuzzing of a verifier, with a live display and replay files.

Hypothesis is imported when the command runs, not when the command line
loads, so the other commands work without it. The live table and the
closing summary read the same final counts; failures show values in CBOR
diagnostic notation (``h'…'`` for bytes, as transcripts do); the replay
command is printed on a line of its own, never folded, and names the IUT
that failed (``--target``, ``--role``, ``--mutant``), so it runs as printed;
Ctrl-C prints what ran and exits 130.

``--replay FILE`` runs a saved failure against the IUT its command line
names and refuses (exit 2, one line) one that is not the IUT the file
recorded: another target (base URI or certificate fingerprint), the embedded
reference for a target's failure, or another planted bug. With
``--against-other-iut`` it runs there anyway, and its result says "does not
fail against" that IUT, never "fixed".
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.live import Live
from rich.markup import escape
from rich.table import Table

from sdcp_conformance.cli.extras import require
from sdcp_conformance.cli.seeds import drawn_line, resolve_seed, seed_option
from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.fuzz.identity import OVERRIDE

DEFAULT_OUT = Path(".sdcp-fuzz") / "failures"
DEFAULT_DATABASE = str(Path(".sdcp-fuzz") / "examples")
EXIT_INTERRUPTED = 130
_BYTES_REPR = re.compile(r"""\bb(?:'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")""")


def cbor_text(text: str) -> str:
    """``text`` with every Python bytes literal (``b'\\x01…'``) rewritten as CBOR diagnostic ``h'01…'``."""
    def hexed(match: re.Match[str]) -> str:
        try:
            value = ast.literal_eval(match.group(0))
        except (ValueError, SyntaxError):
            return match.group(0)
        return f"h'{value.hex()}'" if isinstance(value, bytes) else match.group(0)

    return _BYTES_REPR.sub(hexed, text)


@click.command("fuzz")
@click.option("--target", "target_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Target TOML file (default: the embedded reference verifier).")
@click.option("--budget", help="Fuzz for this long (e.g. 90s, 10m, 1h).")
@click.option("--examples", type=int, help="Number of examples (default 100, or 1000 messages).")
@seed_option("Seed of the generated examples.")
@click.option("--database", default=DEFAULT_DATABASE, show_default=True,
              help="Example database: a directory, a redis:// URL, or '' for none.")
@click.option("--replay", "replay_path", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Replay a saved failure against the IUT it failed against (name it as the printed replay command "
              "does: --target, --role, --mutant); reports 'fixed' if it no longer fails there, 'still fails' (exit "
              "1) if it does. Another IUT than the recorded one (another target's base URI or certificate, the "
              "embedded reference for a target's failure, another --mutant) is refused with exit 2.")
@click.option(OVERRIDE, "other_iut", is_flag=True,
              help="With --replay: replay the failure against the IUT this command line names even though it is not "
              "the one the file recorded; the result then says 'does not fail against' it, never 'fixed'.")
@click.option("--messages", is_flag=True, help="Fuzz single hostile messages instead of protocol sequences.")
@click.option("--api", "api", is_flag=True, help="Fuzz every verifier resource with schemathesis (OpenAPI 3.1).")
@click.option("--mutant", help="Run the embedded reference with this planted bug (see the mutant catalogue).")
@click.option("--steps", "step_count", type=int, default=12, show_default=True, help="Steps per stateful example.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_OUT, show_default=True,
              help="Where failures are saved as replay files.")
@click.option("--strict", is_flag=True, default=False,
              help="NON-STRICT findings (profile-only or SHOULD deviations) are failures too.")
@click.option("--role", type=click.Choice(["verifier", "drafter", "router"]), default=None,
              help="Whom to fuzz (default: the target file's role, else verifier); drafter: the harness plays "
              "the drafter's verifier and router and answers with generated sequences.")
def fuzz(target_file: Path | None, budget: str | None, examples: int | None, seed: int | None, database: str,
         replay_path: Path | None, other_iut: bool, messages: bool, api: bool, mutant: str | None, step_count: int,
         out: Path, strict: bool, role: str | None) -> None:
    """Fuzz a verifier, drafter or router IUT (--role): Hypothesis-generated sequences, shrunk failures saved for
    replay.

    A verifier gets protocol sessions (or single hostile --messages, or every resource with --api); a drafter,
    sequences of assignments and verdicts from the router and verifiers the harness plays; a router, the failover
    campaign. The role is the target file's, else --role, else verifier."""
    from sdcp_conformance.report.console import log_console

    console = log_console()
    if seed is None:
        seed = resolve_seed(None)
        if replay_path is None:
            console.print(drawn_line(seed), highlight=False)
    try:
        from sdcp_conformance.fuzz.campaign import parse_budget
        from sdcp_conformance.fuzz.rules import verifier as campaign
        from sdcp_conformance.harness.target import load_target

        target = load_target(target_file) if target_file is not None else None
        if other_iut and replay_path is None:
            raise InvalidArgument(f"{OVERRIDE} goes with --replay")
        if target is None:
            require("reference", "`sdcp-conformance fuzz` without --target (the embedded reference)")
        if api:
            require("fuzz-api", "`sdcp-conformance fuzz --api`")
        if (role or (target.role if target is not None else "verifier")) == "drafter":
            from sdcp_conformance.cli.fuzz_drafter import fuzz_drafter

            sys.exit(fuzz_drafter(console, target=target, replay_path=replay_path, other_iut=other_iut, budget=budget,
                                  examples=examples, seed=seed, database=_database(database), mutant=mutant, out=out,
                                  strict=strict, step_count=step_count, single_messages=messages or api))
        if (role or (target.role if target is not None else "verifier")) == "router":
            from sdcp_conformance.cli.fuzz_router import fuzz_router  # the failover campaign

            sys.exit(fuzz_router(console, target=target, replay_path=replay_path, other_iut=other_iut, budget=budget,
                                 examples=examples, seed=seed, database=_database(database), mutant=mutant, out=out,
                                 strict=strict, step_count=step_count))
        if replay_path is not None:
            _replay(console, campaign.replay_file(replay_path, target=target, mutant=mutant, other_iut=other_iut),
                    replay_path)
            return
        if budget is not None and examples is not None:
            raise InvalidArgument("give --budget or --examples, not both")
        if api:
            from sdcp_conformance.fuzz.api import run_command

            sys.exit(run_command(console, target=target, mutant=mutant, examples=examples, seed=seed,
                                 budget_s=parse_budget(budget) if budget is not None else None))
        config = campaign.CampaignConfig(
            target=target, mutant=mutant, examples=examples, seed=seed, messages=messages, step_count=step_count,
            budget_s=parse_budget(budget) if budget is not None else None, out=out,
            database=_database(database), strict=strict)
        subject = target.base_uri if target is not None else "the embedded reference verifier" + (
            f" with the planted bug {mutant!r}" if mutant else "")
        console.print(f"fuzzing {subject}: {'messages' if messages else 'protocol sequences'}, seed {seed}",
                      highlight=False, soft_wrap=True)
        result = _run_live(console, campaign, config)
    except InvalidArgument as exc:
        raise click.UsageError(str(exc)) from exc
    except KeyboardInterrupt:
        console.print("interrupted (Ctrl-C): no failure was saved; the counts so far:", highlight=False)
        if _LAST["stats"] is not None:
            _counts(console, _LAST["stats"], requested=examples)
        else:
            console.print("nothing ran yet", highlight=False)
        sys.exit(EXIT_INTERRUPTED)
    _summary(console, result, requested=examples)
    if result.failure is not None or getattr(result.stats, "flaky", False):
        sys.exit(1)


def _database(spec: str) -> Any:
    from sdcp_conformance.fuzz.database import open_database

    return open_database(spec)


_LAST: dict[str, Any] = {"stats": None}
"""The latest stats the campaign reported (what an interrupted run prints)."""


def _run_live(console: Console, campaign: Any, config: Any) -> Any:
    def show(stats: Any) -> None:
        _LAST["stats"] = stats
        if console.is_terminal:
            live.update(_table(stats))

    with Live(_table(None), console=console, refresh_per_second=4, transient=False,
              auto_refresh=console.is_terminal) as live:
        result = campaign.run_campaign(config, progress=show)
        live.update(_table(result.stats, finished=True, failure=result.failure))  # ends on the summary's counts
    if not console.is_terminal:
        console.print()  # a log's last render of the table ends without a newline
    return result


def _table(stats: Any, *, finished: bool = False, failure: Any = None) -> Table:
    table = Table(title="sdcp-conformance fuzz", show_header=False)
    if stats is None:
        table.add_row("starting", "the environment")
        return table
    elapsed = max(stats.elapsed, 1e-9)
    if hasattr(stats, "messages"):
        table.add_row("messages", f"{stats.messages} ({stats.messages / elapsed:.0f}/s)")
        table.add_row("5xx / dropped", f"{stats.server_errors} / {stats.dropped}")
        table.add_row("canary rounds", str(stats.canary_rounds))
        table.add_row("NON-STRICT findings", str(len(stats.judge.deviations)))
    else:
        table.add_row("examples", str(stats.examples))
        table.add_row("steps", f"{stats.steps} ({stats.steps / elapsed:.0f}/s)")
        table.add_row("NON-STRICT findings", str(len(stats.judge.deviations)))
    table.add_row("elapsed", f"{elapsed:.0f} s")
    failure = failure if finished else stats.failure
    if failure is None and getattr(stats, "flaky", False):
        table.add_row("failure", "FLAKY: seen, but not again on the same steps (details below)")
    elif failure is None:
        table.add_row("failure", "none" if finished else "none yet")
    else:
        table.add_row("failure", cbor_text(failure.message.splitlines()[0])[:100] + " (details below)")
    return table


def _counts(console: Console, stats: Any, *, requested: int | None) -> None:
    """The campaign's counts, worded as the live table words them."""
    if hasattr(stats, "messages"):
        console.print(f"{stats.messages} messages in {stats.elapsed:.0f} s ({stats.rate:.0f}/s): "
                      f"{stats.server_errors} 5xx, {stats.dropped} dropped, {stats.canary_rounds} canary rounds, "
                      f"status counts {dict(sorted(stats.by_status.items()))}", highlight=False, soft_wrap=True)
        return
    asked = ""
    if requested is not None and stats.examples != requested:
        asked = (f" ({requested} asked for; Hypothesis also ran the example database's saved examples and, "
                 "after a failure, its shrinking attempts)")
    console.print(f"{stats.examples} examples run{asked}, {stats.steps} steps in {stats.elapsed:.0f} s",
                  highlight=False, soft_wrap=True)


FLAKY_NOTE = ("[red]FLAKY[/red]: a failure was seen but did not happen again on the same steps (a nondeterministic "
              "bug in the IUT); its steps are below when they were kept")


def _summary(console: Console, result: Any, *, requested: int | None = None) -> None:
    stats = result.stats
    _counts(console, stats, requested=requested)
    _deviations(console, stats.judge)
    seen_flaky = getattr(stats, "flaky", False)
    if seen_flaky:
        console.print(FLAKY_NOTE)
    if result.failure is None:
        if not seen_flaky:
            console.print("[green]no failure found[/green]")
        return
    failure = result.failure
    flaky = " [red]flaky: it did not fail again on replay[/red]" if failure.flaky else ""
    console.print(f"[red]FAILURE[/red] ({failure.level} {failure.row}, {len(failure.steps)} steps after "
                  f"shrinking){flaky}:")
    console.print(cbor_text(failure.message), markup=False, soft_wrap=True)
    for step in failure.steps:
        console.print(f"  {cbor_text(step.describe())}", markup=False, soft_wrap=True)
    if result.saved is not None:
        console.print(f"saved: {result.saved}", markup=False, soft_wrap=True)
        console.print(f"replay: {result.iut.replay_command(result.saved)}", markup=False, soft_wrap=True)


def _deviations(console: Console, judge: Any) -> None:
    """NON-STRICT / INFORMATIONAL findings, one line per requirement row with a count and one example."""
    examples: dict[str, Any] = {}
    for finding in judge.deviations:
        examples.setdefault(finding.row, finding)
    for row, count in judge.summary().items():
        finding = examples[row]
        console.print(f"{finding.severity.value} {row} x{count}: {cbor_text(finding.message)[:160]}", markup=False,
                      soft_wrap=True)


def replay_line(result: Any, path: Path) -> str:
    """The result line of a replay (console markup): ``fixed`` only when the recorded IUT no longer fails."""
    where = escape(result.against.describe())
    if result.failure is not None:
        against = f" against {where}" if result.other else ""
        return f"[red]still fails[/red]{against} ({result.failure.level}) after {len(result.failure.steps)} steps:"
    if result.other:
        return (f"{escape(str(path))} does not fail against {where} ({result.replayed} steps replayed); it failed "
                f"against another IUT, {escape(result.recorded_iut.describe())}, so this says nothing of a fix")
    return (f"[green]fixed[/green]: {escape(str(path))} no longer fails against {where} ({result.replayed} steps "
            "replayed)")


def _replay(console: Console, result: Any, path: Path) -> None:
    console.print(replay_line(result, path), highlight=False, soft_wrap=True)
    failure = result.failure
    if failure is None:
        return
    console.print(cbor_text(failure.message), markup=False, soft_wrap=True)
    if failure.transcript:
        console.print(failure.transcript, markup=False, soft_wrap=True)
    sys.exit(1)


__all__ = ["cbor_text", "fuzz", "replay_line"]
