"""The harness's own rule-2 oracle against the independent vectors (generated without this package)."""

from __future__ import annotations

from typing import Any

import pytest

from sdcp_conformance.oracle import rule2 as oracle
from tests.vectors import read_vectors

ROUNDS: list[dict[str, Any]] = read_vectors("rule2_rounds.json")["rounds"]


@pytest.mark.parametrize("case", ROUNDS, ids=lambda case: case["name"])
def test_the_oracle_predicts_every_seeded_round_of_the_vectors(case: dict[str, Any]) -> None:
    session = bytes.fromhex(case["session"])
    outcome = oracle.rule2(case["p_rows"], case["q_rows"], case["tokens"], case["seed"], session, case["round"])
    expected = case["expected"]
    assert (outcome.accepted, outcome.emitted) == (expected["accepted"], expected["emitted"])


@pytest.mark.parametrize("case", ROUNDS, ids=lambda case: case["name"])
def test_the_oracles_uniforms_are_the_vectors_hmac_values(case: dict[str, Any]) -> None:
    session = bytes.fromhex(case["session"])
    for i, purpose, value in case["expected"]["uniform_calls"]:
        assert oracle.uniform(case["seed"], session, case["round"], i, purpose) == value


def test_the_vectors_exercise_rejections_full_acceptance_and_residual_draws() -> None:
    accepted = [(case["expected"]["accepted"], len(case["tokens"])) for case in ROUNDS]
    assert any(a == m for a, m in accepted) and any(a < m for a, m in accepted) and any(a == 0 for a, _ in accepted)
