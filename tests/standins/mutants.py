"""Plant bugs in the Node.js stand-ins and certify each: how the harness judges implementations it did not write.

    python -m tests.standins.mutants                          # the verifier's planted bugs (~20 s each)
    python -m tests.standins.mutants --role router            # the router's (~15 s each)
    python -m tests.standins.mutants --role drafter           # the drafter's (~50 s each)
    python -m tests.standins.mutants --role all               # every role in turn
    python -m tests.standins.mutants reduce-ceil ...          # some of them (names of the role given)

(from the checkout's root). The stand-ins (``tests/standins/standin_node*/``) are a verifier, a router and a
drafter in JavaScript, written apart from the reference; each passes every case of its role it can serve. Each
planted bug (``tests/standins/planted.py``) changes one line of a copy of a stand-in; the copy is started as a
vendor starts theirs and certified with every case the target allows. The tool prints the run's outcome beside the
one expected and exits 1 when any differs: a planted bug that a run no longer catches, or catches for another
reason, is a regression of the harness.

Outcomes: ``FAILED`` and ``INCOMPLETE`` (the sanity case failed, P1-JUDGE-3); ``NON-STRICT`` for a bug that
breaks only a profile decision (the run passes, the report says NON-STRICT, P1-JUDGE-1); ``PASSED`` for an edit
that is conformant or cannot be observed, each saying why.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from sdcp_conformance.harness.certify import cases_needing, default_catalogue
from sdcp_conformance.harness.role_spec import spec_of
from sdcp_conformance.harness.target import load_target, render_target
from sdcp_conformance.transport.pki import load_pki
from tests.standins import standin_node, standin_node_drafter, standin_node_router
from tests.standins.planted import PLANTED, Planted

READY_TIMEOUT_S = 300.0
"""The first start installs the stand-in's npm packages."""
CERTIFY_TIMEOUT_S = 900.0
STOP_TIMEOUT_S = 10.0


class Role(NamedTuple):
    source: Path
    """The stand-in's sources in the package (what the planted lines must occur in)."""
    installed: Callable[[], Path]
    """The stand-in's folder, installed, to copy."""
    target: Callable[[Path], tuple[Path, list[str]]]
    """A target in the folder, and the cases the stand-in cannot serve (excluded)."""
    command: Callable[[Path, Path], tuple[list[str], dict[str, str]]]
    """How to start a copy (its folder) for a target: the command line and the environment's additions."""


def _verifier_target(folder: Path) -> tuple[Path, list[str]]:
    """A verifier target serving ``bigram`` only (all the stand-in serves), and the cases it must leave out."""
    _, path = spec_of("verifier").write_target(folder)
    target = dataclasses.replace(load_target(path), models=("bigram",))
    path.write_text(render_target(target, folder), encoding="utf-8")
    catalogue = default_catalogue()
    needing = cases_needing(catalogue, catalogue.select([]))
    return path, sorted(case for model, cases in needing.items() if model != "bigram" for case in cases)


def _verifier_command(copy: Path, path: Path) -> tuple[list[str], dict[str, str]]:
    target = load_target(path)
    config = standin_node.configuration(target.pki, "verifier", target.router, host="127.0.0.1", pinned_load=None)
    return [standin_node.node_binary(), str(copy / "server.js")], {standin_node.CONFIG_ENV: json.dumps(config)}


def _router_target(folder: Path) -> tuple[Path, list[str]]:
    return spec_of("router").write_target(folder)[1], []


def _router_command(copy: Path, path: Path) -> tuple[list[str], dict[str, str]]:
    words = spec_of("router").serve_command(load_pki(load_target(path).pki))[3:]  # past "sdcp-conformance serve router"
    _, line = standin_node_router.arguments(words)
    return [standin_node.node_binary(), str(copy / "server.js"), *line], {}


def _drafter_target(folder: Path) -> tuple[Path, list[str]]:
    """A drafter target that states the stand-in's deadline for a verdict (so the unanswered proposal's case runs)
    and lists the one draft model it serves, and the cases needing another (left out)."""
    _, path = spec_of("drafter").write_target(folder)
    target = load_target(path)
    extra = {**target.extra, "proposal_timeout_s": standin_node_drafter.PROPOSAL_TIMEOUT_S}
    served = standin_node_drafter.served_model(target.models)
    path.write_text(render_target(dataclasses.replace(target, extra=extra, models=(served,)), folder),
                    encoding="utf-8")
    catalogue = default_catalogue("drafter")
    needing = cases_needing(catalogue, catalogue.select([]))
    return path, sorted(case for model, cases in needing.items() if model != served for case in cases)


def _drafter_command(copy: Path, path: Path) -> tuple[list[str], dict[str, str]]:
    target = load_target(path)
    words = spec_of("drafter").serve_command(load_pki(target.pki))
    value = {word: words[i + 1] for i, word in enumerate(words[:-1]) if word.startswith("--")}
    config = standin_node_drafter.configuration(
        target.pki, value["--party"], [value["--router"]], value["--cache"], target.models[0], None
    )
    return [
        standin_node.node_binary(),
        str(copy / "server.js"),
        str(standin_node_drafter.configuration_file(config)),
    ], {}


ROLES: dict[str, Role] = {
    "verifier": Role(standin_node.SOURCE, standin_node.installed, _verifier_target, _verifier_command),
    "router": Role(standin_node_router.SOURCE, standin_node_router.installed, _router_target, _router_command),
    "drafter": Role(standin_node_drafter.SOURCE, standin_node_drafter.installed, _drafter_target, _drafter_command),
}


def outcome(report: dict[str, object]) -> str:
    run = report["run"]
    assert isinstance(run, dict)
    if run["status"] != "PASSED":
        return str(run["status"])
    counts = report["counts"]
    assert isinstance(counts, dict)
    return "NON-STRICT" if counts.get("NON-STRICT") else "PASSED"


def _start(command: list[str], environment: dict[str, str], log: Path) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        command, env={**os.environ, **environment}, stdout=subprocess.PIPE, stderr=log.open("w"), text=True
    )
    assert process.stdout is not None
    lines: queue.Queue[str] = queue.Queue()
    stream = process.stdout

    def pump() -> None:  # a reader thread, so that waiting for the ready line has a deadline
        for line in stream:
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    try:
        line = lines.get(timeout=READY_TIMEOUT_S)
    except queue.Empty:
        line = ""
    if not line.startswith("serving"):
        _stop(process)
        raise SystemExit(f"the planted copy did not start (see {log}): {line!r}")
    return process


def _stop(process: subprocess.Popen[str]) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def plant(name: str, planted: Planted, source: Path, into: Path) -> None:
    shutil.copytree(source, into, symlinks=True)
    file = into / planted.file.removeprefix("../")  # the shared ../node_common/ is installed as node_common/
    text = file.read_text(encoding="utf-8")
    if text.count(planted.line) != 1:
        raise SystemExit(
            f"{name}: the line to change occurs {text.count(planted.line)} times in {planted.file} "
            f"(the stand-in changed: update tests/standins/planted.py)"
        )
    file.write_text(text.replace(planted.line, planted.replacement), encoding="utf-8")


def killers(report: dict[str, object]) -> list[str]:
    results = report.get("results", [])
    assert isinstance(results, list)
    return [str(result["id"]) for result in results if result["verdict"] in ("FAILED", "NON-STRICT")]


def failed_rows(report: dict[str, object], severity: str = "FAILED") -> set[str]:
    """The rows of the findings at ``severity`` (FAILED, or NON-STRICT for a run that passed with a profile
    finding) of the cases whose verdict it is."""
    results = report.get("results", [])
    assert isinstance(results, list)
    return {str(finding.get("row")) for result in results if result["verdict"] == severity
            for finding in result.get("findings", []) if finding.get("severity") == severity}


def certify_planted(
    role_name: str, name: str, path: Path, work: Path, *, seed: int, select: Sequence[str] = ()
) -> tuple[dict[str, Any] | None, int]:
    """Plant one bug in a copy of the role's stand-in, start it for the target at ``path``, certify it with
    ``select`` (``--only``/``--exclude`` arguments; default every case), stop it: (report.json, exit status)."""
    role = ROLES[role_name]
    copy = work / f"{role_name}-{name}"
    shutil.rmtree(copy, ignore_errors=True)
    plant(name, PLANTED[role_name][name], role.installed(), copy)
    reports = work / f"reports-{role_name}-{name}"
    shutil.rmtree(reports, ignore_errors=True)
    command, environment = role.command(copy, path)
    process = _start(command, environment, work / f"{role_name}-{name}.log")
    try:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "sdcp_conformance.cli",
                "certify",
                "--target",
                str(path),
                "--seed",
                str(seed),
                "--report-dir",
                str(reports),
                *select,
            ],
            capture_output=True,
            text=True,
            timeout=CERTIFY_TIMEOUT_S,
        )
    finally:
        _stop(process)
        shutil.rmtree(copy, ignore_errors=True)
    report_file = reports / "report.json"
    return (json.loads(report_file.read_text()) if report_file.exists() else None), done.returncode


def campaign(role_name: str, names: list[str], seed: int, work: Path) -> list[str]:
    """Plant, start and certify each named bug of the role; print a line each; the names that differ."""
    bugs = PLANTED[role_name]
    path, excluded = ROLES[role_name].target(work / f"pki-{role_name}")
    differing = []
    for name in names or list(bugs):
        planted = bugs[name]
        started = time.monotonic()
        report, status = certify_planted(
            role_name, name, path, work, seed=seed, select=[f"--exclude={case}" for case in excluded]
        )
        got = outcome(report) if report is not None else f"no report (exit {status})"
        severity = "NON-STRICT" if got == "NON-STRICT" else "FAILED"
        if planted.row and report is not None and planted.row not in failed_rows(report, severity):
            got += f", not on {planted.row}"
        # "A|B": either outcome is expected (a bug whose sighting depends on the cases' interleaving, said in why)
        as_expected = got in planted.expected.split("|")
        mark = "ok  " if as_expected else "DIFF"
        if not as_expected:
            differing.append(f"{role_name}:{name}")
        caught = ", ".join(killers(report)[:4]) if report is not None else ""
        print(
            f"{mark} {role_name:8s} {name:34s} {got:11s} expected {planted.expected:11s} "
            f"{time.monotonic() - started:5.1f} s"
            + (f"  [{caught}]" if caught else "")
            + (f"  ({planted.why})" if planted.why else ""),
            flush=True,
        )
    return differing


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="planted bugs of the role to try (default: all)")
    parser.add_argument("--role", choices=[*ROLES, "all"], default="verifier")
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--keep", type=Path, help="keep the reports and logs in this folder")
    args = parser.parse_args()
    roles = list(ROLES) if args.role == "all" else [args.role]
    if args.names and len(roles) > 1:
        parser.error("name planted bugs of one --role")
    unknown = sorted(set(args.names) - set(PLANTED[roles[0]]))
    if unknown:
        parser.error(f"unknown planted bug(s) {unknown}; known: {', '.join(PLANTED[roles[0]])}")
    differing: list[str] = []
    total = 0
    with tempfile.TemporaryDirectory(prefix="standin-mutants-") as scratch:
        work = args.keep or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        for role in roles:
            total += len(args.names or PLANTED[role])
            differing += campaign(role, args.names, args.seed, work)
    print(
        f"{total - len(differing)} of {total} as expected"
        + (f"; differing: {', '.join(differing)}" if differing else "")
    )
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
