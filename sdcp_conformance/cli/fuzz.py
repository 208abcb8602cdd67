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

import sys
from pathlib import Path
from typing import Any

import click

from sdcp_conformance.cli import fuzz_display as display
from sdcp_conformance.cli.extras import require
from sdcp_conformance.cli.seeds import drawn_line, resolve_seed, seed_option
from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.fuzz.identity import OVERRIDE

DEFAULT_OUT = Path(".sdcp-fuzz") / "failures"
DEFAULT_DATABASE = str(Path(".sdcp-fuzz") / "examples")
EXIT_INTERRUPTED = 130


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
            replayed = campaign.replay_file(replay_path, target=target, mutant=mutant, other_iut=other_iut)
            display.replay(console, replayed, replay_path)
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
        result = display.run_live(console, campaign, config)
    except InvalidArgument as exc:
        raise click.UsageError(str(exc)) from exc
    except KeyboardInterrupt:
        console.print("interrupted (Ctrl-C): no failure was saved; the counts so far:", highlight=False)
        if display.LAST["stats"] is not None:
            display.counts(console, display.LAST["stats"], requested=examples)
        else:
            console.print("nothing ran yet", highlight=False)
        sys.exit(EXIT_INTERRUPTED)
    display.summary(console, result, requested=examples)
    if result.failure is not None or getattr(result.stats, "flaky", False):
        sys.exit(1)


def _database(spec: str) -> Any:
    from sdcp_conformance.fuzz.database import open_database

    return open_database(spec)


__all__ = ["fuzz"]
