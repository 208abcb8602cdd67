"""Splitting a certification over CI workers: ``certify --shard K/N`` runs a deterministic part of the cases.

Each shard gets whole cases, chosen by longest-processing-time-first over the
durations recorded in the suite's ``durations.json`` (a case not recorded
there counts as the median), ties broken by case ID, so the N parts are
balanced and every run of the same suite splits the same way. The sanity
case runs first and last in every shard (the runner adds it). The
statistical cases' false-alarm budget is split over the whole suite's
designs, not over a shard's (``oracle/statistics.py: case_alpha``), so N shards
together keep the stated α.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.harness.case import Case, Catalogue

DURATIONS_FILE = "durations.json"
_SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


def parse_shard(text: str) -> tuple[int, int]:
    """``"2/3"`` → (2, 3): the second of three shards (1-based)."""
    found = _SHARD.match(text)
    if found is None:
        raise InvalidArgument(f"--shard {text!r}: expected K/N, e.g. 1/3")
    index, count = int(found.group(1)), int(found.group(2))
    if count < 1 or not 1 <= index <= count:
        raise InvalidArgument(f"--shard {text!r}: K must be between 1 and N (N >= 1)")
    return index, count


def recorded_durations(catalogue: Catalogue) -> dict[str, float]:
    """Seconds per case ID as last recorded for the suite (empty when nothing was recorded)."""
    package = catalogue_package(catalogue)
    try:
        text = resources.files(package).joinpath(DURATIONS_FILE).read_text(encoding="utf-8")
    except (FileNotFoundError, ModuleNotFoundError):
        return {}
    data = json.loads(text)
    return {str(case): float(seconds) for case, seconds in data.items()}


def catalogue_package(catalogue: Catalogue) -> str:
    return f"sdcp_conformance.suites.{catalogue.role}"


def shard_cases(cases: Sequence[Case], index: int, count: int, durations: Mapping[str, float],
                sanity_id: str | None = None) -> list[Case]:
    """The cases of shard ``index`` of ``count`` (1-based), the sanity case left to the runner."""
    work = [case for case in cases if case.id != sanity_id]
    known = sorted(durations.values())
    typical = known[len(known) // 2] if known else 1.0
    loads = [0.0] * count
    members: list[list[Case]] = [[] for _ in range(count)]
    for case in sorted(work, key=lambda case: (-durations.get(case.id, typical), case.id)):
        lightest = min(range(count), key=lambda shard: (loads[shard], shard))
        loads[lightest] += durations.get(case.id, typical)
        members[lightest].append(case)
    chosen = {case.id for case in members[index - 1]}
    sanity = [case for case in cases if case.id == sanity_id]
    return [*sanity, *[case for case in work if case.id in chosen]]


def write_durations(path: Path, results: Sequence[tuple[str, float]]) -> None:
    """Record each case's duration (the longest of its runs), rounded, in ID order."""
    merged: dict[str, float] = {}
    for case_id, seconds in results:
        merged[case_id] = max(merged.get(case_id, 0.0), round(seconds, 3))
    path.write_text(json.dumps(dict(sorted(merged.items())), indent=1) + "\n", encoding="utf-8")


__all__ = ["DURATIONS_FILE", "catalogue_package", "parse_shard", "recorded_durations", "shard_cases", "write_durations"]
