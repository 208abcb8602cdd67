"""``sdcp-conformance fuzz --role drafter``: the drafter campaign behind the fuzz command's live display."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.harness.target import TargetConfig


def fuzz_drafter(console: Console, *, target: TargetConfig | None, replay_path: Path | None, budget: str | None,
                 examples: int | None, seed: int, database: Any, mutant: str | None, out: Path, strict: bool,
                 step_count: int, single_messages: bool, other_iut: bool = False) -> int:
    """Run (or replay) a drafter campaign; the exit status: 0 when nothing failed."""
    from sdcp_conformance.cli import fuzz_display as cli
    from sdcp_conformance.fuzz.campaign import parse_budget
    from sdcp_conformance.fuzz.rules import drafter as campaign

    if single_messages:
        raise InvalidArgument("--messages and --api fuzz a verifier's resources; a drafter is fuzzed by sequences")
    if target is not None and mutant is not None:
        raise InvalidArgument("--mutant runs the embedded reference with a planted bug; it cannot go with --target")
    if replay_path is not None:
        result = campaign.replay_drafter_file(replay_path, target=target, mutant=mutant, other_iut=other_iut)
        cli.replay(console, result, replay_path)
        return 0
    if budget is not None and examples is not None:
        raise InvalidArgument("give --budget or --examples, not both")
    config = campaign.DrafterCampaignConfig(
        target=target, mutant=mutant, examples=examples, seed=seed, database=database,
        step_count=min(step_count, 12), out=out, strict=strict,
        budget_s=parse_budget(budget) if budget is not None else None)

    class _Campaign:
        run_campaign = staticmethod(campaign.run_drafter_campaign)

    found = cli.run_live(console, _Campaign, config)
    stats, failure = found.stats, found.failure
    console.print(f"{stats.examples} examples, {stats.steps} steps in {stats.elapsed:.0f} s")
    cli.deviations(console, stats.judge)
    if failure is None:
        if stats.flaky:  # exit 1 says so too: a failure was seen, so the run did not pass
            console.print(cli.FLAKY_NOTE)
            return 1
        console.print("[green]no failure found[/green]")
        return 0
    flaky = " [red]flaky: it did not fail again on replay[/red]" if failure.flaky else ""
    console.print(f"[red]FAILURE[/red] ({failure.level} {failure.row}, {len(failure.steps)} steps after "
                  f"shrinking){flaky}:")
    console.print(failure.message, markup=False)
    for step in failure.steps:
        console.print(f"  {step.describe()}", markup=False)
    if found.saved is not None:
        console.print(f"saved: {found.saved}", markup=False, soft_wrap=True)
        console.print(f"replay: {found.iut.replay_command(found.saved)}", markup=False, soft_wrap=True)
    return 1


__all__ = ["fuzz_drafter"]
