"""``certify --shard K/N`` and ``report merge``: N parts that together are the unsharded certification."""

from __future__ import annotations

import json
import random
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from sdcp_conformance.cli import main
from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.harness.certify import default_catalogue
from sdcp_conformance.harness.shards import parse_shard, recorded_durations, shard_cases

SEED = "6"
AREAS = ("stale-base", "closed", "fencing", "rule-2")
MUTANT = "skip-round-check"  # the stale-base cases fail: the verdicts compared are not all PASSED


@pytest.mark.parametrize("text", ["0/3", "4/3", "1/0", "x", "1/", "-1/2"])
def test_a_shard_is_k_of_n_with_k_between_1_and_n(text: str) -> None:
    with pytest.raises(InvalidArgument):
        parse_shard(text)


@pytest.mark.parametrize("count", [1, 2, 3, 5])
def test_the_shards_partition_the_selection_evenly_and_always_the_same_way(count: int) -> None:
    catalogue = default_catalogue()
    cases = list(catalogue.cases.values())
    durations = recorded_durations(catalogue)
    assert durations, "the verifier suite ships its durations.json"
    shuffled = cases[:]
    random.Random(count).shuffle(shuffled)
    parts = [shard_cases(cases, k, count, durations, catalogue.sanity_id) for k in range(1, count + 1)]
    again = [shard_cases(shuffled, k, count, durations, catalogue.sanity_id) for k in range(1, count + 1)]
    assert [{c.id for c in part} for part in parts] == [{c.id for c in part} for part in again], \
        "the split depends on the order the cases came in"
    work = [[c.id for c in part if c.id != catalogue.sanity_id] for part in parts]
    assert sorted(i for part in work for i in part) == sorted(c.id for c in cases if c.id != catalogue.sanity_id)
    assert all(catalogue.sanity_id in {c.id for c in part} for part in parts), "the sanity case is in every shard"
    loads = [sum(durations.get(i, 0.0) for i in part) for part in work]
    assert max(loads) - min(loads) <= max(durations.values()), f"unbalanced shards: {loads}"


def _certify(tmp_path: Path, name: str, *extra: str, areas: tuple[str, ...] = AREAS) -> tuple[int, Path]:
    folder = tmp_path / name
    selection = [word for area in areas for word in ("--only", area)]
    result = CliRunner().invoke(main, ["certify", "--mutant", MUTANT, "--seed", SEED, *selection,
                                       "--report-dir", str(folder), *extra])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, folder


def _verdicts(folder: Path) -> dict[str, str]:
    document = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    return {record["id"]: record["verdict"] for record in document["results"] if record["run"] == "main"}


def _alphas(folder: Path) -> dict[str, float]:
    """The false-alarm level each statistical case ran at, from its attached trace."""
    document = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    return {record["id"]: record["attachments"]["rule2"]["alpha"]
            for record in document["results"] if "rule2" in record.get("attachments", {})}


@pytest.mark.slow
def test_three_shards_merged_are_the_unsharded_run(tmp_path: Path) -> None:
    whole_code, whole = _certify(tmp_path, "whole")
    shards = [_certify(tmp_path, f"shard{k}", "--shard", f"{k}/3") for k in (1, 2, 3)]
    assert whole_code == 1
    parts = [_verdicts(folder) for _, folder in shards]
    assert all(parts), "every shard ran cases"
    assert not set(parts[0]) & set(parts[1]) and not set(parts[1]) & set(parts[2]) and not set(parts[0]) & set(
        parts[2]), "a case ran in two shards"

    merged = tmp_path / "merged"
    result = CliRunner().invoke(main, ["report", "merge", *(str(folder) for _, folder in shards), "--out",
                                       str(merged)])
    assert result.exit_code == whole_code, result.output
    assert _verdicts(merged) == _verdicts(whole)
    document = json.loads((merged / "report.json").read_text(encoding="utf-8"))
    assert document["run"]["status"] == "FAILED" and document["environment"]["shards"] == 3
    # the statistical cases' budget is the whole suite's: the same α in a shard as unsharded
    stats = _alphas(whole)
    assert stats and _alphas(merged) == stats

    junit = ET.parse(merged / "junit.xml").getroot()
    names = [case.get("name") for case in junit.iter("testcase")]
    assert len(names) == len(set(names)) == len(document["results"])
    assert len(document["results"]) == len(_verdicts(whole)) + 2 * 3  # each shard's sanity runs first and last
    html = (merged / "report.html").read_text(encoding="utf-8")
    assert "VER-6.3-STALE-BASE-001" in html


@pytest.mark.slow
def test_merge_refuses_parts_that_are_not_one_certification(tmp_path: Path) -> None:
    _, first = _certify(tmp_path, "one", "--shard", "1/2", areas=("closed",))
    _, unsharded = _certify(tmp_path, "plain", areas=("closed",))
    runner = CliRunner()
    missing = runner.invoke(main, ["report", "merge", str(first), "--out", str(tmp_path / "m1")])
    assert missing.exit_code == 2 and "shard(s) 2 of 2 missing" in missing.output
    twice = runner.invoke(main, ["report", "merge", str(first), str(first), "--out", str(tmp_path / "m2")])
    assert twice.exit_code == 2 and "again" in twice.output
    plain = runner.invoke(main, ["report", "merge", str(first), str(unsharded), "--out", str(tmp_path / "m3")])
    assert plain.exit_code == 2 and "not the report of a sharded run" in plain.output
    assert not (tmp_path / "m1").exists() and not (tmp_path / "m2").exists()
