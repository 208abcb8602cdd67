"""Every judging decision listed in judge/decisions.py is applied, by name, where the list says; none is listed
twice; each shapes rows that exist."""

from __future__ import annotations

import importlib
import inspect

from sdcp_conformance.judge import TABLE
from sdcp_conformance.judge.decisions import DECISIONS, decision


def test_each_decision_is_applied_where_it_is_listed() -> None:
    for listed in DECISIONS:
        source = inspect.getsource(importlib.import_module(f"sdcp_conformance.{listed.where}"))
        assert listed.id in source, f"{listed.id} is not named in sdcp_conformance.{listed.where}"


def test_decisions_are_unique_and_name_known_rows() -> None:
    ids = [listed.id for listed in DECISIONS]
    assert len(ids) == len(set(ids))
    for listed in DECISIONS:
        for row in listed.rows:
            assert row in TABLE or (row.startswith("P1-") and "/" not in row), f"{listed.id}: unknown row {row}"
    assert decision("D-JUDGE-LOST-1").rows[0] == "P1-JUDGE-6"
