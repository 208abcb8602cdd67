"""``sdcp-conformance certify``.

``certify`` runs a role's suite against a target (or the embedded reference),
shows progress (a live bar on a terminal, a line per case in a log), prints
the summary and every case that needs attention, explained
(:mod:`sdcp_conformance.report.console`), writes ``report.json`` (+
``evidence.json.gz``), ``junit.xml`` and ``report.html``, with ``--bundle`` a
signed bundle, and exits 0 when the certification PASSED, 1 on any FAILED,
ERROR or XPASS (NON-STRICT too under ``--strict``), 2 on a usage error (bad
target file, a model the suite needs but the target lacks, a selector that
matches no case, unknown IDs in the expected-failures file), 3 when the run
is INCOMPLETE (P1-JUDGE-3: the sanity case did not pass, or an area ran no
case), 4 when the harness could not start its listeners and 130 when
interrupted (Ctrl-C), after writing the partial report, marked INTERRUPTED.
When the sanity case does not pass against a target, the preflight
(:mod:`.check`) says what is wrong with the IUT's setup.
"""

from __future__ import annotations

import datetime as dt
import errno
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from sdcp_conformance.cli.certify_console import (
    Collecting,
    LiveProgress,
    case_lines,
    interrupted_report,
    progress_for,
)
from sdcp_conformance.cli.extras import require
from sdcp_conformance.cli.seeds import resolve_seed, seed_option
from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.harness.case import Catalogue, Verdict
from sdcp_conformance.harness.certify import certify as run_certification
from sdcp_conformance.harness.certify import default_catalogue, models_required
from sdcp_conformance.harness.expected import ExpectedFailures
from sdcp_conformance.harness.runner import CaseResult, RunReport, order_cases
from sdcp_conformance.harness.suites import SUITES
from sdcp_conformance.harness.target import TargetConfig, load_target, require_models
from sdcp_conformance.judge.declaration import Declaration, load_declaration
from sdcp_conformance.judge.requirement_sets import RequirementSet, load_set
from sdcp_conformance.transport import event_loops
from sdcp_conformance.transport.pki import load_pki

EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INCOMPLETE = 3
EXIT_NO_HARNESS = 4
EXIT_INTERRUPTED = 130
SERVER_LOG = "servers.log"
"""In the report folder: warnings and tracebacks of the servers the run started in-process (never on screen)."""


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


REPORT_FILES = ("report.json", "junit.xml", "report.html", "evidence.json.gz")


def refuse_used_report_dir(folder: Path | None) -> None:
    """One run, one report folder: a second run into the folder of another would silently replace its reports
    (and mix its evidence file with theirs), so it is refused, in one line, before anything runs."""
    if folder is None:
        return
    if folder.exists() and not folder.is_dir():
        raise click.UsageError(f"--report-dir {folder} is a file; give a folder (missing or empty)")
    found = [name for name in REPORT_FILES if (folder / name).exists()]
    if found:
        raise click.UsageError(f"--report-dir {folder} already holds the reports of another run ({', '.join(found)}); "
                               "give each run its own folder (leave --report-dir out for reports/<timestamp>/), "
                               "or remove that one first")


@dataclass(frozen=True)
class Program:
    """What a certification program adds to a run: the requirement set, the vendor's declaration (and its file)
    and the vendor's key, which signs the declaration in the bundle."""

    requirements: RequirementSet | None = None
    declaration: Declaration | None = None
    files: tuple[Path | None, Path | None] = (None, None)
    """(the declaration's file, the vendor's key)."""

    @property
    def declaration_path(self) -> Path | None:
        return self.files[0]

    @property
    def vendor_key(self) -> Path | None:
        return self.files[1]


def _program(role: str, requirements_name: str | None, declaration_path: Path | None, vendor_key: Path | None,
             bundle_path: Path | None) -> Program:
    if vendor_key is not None and (declaration_path is None or bundle_path is None):
        raise click.UsageError("--vendor-key signs the declaration in the bundle: give --declaration and --bundle")
    try:
        requirements = load_set(requirements_name)
        declaration = load_declaration(declaration_path, role) if declaration_path is not None else None
    except InvalidArgument as exc:
        raise click.UsageError(str(exc)) from exc
    return Program(requirements, declaration, (declaration_path, vendor_key))


def _run(target: TargetConfig | None, role: str, selected: Sequence[str], seed: int,
         expected: ExpectedFailures | None, progress: Callable[[CaseResult], None], strict: bool,
         factory: Callable[..., Any] | None, workdir: Path, program: Program) -> RunReport:
    try:
        return event_loops.run(run_certification(target, role=role, selectors=selected, seed=seed,
                                                 expected_failures=expected, progress=progress, strict=strict,
                                                 app_factory=factory, workdir=workdir,
                                                 requirements=program.requirements,
                                                 declaration=program.declaration))
    except OSError as exc:  # a listener of the target file's [harness] could not bind, say
        click.echo(f"Error: the harness could not start: {exc}", err=True)
        if exc.errno == errno.EADDRINUSE and target is not None:
            click.echo(f"  A port {target.source or 'the target file'} names for the harness's listeners is held by "
                       "another process: stop that process, or give the harness other ports (`pki init` again "
                       "mints a target on fresh ones).", err=True)
        sys.exit(EXIT_NO_HARNESS)


def _resolve_mutant(mutant: str | None, role: str | None, target: TargetConfig | None
                    ) -> tuple[str | None, Callable[..., Any] | None]:
    if mutant is None:
        return role, None
    if target is not None:
        raise click.UsageError("--mutant plants a bug in the embedded reference; it cannot go with --target")
    from sdcp_conformance.mutants.catalogue import find_mutant

    try:
        mutant_role, found = find_mutant(mutant, role)
    except InvalidArgument as exc:
        raise click.BadParameter(str(exc), param_hint="--mutant") from exc
    return mutant_role, found.factory


def _signing_key(given: Path | None, target: TargetConfig | None) -> Path | None:
    """D-RPT-8: --signing-key, else the target PKI's attestation.key, else None (a one-off key)."""
    from sdcp_conformance.report.bundle import KEY_FILE

    if given is not None:
        return given
    if target is not None and (target.pki / KEY_FILE).is_file():
        return target.pki / KEY_FILE
    return None


def _fingerprint_before(target: TargetConfig | None) -> str | None:
    """The IUT's certificate fingerprint, from one handshake before the run (None when it cannot be had)."""
    if target is None:
        return None
    from sdcp_conformance.harness.check import iut_fingerprint

    return iut_fingerprint(target)


def _print_preflight(console: Any, report: RunReport, target: TargetConfig | None) -> None:
    """When the sanity case did not pass against a target: what is wrong with the IUT's setup, line by line."""
    sanity = next((r for r in report.results if r.run == "sanity-first"), None)
    if target is None or sanity is None or sanity.verdict is Verdict.PASSED:
        return
    from sdcp_conformance.harness.check import preflight

    console.print()
    console.print(f"the sanity case {sanity.case.id} is {sanity.verdict.value}; preflight of {target.base_uri}:",
                  highlight=False, soft_wrap=True, markup=False)
    for line in preflight(target).lines():
        console.print(f"  {line}", highlight=False, soft_wrap=True, markup=False)


@click.command("certify")
@click.option("--target", "target_path", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="Target description (TOML). Default: the embedded reference verifier.")
@click.option("--only", "selectors", multiple=True, metavar="ID-OR-AREA",
              help="Run only these cases: a case ID, an ID prefix or an area, any letter case (repeatable).")
@click.option("--exclude", "excluded", multiple=True, metavar="ID-OR-AREA",
              help="Leave out these cases (like --only; repeatable).")
@click.option("--list", "list_selector", is_flag=False, flag_value="", default=None, metavar="[SELECTOR]",
              help="List the cases (ID, role, area, level, title), or those SELECTOR matches, and exit.")
@click.option("--report-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where report.json, junit.xml and report.html go: a missing or empty folder (one that holds "
              "another run's reports is refused). Default: reports/<timestamp>/, a new one per run.")
@seed_option("Seed of the case order (and of the cases' own choices); printed in the first line and the reports.")
@click.option("--expected-failures", "expected_path", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="TOML list of known failures: [[expected]] id, contains, reason.")
@click.option("--strict", is_flag=True, default=False,
              help="NON-STRICT results (profile-only or SHOULD deviations) fail the run too.")
@click.option("--role", type=click.Choice(sorted(SUITES)), default=None,
              help="Without --target: which embedded reference to certify (default verifier). With --target: must "
              "agree with the target file's role.")
@click.option("--mutant", default=None, metavar="NAME",
              help="Certify a mutant of the embedded reference (one planted bug) instead: see what a failing "
              "certification looks like. `selftest --role ROLE --list` lists each role's mutants.")
@click.option("--bundle", "bundle_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write a signed certification bundle (zip + in-toto attestation) to this file.")
@click.option("--shard", "shard_text", default=None, metavar="K/N",
              help="Run only the K-th of N balanced parts of the selection (sanity first and last in each); "
              "join the N report folders with `report merge`. Give every shard the same --seed.")
@click.option("--signing-key", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="Ed25519 private key (PEM) that signs the bundle. Default: the target PKI's attestation.key "
              "(`pki init` mints one), else a one-off key.")
@click.option("--requirements", "requirements_name", default=None, metavar="SET",
              help="Score against this released requirement set (default: the newest; `info --requirements` "
              "lists them).")
@click.option("--declaration", "declaration_path", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="The vendor's declaration (`declare` writes one): the test plan follows its claims.")
@click.option("--vendor-key", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="The vendor's Ed25519 private key (PEM) that signs the declaration in the bundle.")
def certify(target_path: Path | None, selectors: tuple[str, ...], excluded: tuple[str, ...],
            list_selector: str | None, report_dir: Path | None, seed: int | None, expected_path: Path | None,
            strict: bool, role: str | None, mutant: str | None, bundle_path: Path | None,
            shard_text: str | None, signing_key: Path | None, requirements_name: str | None,
            declaration_path: Path | None, vendor_key: Path | None) -> None:
    """Certify an SDCP verifier, drafter or router against the draft and the interop profile."""
    target = _load_target(target_path)
    if target is not None and role is not None and role != target.role:
        raise click.UsageError(f"--role {role} disagrees with {target_path}'s role {target.role!r}")
    role, factory = _resolve_mutant(mutant, role, target)
    role = target.role if target is not None else role or "verifier"
    catalogue = default_catalogue(role)
    try:
        selected = catalogue.select(selectors, excluded)
        listed = catalogue.select([list_selector] if list_selector else selectors, excluded) \
            if list_selector is not None else None
    except InvalidArgument as exc:
        raise click.UsageError(str(exc)) from exc
    shard = None
    if shard_text is not None:
        from sdcp_conformance.harness.shards import parse_shard, recorded_durations, shard_cases

        try:
            shard = parse_shard(shard_text)
        except InvalidArgument as exc:
            raise click.BadParameter(str(exc), param_hint="--shard") from exc
        selected = shard_cases(selected, *shard, recorded_durations(catalogue), catalogue.sanity_id)
        if listed is not None:
            listed = [case for case in listed if case in selected]
    if listed is not None:
        for line in case_lines(listed):
            click.echo(line)
        click.echo(f"{len(listed)} of {len(catalogue.cases)} {role} cases")
        return
    refuse_used_report_dir(report_dir)
    if target is not None:
        try:
            require_models(target, models_required(catalogue, selected))
        except InvalidArgument as exc:
            raise click.UsageError(str(exc)) from exc
    else:
        require("reference", f"`sdcp-conformance certify` without --target (the embedded reference {role})")
    expected = _load_expected(expected_path, catalogue)
    program = _program(role, requirements_name, declaration_path, vendor_key, bundle_path)
    run_seed = resolve_seed(seed)
    _certify(target, target_path, catalogue, selected, selectors, excluded, run_seed, expected, expected_path,
             strict, role, mutant, factory, report_dir, bundle_path, _signing_key(signing_key, target), shard,
             program)


def _certify(target: TargetConfig | None, target_path: Path | None, catalogue: Catalogue, selected: Sequence[Any],
             selectors: Sequence[str], excluded: Sequence[str], run_seed: int, expected: ExpectedFailures | None,
             expected_path: Path | None, strict: bool, role: str, mutant: str | None,
             factory: Callable[..., Any] | None, report_dir: Path | None, bundle_path: Path | None,
             key: Path | None, shard: tuple[int, int] | None = None, program: Program | None = None) -> None:
    from sdcp_conformance.report import write_run
    from sdcp_conformance.report.console import log_console, print_document
    from sdcp_conformance.report.logs import captured_logs
    from sdcp_conformance.report.provenance import embedded_iut_fingerprint

    console = log_console()
    order = [case.id for case, _ in order_cases(catalogue, selected, run_seed)]
    subject = f"the embedded reference {role}" + (f" with the planted bug {mutant!r}" if mutant else "")
    part = f", shard {shard[0]}/{shard[1]}" if shard is not None else ""
    console.print(f"certifying {target.base_uri if target else subject}: {len(order)} runs{part}, seed {run_seed}",
                  highlight=False, soft_wrap=True)
    fingerprint = _fingerprint_before(target)
    display = progress_for(console, order)
    collected = Collecting(display)
    interrupted = False
    ids = [case.id for case in selected]
    folder = report_dir or _default_report_dir()
    with tempfile.TemporaryDirectory(prefix="sdcp-certify-") as workdir, \
            captured_logs(folder / SERVER_LOG) as logs:
        try:
            with display:
                report = _run(target, role, ids if (selectors or excluded or shard) else (), run_seed, expected,
                              collected, strict, factory, Path(workdir), program or Program())
                report.shard = shard
        except KeyboardInterrupt:
            interrupted = True
            environment = {"iut": target.base_uri if target else None, "role": role, "embedded": target is None}
            report = interrupted_report(collected, seed=run_seed, selected=selected, strict=strict,
                                        selectors=selectors, environment=environment)
            console.print("interrupted: writing the partial report of the cases that finished", highlight=False)
        if target is None and not interrupted:
            fingerprint = embedded_iut_fingerprint(Path(workdir), str(report.environment.get("iut", "")))
    report.selectors = tuple(selectors)
    document, written = write_run(
        report, folder, command=sys.argv, target=str(target_path) if target_path else None, selectors=selectors,
        catalogue=catalogue, excluded=excluded, role=role, mutant=mutant,
        expected_failures=str(expected_path) if expected_path else None, iut_certificate=fingerprint,
        interrupted=interrupted)
    if bundle_path is not None:
        from sdcp_conformance.report.bundle import write_bundle

        declared = program.declaration_path if program is not None else None
        keyid = write_bundle(bundle_path, folder, document, target_file=target_path, key=key,
                             declaration_file=declared, vendor_key=program.vendor_key if program else None)
        written.append(bundle_path)
        how = f"key {key}" if key is not None else "a one-off key (give --signing-key to use yours)"
        console.print(f"bundle signed with {how}, key ID {keyid}", highlight=False, soft_wrap=True)
    if logs.records:
        console.print(logs.describe(), highlight=False, soft_wrap=True)
    print_document(console, document, reports=written)
    if not interrupted:
        _print_preflight(console, report, target)
    if interrupted:
        sys.exit(EXIT_INTERRUPTED)
    if report.exit_code:
        sys.exit(report.exit_code)


__all__ = [
    "EXIT_FAILED",
    "EXIT_INCOMPLETE",
    "EXIT_INTERRUPTED",
    "EXIT_NO_HARNESS",
    "EXIT_USAGE",
    "REPORT_FILES",
    "LiveProgress",
    "Program",
    "certify",
    "refuse_used_report_dir",
]
