"""``sdcp-conformance certify`` and the target-writing half of ``pki init --iut verifier``.

``certify`` runs the verifier suite against a target (or the embedded reference
verifier), shows live progress, prints the summary, writes ``report.json`` and
``junit.xml``, and exits 0 when the certification PASSED, 1 on any FAILED,
ERROR or XPASS (NON-STRICT too under ``--strict``), 2 on a usage error (bad
target file, a model the suite needs but the target lacks, unknown selector,
unknown IDs in the expected-failures file), 3 when the run is INCOMPLETE
(P1-JUDGE-3: the sanity case did not pass, or an area ran no case) and 4 when
the harness could not start its listeners.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import secrets
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.harness.case import Catalogue
from sdcp_conformance.harness.certify import certify as run_certification
from sdcp_conformance.harness.certify import default_catalogue, needed_models
from sdcp_conformance.harness.environment import HARNESS_PARTIES
from sdcp_conformance.harness.expected import ExpectedFailures
from sdcp_conformance.harness.runner import CaseResult, RunReport, order_cases
from sdcp_conformance.harness.suites import SUITES
from sdcp_conformance.harness.target import DEFAULT_MODELS, TargetConfig, load_target, render_target, require_models
from sdcp_conformance.reference.stack import free_port
from sdcp_conformance.report import write_reports
from sdcp_conformance.report.console import print_summary, replay_command
from sdcp_conformance.transport.pki import Pki, init_pki, load_pki

TARGET_FILE = "target.toml"
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INCOMPLETE = 3
EXIT_NO_HARNESS = 4
IUT_PARTY = "verifier"


# --------------------------------------------------------------------------- certify


def _load_target(path: Path | None) -> TargetConfig | None:
    """The checked target (None: the embedded reference); usage errors for anything unusable."""
    if path is None:
        return None
    try:
        config = load_target(path)
        load_pki(config.pki)
    except InvalidArgument as exc:
        raise click.UsageError(str(exc)) from exc
    if not config.ca.is_file():
        raise click.UsageError(f"{path}: [target] ca {config.ca} is not a file")
    return config


def _load_expected(path: Path | None, catalogue: Catalogue) -> ExpectedFailures | None:
    if path is None:
        return None
    try:
        expected = ExpectedFailures.load(path)
    except InvalidArgument as exc:
        raise click.UsageError(str(exc)) from exc
    unknown = expected.unknown_ids(set(catalogue.cases))
    if unknown:
        raise click.UsageError(f"{path}: no such case ID: {', '.join(unknown)}")
    return expected


def _default_report_dir() -> Path:
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    folder = Path("reports") / stamp
    suffix = 1
    while folder.exists():  # two runs in the same second keep their own folders
        suffix += 1
        folder = Path("reports") / f"{stamp}-{suffix}"
    return folder


class LiveProgress:
    """A rich progress bar fed by the runner's per-case callback: done/total, the case running, verdict tallies."""

    def __init__(self, console: Console, order: Sequence[str]) -> None:
        self.order = list(order)
        self.tally: dict[str, int] = {}
        self.progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                                 MofNCompleteColumn(), TimeElapsedColumn(), console=console, transient=False)
        self.task = self.progress.add_task(self._describe(0), total=len(self.order))

    def _describe(self, done: int) -> str:
        current = f"running {self.order[done]}" if done < len(self.order) else "done"
        counts = " ".join(f"{verdict} {count}" for verdict, count in sorted(self.tally.items()))
        return f"{current:34} {counts}"

    def __call__(self, result: CaseResult) -> None:
        self.tally[result.verdict.value] = self.tally.get(result.verdict.value, 0) + 1
        done = int(self.progress.tasks[0].completed) + 1
        self.progress.update(self.task, completed=done, description=self._describe(done))


def _run(target: TargetConfig | None, role: str, selectors: Sequence[str], seed: int,
         expected: ExpectedFailures | None, progress: Callable[[CaseResult], None], strict: bool,
         factory: Callable[..., Any] | None) -> RunReport:
    try:
        return asyncio.run(run_certification(target, role=role, selectors=selectors, seed=seed,
                                             expected_failures=expected, progress=progress, strict=strict,
                                             app_factory=factory))
    except OSError as exc:  # a listener of the target file's [harness] could not bind, say
        click.echo(f"Error: the harness could not start: {exc}", err=True)
        sys.exit(EXIT_NO_HARNESS)


@click.command("certify")
@click.option("--target", "target_path", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="Target description (TOML). Default: the embedded reference verifier.")
@click.option("--only", "selectors", multiple=True, metavar="ID-OR-AREA",
              help="Run only these cases: a case ID, an ID prefix or an area (repeatable).")
@click.option("--report-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where report.json and junit.xml go. Default: reports/<timestamp>/.")
@click.option("--seed", type=click.IntRange(0, 2**32 - 1), default=None,
              help="Seed of the case order (and of the cases' own choices); printed so a run can be replayed.")
@click.option("--expected-failures", "expected_path", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="TOML list of known failures: [[expected]] id, contains, reason.")
@click.option("--strict", is_flag=True, default=False,
              help="NON-STRICT results (profile-only or SHOULD deviations) fail the run too.")
@click.option("--role", type=click.Choice(sorted(SUITES)), default=None,
              help="Without --target: which embedded reference to certify (default verifier). With --target: must "
              "agree with the target file's role.")
@click.option("--mutant", default=None, metavar="NAME",
              help="Certify a mutant of the embedded reference (one planted bug) instead: see what a failing "
              "certification looks like. `selftest` lists the mutants.")
def certify(target_path: Path | None, selectors: tuple[str, ...], report_dir: Path | None, seed: int | None,
            expected_path: Path | None, strict: bool, role: str | None, mutant: str | None) -> None:
    """Certify an SDCP verifier, drafter or router against the draft and the interop profile."""
    target = _load_target(target_path)
    if target is not None and role is not None and role != target.role:
        raise click.UsageError(f"--role {role} disagrees with {target_path}'s role {target.role!r}")
    factory = None
    if mutant is not None:
        if target is not None:
            raise click.UsageError("--mutant plants a bug in the embedded reference; it cannot go with --target")
        from sdcp_conformance.mutants.registry import find_mutant

        try:
            mutant_role, found = find_mutant(mutant, role)
        except InvalidArgument as exc:
            raise click.BadParameter(str(exc), param_hint="--mutant") from exc
        role, factory = mutant_role, found.factory
    role = target.role if target is not None else role or "verifier"
    catalogue = default_catalogue(role)
    try:
        selected = catalogue.select(selectors)
    except InvalidArgument as exc:
        raise click.UsageError(f"--only: {exc}") from exc
    if target is not None:
        try:
            require_models(target, needed_models(catalogue, selected))
        except InvalidArgument as exc:
            raise click.UsageError(str(exc)) from exc
    expected = _load_expected(expected_path, catalogue)
    run_seed = seed if seed is not None else secrets.randbelow(2**32)
    console = Console()
    order = [case.id for case, _ in order_cases(catalogue, selected, run_seed)]
    subject = f"the embedded reference {role}" + (f" with the planted bug {mutant!r}" if mutant else "")
    console.print(f"certifying {target.base_uri if target else subject}: "
                  f"{len(order)} runs, seed {run_seed}", highlight=False)
    live = LiveProgress(console, order)
    with live.progress:
        report = _run(target, role, selectors, run_seed, expected, live, strict, factory)
    folder = report_dir or _default_report_dir()
    written = write_reports(report, folder, command=sys.argv, selectors=selectors, catalogue=catalogue,
                            target=str(target_path) if target_path else None)
    print_summary(console, report, reports=written,
                  replay=replay_command(run_seed, target=target_path, selectors=selectors,
                                        expected_failures=expected_path, role=role, strict=strict))
    if report.exit_code:
        sys.exit(report.exit_code)


# --------------------------------------------------------------------------- pki init --iut verifier


def iut_parties(overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """Base URIs for the IUT and the harness's parties: free loopback ports unless given."""
    names = (IUT_PARTY, *HARNESS_PARTIES)
    given = overrides or {}
    return {name: given.get(name) or f"https://127.0.0.1:{free_port()}/{name}/" for name in names}


def write_iut_target(directory: Path, overrides: Mapping[str, str] | None = None) -> tuple[Pki, Path]:
    """Mint the PKI for a verifier under test and the harness, and write ``directory/target.toml``."""
    parties = iut_parties(overrides)
    pki = init_pki(directory, parties, subject=IUT_PARTY)
    config = TargetConfig(
        role="verifier", base_uri=parties[IUT_PARTY], ca=pki.ca_cert, models=DEFAULT_MODELS, pki=pki.directory,
        router=parties["router"], cache=parties["cache"], drafters=(parties["drafter-1"], parties["drafter-2"]),
    )
    path = directory / TARGET_FILE
    path.write_text(render_target(config, directory), encoding="utf-8")
    return pki, path


def serve_command(pki: Pki) -> list[str]:
    """The command that starts the reference verifier as the IUT of this PKI."""
    words = ["sdcp-conformance", "serve", "verifier", "--pki", str(pki.directory), "--party", IUT_PARTY,
             "--router", pki.base_uris["router"]]
    for model in DEFAULT_MODELS:
        words += ["--model", model]
    return words


def verifier_iut_setup(directory: Path, overrides: Mapping[str, str]) -> tuple[Pki, Path, str]:
    """``pki init DIR --iut verifier`` (:data:`~sdcp_conformance.harness.suites.IutSetup`)."""
    pki, path = write_iut_target(directory, overrides)
    return pki, path, iut_instructions(pki, path)


def iut_instructions(pki: Pki, target_path: Path) -> str:
    import shlex

    from sdcp_conformance.models.registry import mock_model

    verifier = pki.parties[IUT_PARTY]
    models = "\n".join(f"      {model}: {mock_model(model).path}" for model in DEFAULT_MODELS)
    return "\n".join([
        f"Wrote the PKI and {target_path} for a verifier under test.",
        "",
        "Start the verifier under test with:",
        f"  trust this CA (clients and servers):  {pki.ca_cert}",
        f"  serve with certificate / key:         {verifier.cert} / {verifier.key}",
        f"  listen at its base URI (= URI SAN):   {pki.base_uris[IUT_PARTY]}",
        f"  report status and events to router:   {pki.base_uris['router']}",
        f"  accept router-only requests only from {pki.base_uris['router']} (P1-ID-2)",
        "  load the mock models (Llama checkpoints, P1-MODEL-1):",
        models,
        "",
        "The reference verifier, for example:",
        f"  {shlex.join(serve_command(pki))}",
        "(its load is then the one it measures and reports, `load = \"reported\"` in the target; to pin it, add",
        " --pin-load N and `pinned_load = N` under [target], so the §6.5.2 load cases choose self_load from it)",
        "",
        "Then certify it:",
        f"  sdcp-conformance certify --target {target_path}",
        "",
    ])


__all__ = [
    "EXIT_FAILED",
    "EXIT_INCOMPLETE",
    "EXIT_NO_HARNESS",
    "EXIT_USAGE",
    "IUT_PARTY",
    "TARGET_FILE",
    "LiveProgress",
    "certify",
    "iut_instructions",
    "iut_parties",
    "serve_command",
    "verifier_iut_setup",
    "write_iut_target",
]
