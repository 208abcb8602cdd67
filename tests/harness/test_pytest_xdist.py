"""The pytest plugin under pytest-xdist: the same verdicts with workers as without, embedded and against a target.

Each run is a child ``pytest`` (xdist starts processes); verdicts are read
from its JUnit file, one per case and run, whatever worker ran it. The
target runs use a separately started verifier with a planted bug, so the
verdicts compared include FAILED ones, and areas whose cases listen at the
harness's router (escalation) and exclusive ones, which the workers must
keep together and alone.
"""

from __future__ import annotations

import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from tests.harness.separate_process import separate_verifier

RUN_TIMEOUT_S = 600
VERDICT = re.compile(r"^verdict: (\S+)$", re.M)


def _plugin() -> list[str]:
    return [] if any(ep.name == "sdcp_conformance" for ep in entry_points(group="pytest11")) else [
        "-p", "sdcp_conformance.pytest_plugin"]


def verdicts(folder: Path, name: str, *args: str) -> dict[str, str]:
    """Run the plugin with ``args`` in an empty folder; case (and run) → verdict, from the JUnit file."""
    junit = folder / f"{name}.xml"
    work = folder / name
    work.mkdir()
    done = subprocess.run([sys.executable, "-m", "pytest", *_plugin(), "-p", "no:cacheprovider", "-q",
                           f"--junitxml={junit}", *args], cwd=work, capture_output=True, text=True,
                          timeout=RUN_TIMEOUT_S, check=False)
    assert junit.is_file(), done.stdout + done.stderr
    found: dict[str, str] = {}
    for testcase in ET.parse(junit).getroot().iter("testcase"):
        out = testcase.find("system-out")
        match = VERDICT.search(out.text or "") if out is not None else None
        assert match is not None, f"{testcase.get('name')}: no verdict in system-out\n{done.stdout}"
        case = testcase.get("name", "").split("@", 1)[0]  # xdist group suffix, when workers share a target
        assert case not in found, f"{case} ran twice"
        found[case] = match.group(1)
    assert found, done.stdout + done.stderr
    return found


EMBEDDED_AREAS = ("sanity", "closed", "output", "stale-base", "escalation")


@pytest.mark.slow
def test_four_workers_give_the_embedded_suite_the_verdicts_one_process_gives(tmp_path: Path) -> None:
    selection = [word for area in EMBEDDED_AREAS for word in ("--sdcp-only", area)]
    alone = verdicts(tmp_path, "alone", "--sdcp-suite", "--sdcp-seed", "5", *selection, "-n", "0")
    spread = verdicts(tmp_path, "spread", "--sdcp-suite", "--sdcp-seed", "5", *selection, "-n", "4")
    assert spread == alone
    from sdcp_conformance.harness.certify import default_catalogue

    assert len(alone) == len(default_catalogue().select(EMBEDDED_AREAS)) + 1  # sanity runs first and last
    assert "PASSED" in alone.values()


@pytest.fixture
def mutant_target(tmp_path: Path) -> Iterator[Path]:
    """A separately started reference verifier that skips the §4.2 round check (stale-base cases fail)."""
    with separate_verifier(tmp_path / "iut", tmp_path / "verifier.err", ("--mutant", "skip-round-check")) as (
            target, _):
        yield target


TARGET_AREAS = ("sanity", "stale-base", "escalation", "fencing", "truncation")


@pytest.mark.slow
def test_three_workers_on_one_target_give_the_verdicts_one_process_gives(mutant_target: Path,
                                                                         tmp_path: Path) -> None:
    selection = [word for area in TARGET_AREAS for word in ("--sdcp-only", area)]
    common = ("--sdcp-target", str(mutant_target), "--sdcp-seed", "8", *selection)
    alone = verdicts(tmp_path, "alone", *common, "-n", "0")
    spread = verdicts(tmp_path, "spread", *common, "-n", "3")
    assert spread == alone
    assert "FAILED" in alone.values() and "PASSED" in alone.values()
    # the second run met the IUT the first one left full of sessions, with the same seed: IDs never collide
    again = verdicts(tmp_path, "again", *common, "-n", "0")
    assert again == alone


def test_a_target_under_a_dist_mode_that_cannot_group_is_a_usage_error(tmp_path: Path) -> None:
    target = tmp_path / "iut"
    subprocess.run([sys.executable, "-m", "sdcp_conformance.cli", "pki", "init", str(target), "--iut", "verifier"],
                   capture_output=True, text=True, timeout=120, check=True)
    done = subprocess.run([sys.executable, "-m", "pytest", *_plugin(), "-p", "no:cacheprovider", "--sdcp-target",
                           str(target / "target.toml"), "-n", "2", "--dist", "loadfile"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    assert "--dist load or loadgroup" in done.stderr
