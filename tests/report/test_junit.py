"""JUnit from `certify` and from the pytest plugin: valid against Jenkins' schema, classname role.area,
NON-STRICT visible (a suite property and system-out; a failure under --strict)."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import xmlschema

from sdcp_conformance.harness.case import Case, Catalogue, Level, Verdict
from sdcp_conformance.harness.certify import default_catalogue
from sdcp_conformance.harness.runner import CaseResult, RunReport
from sdcp_conformance.judge import Finding
from sdcp_conformance.report.junit import junit_tree
from tests.report.conftest import Run

SCHEMA = xmlschema.XMLSchema(Path(__file__).with_name("junit-10.xsd"))


async def _noop(ctx: object) -> None:
    return None


def _report(strict: bool) -> RunReport:
    catalogue = Catalogue()
    results = []
    for number, verdict in enumerate(Verdict, start=1):
        case = catalogue.add(Case(f"VER-6.3-X-{number:03d}", "fencing" if number % 2 else "idempotency", "6.3",
                                  "a sentence", Level.MUST, _noop))
        findings = [Finding("P1-ERR-1", Verdict.NON_STRICT, "type prefix")] if verdict is Verdict.NON_STRICT else []
        results.append(CaseResult(case, verdict, f"{verdict.value} because \x01", findings=findings))
    return RunReport(7, results, 1_800_000_000.0, 1_800_000_002.0, {"iut": "https://x/"}, strict=strict)


def _testcases(tree: ET.ElementTree) -> dict[str, ET.Element]:
    return {case.get("name", ""): case for case in tree.iter("testcase")}


@pytest.mark.parametrize("strict", [False, True])
def test_every_verdict_validates_and_non_strict_stays_visible(tmp_path: Path, strict: bool) -> None:
    tree = junit_tree(_report(strict))
    path = tmp_path / "junit.xml"
    tree.write(path, encoding="utf-8", xml_declaration=True)
    SCHEMA.validate(path)
    cases = _testcases(tree)
    non_strict = cases["VER-6.3-X-003"]  # NON-STRICT is the third verdict
    assert non_strict.get("classname") == "verifier.fencing"
    assert "verdict: NON-STRICT" in (non_strict.findtext("system-out") or "")
    properties = {p.get("name"): p.get("value") for p in tree.iter("property")}
    assert properties["sdcp.non-strict"] == "VER-6.3-X-003" and properties["sdcp.non-strict.count"] == "1"
    assert (non_strict.find("failure") is not None) is strict


def test_certify_junit_validates(full_run: Run, mutant_run: Run) -> None:
    for run in (full_run, mutant_run):
        SCHEMA.validate(run.folder / "junit.xml")
        classes = {case.get("classname") for case in ET.parse(run.folder / "junit.xml").iter("testcase")}
        assert classes and all(name and name.startswith("verifier.") for name in classes)
    failures = ET.parse(mutant_run.folder / "junit.xml").getroot().findall(".//failure")
    assert failures and all("transcript:" in (failure.text or "") for failure in failures)


def test_plugin_junit_validates_with_role_area_classnames(tmp_path: Path) -> None:
    junit = tmp_path / "plugin.xml"
    from importlib.metadata import entry_points

    load = [] if any(ep.name == "sdcp_conformance" for ep in entry_points(group="pytest11")) else \
        ["-p", "sdcp_conformance.pytest_plugin"]
    done = subprocess.run([sys.executable, "-m", "pytest", *load, "--sdcp-suite",
                           "--sdcp-only", "VER-SANITY-001", "--sdcp-only", "fencing", "--sdcp-seed", "3",
                           f"--junitxml={junit}", "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    SCHEMA.validate(junit)
    cases = list(ET.parse(junit).iter("testcase"))
    # The sanity case runs again after the others (its closing run), so it is two testcases.
    assert len(cases) == len(default_catalogue().select(["VER-SANITY-001", "fencing"])) + 1
    assert {case.get("classname") for case in cases} == {"verifier.sanity", "verifier.fencing"}
    assert all("verdict: PASSED" in (case.findtext("system-out") or "") for case in cases)
    assert {p.get("name"): p.get("value") for p in ET.parse(junit).iter("property")}["sdcp.seed"] == "3"
