"""pytest plugin: the conformance cases of a role (verifier, drafter, router) as pytest items.

``pytest --sdcp-target target.toml`` (or ``pytest --sdcp-suite`` for an
embedded reference, ``--sdcp-role`` naming which) collects one item per case, node ID = case ID,
in the runner's order (sanity first and last, the rest shuffled by
``--sdcp-seed``), and runs them in one harness environment started at the
first item and stopped when the session ends. FAILED, ERROR and XPASS fail
the item with the message and the transcript; SKIPPED skips; XFAIL is an
xfail; NON-STRICT and INFORMATIONAL pass with a warning. Under ``--junitxml``
each case's testcase has ``classname`` ``role.area`` and its verdict,
message and findings in ``<system-out>``, and the testsuite's properties list
the NON-STRICT (and INFORMATIONAL, XFAIL) cases by ID (D-RPT-6): the file
validates against the JUnit schema Jenkins' xUnit plugin uses, which allows
no properties on a testcase, so none are recorded there.

Under pytest-xdist (``-n N``) the cases are spread over the workers. With
the embedded reference each worker certifies its own. With ``--sdcp-target``
all workers certify the one IUT: each serves its own cache on a free port,
the cases that judge traffic at the harness's fixed listeners (the verifier's
escalation events at the router) go to one worker (their node IDs end in
``@sdcp-listeners`` and the plugin switches ``--dist load`` to
``loadgroup``), as do all the cases of a
role whose played counterparts listen at the addresses the IUT was
configured with (drafter, router), and an exclusive case waits until no
other worker runs a case (:mod:`sdcp_conformance.harness.process_lock`).

Given the suite's options and no paths, the run is the cases alone: the tests pytest would collect by default
are not (:func:`cases_only_without_paths`); name paths to run both.

Registered as a ``pytest11`` entry point, so it is loaded by every pytest run
of every project where this package is installed: without its options it
only adds them, and it imports nothing heavy until it is asked to run.
"""

from __future__ import annotations

import asyncio
import inspect
import warnings
from collections.abc import Iterator
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from sdcp_conformance.transport import event_loops

if TYPE_CHECKING:
    from _pytest._code.code import ExceptionInfo, TerminalRepr

    from sdcp_conformance.harness.case import Case
    from sdcp_conformance.harness.expected import ExpectedFailures
    from sdcp_conformance.harness.runner import CaseResult, HarnessEnvironment
    from sdcp_conformance.harness.target import TargetConfig

PLUGIN_NAME = "sdcp-conformance-suite"


class SdcpNote(UserWarning):
    """A NON-STRICT or INFORMATIONAL verdict: the item passes, the note is shown in the warnings summary."""


class SdcpCaseFailure(Exception):
    """A case ended FAILED, ERROR or XPASS (or could not run): the item fails with this text."""


def _seed(text: str) -> int:
    """``--sdcp-seed``: an integer in certify's ``--seed`` range (:mod:`sdcp_conformance.cli.seeds`)."""
    import argparse

    from sdcp_conformance.cli.seeds import SEED_MAX

    try:
        seed = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if not 0 <= seed <= SEED_MAX:
        raise argparse.ArgumentTypeError(f"{seed} is not in 0..{SEED_MAX}")
    return seed


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("sdcp", "SDCP verifier conformance suite")
    group.addoption("--sdcp-suite", action="store_true", default=False,
                    help="Run the verifier conformance cases (against the embedded reference verifier unless "
                    "--sdcp-target is given).")
    group.addoption("--sdcp-target", metavar="PATH", default=None,
                    help="Target description (TOML) of the verifier under test; implies --sdcp-suite.")
    group.addoption("--sdcp-only", action="append", default=[], metavar="ID-OR-AREA",
                    help="Only these cases: a case ID, an ID prefix or an area (repeatable).")
    group.addoption("--sdcp-seed", type=_seed, default=None, metavar="0..4294967295",
                    help="Seed of the case order (default: drawn at random and printed), as certify's --seed.")
    group.addoption("--sdcp-expected-failures", metavar="PATH", default=None,
                    help="Expected-failures file ([[expected]] id, contains, reason).")
    group.addoption("--sdcp-role", default=None, metavar="ROLE",
                    help="Without --sdcp-target: which embedded reference to certify (default verifier).")


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("sdcp_suite") or config.getoption("sdcp_target"):
        cases_only_without_paths(config)
        config.pluginmanager.register(SdcpSuite(config), PLUGIN_NAME)


def cases_only_without_paths(config: pytest.Config) -> None:
    """Decision (not in the draft or profile): ``pytest --sdcp-suite`` or ``--sdcp-target`` without paths runs the
    conformance cases only, not also the tests pytest would collect by default (the project's ``testpaths`` or the
    current folder): in a project's root ``pytest --sdcp-target t.toml`` would otherwise run its whole test suite
    before the first case. Naming paths (``pytest tests --sdcp-target t.toml``) runs both."""
    if config.args_source is not pytest.Config.ArgsSource.ARGS:
        config.args = []


class SdcpItem(pytest.Item):
    """One run of one conformance case."""

    def __init__(self, *, case: Case, run: str, suite: SdcpSuite, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case
        self.run = run
        self.suite = suite
        self.result: CaseResult | None = None

    def runtest(self) -> None:
        from sdcp_conformance.harness.case import Verdict

        result = self.suite.run(self)
        self.result = result
        if result.outcome.counts_as_failure:
            raise SdcpCaseFailure(describe_result(result))
        if result.verdict is Verdict.SKIPPED:
            pytest.skip(result.message)
        if result.verdict is Verdict.INCOMPLETE:  # P1-JUDGE-4: nothing judged, and the run cannot pass
            raise SdcpCaseFailure(describe_result(result))
        if result.verdict is Verdict.XFAIL:
            pytest.xfail(f"{result.expected_failure}: {result.message}")
        if result.verdict in (Verdict.NON_STRICT, Verdict.INFORMATIONAL):
            warnings.warn(SdcpNote(f"{self.case.id} {result.verdict.value}: {result.message}"), stacklevel=1)

    def repr_failure(self, excinfo: ExceptionInfo[BaseException],
                     style: Any = None) -> str | TerminalRepr:
        if isinstance(excinfo.value, SdcpCaseFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        source = inspect.getsourcefile(self.case.run)
        line = inspect.getsourcelines(self.case.run)[1] if source else None
        return Path(source) if source else self.path, line, f"{self.case.id} [{self.run}] §{self.case.section}"


def describe_result(result: CaseResult) -> str:
    """The failure text: verdict, message, expectations, the quoted sentence, the transcript."""
    lines = [f"{result.case.id} {result.verdict.value}: {result.message}"]
    if result.expected:
        lines.append("expected: " + " | ".join(result.expected))
    if result.actual:
        lines.append(f"actual: {result.actual}")
    lines.append(f'§{result.case.section} ({result.case.level.value}): "{result.case.quote}"')
    if result.transcript:
        from sdcp_conformance.report.junit import FAILURE_TEXT_LIMIT

        room = FAILURE_TEXT_LIMIT - sum(len(line.encode()) + 1 for line in lines) - 256
        kept: list[str] = []  # the last exchanges, within the JUnit failure text's limit (CI reads the file)
        for entry in reversed(result.transcript):
            text = entry.render()
            room -= len(text.encode()) + 1
            if room < 0:
                break
            kept.append(text)
        total = len(result.transcript)
        lines.append("transcript:" if len(kept) == total else
                     f"transcript (the last {len(kept)} of {total} exchanges; `sdcp-conformance certify --only "
                     f"{result.case.id}` writes all of them to report.html and evidence.json.gz):")
        lines += kept[::-1]
    return "\n".join(lines)


class SdcpSuite:
    """The registered plugin object: collects the cases, owns the event loop and the environment."""

    def __init__(self, config: pytest.Config) -> None:
        import secrets

        from sdcp_conformance.errors import InvalidArgument
        from sdcp_conformance.harness.certify import default_catalogue

        self.config = config
        given: int | None = config.getoption("sdcp_seed")
        worker = getattr(config, "workerinput", None)  # pytest-xdist: the controller chose the seed
        if given is None and worker is not None and "sdcp_seed" in worker:
            given = int(worker["sdcp_seed"])
        self.seed: int = secrets.randbelow(2**32) if given is None else given
        try:
            self.target = _target(config.getoption("sdcp_target"))
            self.role = self.target.role if self.target else config.getoption("sdcp_role") or "verifier"
            self.catalogue = default_catalogue(self.role)
            self.selected = self.catalogue.select(config.getoption("sdcp_only"))
            self.expected = _expected(config.getoption("sdcp_expected_failures"), set(self.catalogue.cases))
        except InvalidArgument as exc:
            raise pytest.UsageError(f"sdcp: {exc}") from exc
        self.loop: asyncio.AbstractEventLoop | None = None
        self.env: HarnessEnvironment | None = None
        self.start_error = ""
        self.dead = ""
        self.verdicts: dict[str, int] = {}
        self.junit_seeded = False
        self.worker: dict[str, Any] | None = worker
        self.lock_folder: Path | None = None
        """pytest-xdist against a target: where the workers' shared lock lives (made by the controller)."""
        if worker is not None and worker.get("sdcp_lock"):
            self.lock_folder = Path(worker["sdcp_lock"])
        elif worker is None and self.target is not None and _xdist_workers(config):
            dist = getattr(config.option, "dist", "no")
            if dist not in ("load", "loadgroup"):
                raise pytest.UsageError(f"sdcp: --sdcp-target under pytest-xdist needs --dist load or loadgroup "
                                        f"(the cases that listen at the target's harness addresses must stay "
                                        f"on one worker), not --dist {dist}")
            config.option.dist = "loadgroup"
            import tempfile

            self.lock_folder = Path(tempfile.mkdtemp(prefix="sdcp-xdist-"))

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """pytest-xdist: every worker collects the cases in the same seeded order (else xdist refuses to run),
        and each starts its own harness environment (its own embedded IUT, or the target's)."""
        node.workerinput["sdcp_seed"] = self.seed
        if self.lock_folder is not None:
            node.workerinput["sdcp_lock"] = str(self.lock_folder)

    def pytest_unconfigure(self) -> None:
        if self.worker is None and self.lock_folder is not None:  # the controller made it
            import shutil

            shutil.rmtree(self.lock_folder, ignore_errors=True)

    @property
    def beside_others(self) -> bool:
        """This process is one of several pytest-xdist workers certifying the one target."""
        return self.worker is not None and self.target is not None

    # ------------------------------------------------------------------ collection

    def items(self, session: pytest.Session) -> Iterator[SdcpItem]:
        from sdcp_conformance.harness.runner import order_cases

        for case, run in order_cases(self.catalogue, self.selected, self.seed):
            nodeid = case.id if run in ("main", "sanity-first") else f"{case.id}[{run}]"
            group = self._xdist_group(case) if self.beside_others else None
            if group is not None:
                # loadgroup's scheduler keeps together the node IDs that end in the same "@group". xdist's own
                # marker-to-suffix step sets an attribute pytest 9 no longer reads, so the suffix is put here.
                nodeid = f"{nodeid}@{group}"
            yield SdcpItem.from_parent(session, name=nodeid, nodeid=nodeid, case=case, run=run, suite=self)

    def _xdist_group(self, case: Case) -> str | None:
        """The worker group ``case`` must run in when workers share the target (None: any worker)."""
        from sdcp_conformance.harness.role_spec import spec_of

        if not spec_of(self.role).environment.shares_target:
            return f"sdcp-{self.role}"  # its played roles listen where the IUT was told: one worker runs all
        return "sdcp-listeners" if case.listens else None

    @pytest.hookimpl(tryfirst=True)  # before -k/-m deselection, so those apply to the cases too
    def pytest_collection_modifyitems(self, session: pytest.Session, items: list[pytest.Item]) -> None:
        items.extend(self.items(session))

    # ------------------------------------------------------------------ running

    def _environment(self) -> HarnessEnvironment | None:
        from sdcp_conformance.harness.role_spec import spec_of

        if self.env is None and not self.start_error:
            self.loop = event_loops.new_event_loop()
            try:
                environment_class = spec_of(self.role).environment
                target = self.target
                if self.beside_others and environment_class.shares_target and target is not None:
                    starting = environment_class.start_beside_others(target)
                else:
                    starting = environment_class.start(target)
                self.env = self.loop.run_until_complete(starting)
            except Exception as exc:  # reported on every item instead of crashing the session
                self.start_error = f"the harness could not start: {type(exc).__name__}: {exc}"
        return self.env

    def run(self, item: SdcpItem) -> CaseResult:
        from sdcp_conformance.harness.case import Verdict
        from sdcp_conformance.harness.patience import RERUN_SCALE
        from sdcp_conformance.harness.runner import CaseResult, after_rerun, needs_rerun, run_case

        env = self._environment()
        if env is None or self.loop is None:
            raise SdcpCaseFailure(self.start_error)
        if self.dead and item.run == "main" and not item.case.standalone:
            result = CaseResult(item.case, Verdict.SKIPPED, f"not run: the sanity case failed first ({self.dead})",
                                run=item.run)
        else:
            with self._turn(item.case):
                result = self.loop.run_until_complete(run_case(env, item.case, self.seed, item.run))
                if needs_rerun(result):  # P1-JUDGE-5: again at once, alone (pytest runs one item at a time)
                    again = run_case(env, item.case, self.seed, item.run, scale=RERUN_SCALE)
                    result = after_rerun(result, self.loop.run_until_complete(again))
            if item.run == "sanity-first" and not result.outcome.sanity_passed:
                self.dead = (result.message or result.verdict.value).splitlines()[0]
        if self.expected is not None:
            self.expected.apply(result)
        return result

    def _turn(self, case: Case) -> AbstractContextManager[None]:
        """Workers sharing a target: an exclusive case runs while no other worker runs one; others run together."""
        if self.lock_folder is None or not self.beside_others:
            return nullcontext()
        from sdcp_conformance.harness.process_lock import SharedExclusiveLock

        lock = SharedExclusiveLock(self.lock_folder)
        return lock.exclusive() if case.exclusive else lock.shared()

    @staticmethod
    def report_fields(result: CaseResult, seed: int) -> dict[str, Any]:
        """What the call report carries to whoever writes the JUnit file (the controller, under pytest-xdist)."""
        from sdcp_conformance.report.junit import classname

        lines = [f"verdict: {result.verdict.value}", f"seed: {seed}",
                 f"§{result.case.section} ({result.case.level.value}): {result.case.quote}"]
        if result.message:
            lines.append(result.message)
        lines += [f"finding: {f.severity.value} [{f.row}] {f.message}" for f in result.findings]
        return {"verdict": result.verdict.value, "classname": classname(result.case.role, result.case.area),
                "lines": lines, "seed": seed}

    def record_junit(self, report: pytest.TestReport, fields: dict[str, Any]) -> None:
        """Under ``--junitxml``: classname ``role.area``, the verdict in system-out, flagged verdicts as suite
        properties (pytest's junit writer has no public hook for these, so its node reporter is used)."""
        import xml.etree.ElementTree as ET

        from sdcp_conformance.report.junit import FLAGGED

        try:
            from _pytest.junitxml import xml_key

            junit = self.config.stash.get(xml_key, None)
            if junit is None:
                return
            reporter = junit.node_reporter(report)
            reporter.add_attribute("classname", fields["classname"])
            out = ET.Element("system-out")
            out.text = "\n".join(fields["lines"])
            reporter.append(out)
            if not self.junit_seeded:
                junit.add_global_property("sdcp.seed", str(fields["seed"]))
                self.junit_seeded = True
            for verdict, key in FLAGGED:
                if fields["verdict"] == verdict.value:
                    junit.add_global_property(key, report.nodeid)
        except (ImportError, AttributeError):  # another pytest's junit writer: the report stays plain
            return

    def pytest_sessionfinish(self) -> None:
        if self.loop is None:
            return
        if self.env is not None:
            self.loop.run_until_complete(self.env.stop())
            self.env = None
        self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        self.loop.close()
        self.loop = None

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        """The verdict rides on the call report, an attribute pytest-xdist serialises to the controller."""
        outcome = yield
        result = getattr(item, "result", None)
        if call.when == "call" and isinstance(item, SdcpItem) and result is not None:
            outcome.get_result().sdcp = self.report_fields(result, self.seed)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Counted and written to JUnit from the reports, so a pytest-xdist controller does it for its workers."""
        fields = getattr(report, "sdcp", None)
        if report.when != "call" or not isinstance(fields, dict):
            return
        verdict = str(fields["verdict"])
        self.verdicts[verdict] = self.verdicts.get(verdict, 0) + 1
        self.record_junit(report, fields)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        counts = ", ".join(f"{verdict} {count}" for verdict, count in sorted(self.verdicts.items()))
        terminalreporter.write_sep("-", "SDCP conformance")
        terminalreporter.write_line(f"verdicts: {counts or 'none run'}; seed {self.seed} "
                                    f"(replay the order with --sdcp-seed {self.seed})")
        if self.start_error:
            terminalreporter.write_line(self.start_error)


def _xdist_workers(config: pytest.Config) -> int:
    """How many pytest-xdist workers this run starts (0 without xdist)."""
    count = getattr(config.option, "numprocesses", None)
    return count if isinstance(count, int) else 0


def _target(path: str | None) -> TargetConfig | None:
    from sdcp_conformance.harness.target import load_target

    return None if path is None else load_target(Path(path))


def _expected(path: str | None, known: set[str]) -> ExpectedFailures | None:
    from sdcp_conformance.errors import InvalidArgument
    from sdcp_conformance.harness.expected import ExpectedFailures

    if path is None:
        return None
    expected = ExpectedFailures.load(Path(path))
    unknown = expected.unknown_ids(known)
    if unknown:
        raise InvalidArgument(f"{path}: no such case ID: {', '.join(unknown)}")
    return expected


__all__ = [
    "PLUGIN_NAME",
    "SdcpCaseFailure",
    "SdcpItem",
    "SdcpNote",
    "SdcpSuite",
    "cases_only_without_paths",
    "describe_result",
    "pytest_addoption",
    "pytest_configure",
]
