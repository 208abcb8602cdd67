"""The pytest plugin, driven by pytester: silent without its options, one item per case with them."""

from __future__ import annotations

from importlib.metadata import entry_points

import pytest

# pytester's in-process runs drop the modules they imported afterwards, and numpy and torch cannot be imported
# twice in a process: import everything the plugin loads lazily here, once, before any run (the embedded
# reference's models and scoring too: without them this file failed when run alone, its second run reimporting
# torch).
import sdcp_conformance.cli.certify
import sdcp_conformance.harness.specs.verifier
import sdcp_conformance.models.checkpoint
import sdcp_conformance.models.runtime
import sdcp_conformance.reference.scoring
import sdcp_conformance.reference.stack
import sdcp_conformance.suites.verifier  # noqa: F401

pytest_plugins = ["pytester"]

SANITY = "VER-SANITY-001"


def _plugin_args() -> list[str]:
    """Load the plugin explicitly when the installed metadata predates its pytest11 entry point."""
    if any(ep.name == "sdcp_conformance" for ep in entry_points(group="pytest11")):
        return []
    return ["-p", "sdcp_conformance.pytest_plugin"]


def test_without_options_the_plugin_adds_nothing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="def test_one():\n    assert True\n")
    result = pytester.runpytest(*_plugin_args(), "-v")
    result.assert_outcomes(passed=1)
    assert "VER-" not in result.stdout.str()
    assert "SDCP conformance" not in result.stdout.str()


def test_options_are_listed_in_help(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(*_plugin_args(), "--help")
    result.stdout.fnmatch_lines(["*--sdcp-target=PATH*", "*--sdcp-suite*", "*--sdcp-only=ID-OR-AREA*"])


def test_suite_collects_cases_with_case_ids_as_node_ids(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(*_plugin_args(), "--sdcp-suite", "--sdcp-only", SANITY, "--sdcp-seed", "3",
                                "--collect-only", "-q")
    result.stdout.fnmatch_lines([SANITY, f"{SANITY}[[]sanity-last[]]"])


def test_suite_runs_against_the_embedded_reference(pytester: pytest.Pytester) -> None:
    junit = pytester.path / "junit.xml"
    result = pytester.runpytest(*_plugin_args(), "--sdcp-suite", "--sdcp-only", SANITY, "--sdcp-seed", "3", "-v",
                                f"--junitxml={junit}")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([f"{SANITY} PASSED*", "*verdicts: PASSED 2; seed 3*"])
    text = junit.read_text(encoding="utf-8")
    assert 'classname="verifier.sanity"' in text and "verdict: PASSED" in text


def test_stale_expected_failure_fails_the_item_with_the_case_text(pytester: pytest.Pytester) -> None:
    listed = pytester.makefile(".toml", expected=f'[[expected]]\nid = "{SANITY}"\nreason = "tracked"\n')
    result = pytester.runpytest(*_plugin_args(), "--sdcp-suite", "--sdcp-only", SANITY, "--sdcp-seed", "3",
                                "--sdcp-expected-failures", str(listed))
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*VER-SANITY-001 XPASS: listed as an expected failure (tracked)*", "*transcript:*"])


def test_keyword_selection_applies_to_cases(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(*_plugin_args(), "--sdcp-suite", "--sdcp-only", SANITY, "-k", "sanity-last",
                                "--collect-only", "-q")
    listed = [line for line in result.stdout.lines if line.startswith("VER-")]
    assert listed == [f"{SANITY}[sanity-last]"]


def test_bad_target_is_a_usage_error(pytester: pytest.Pytester) -> None:
    broken = pytester.makefile(".toml", target="[target\n")
    result = pytester.runpytest(*_plugin_args(), "--sdcp-target", str(broken))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*sdcp:*cannot read the target file*"])


def test_unknown_selector_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(*_plugin_args(), "--sdcp-suite", "--sdcp-only", "VER-NO-SUCH")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*no case matches*"])


def test_without_paths_the_suite_options_run_the_cases_only(pytester: pytest.Pytester) -> None:
    """In a project's root, ``pytest --sdcp-suite`` must not also run the project's tests (the default paths)."""
    pytester.makepyfile(test_plain="def test_one():\n    assert True\n")
    alone = pytester.runpytest(*_plugin_args(), "--sdcp-suite", "--sdcp-only", SANITY, "--collect-only", "-q")
    assert "test_plain.py::test_one" not in alone.stdout.str()
    assert SANITY in alone.stdout.str()
    named = pytester.runpytest(*_plugin_args(), "test_plain.py", "--sdcp-suite", "--sdcp-only", SANITY,
                               "--collect-only", "-q")
    assert "test_plain.py::test_one" in named.stdout.str() and SANITY in named.stdout.str()
