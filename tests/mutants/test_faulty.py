"""The faulty building blocks do what their names say, and the selftest command is wired up."""

from __future__ import annotations

import numpy as np
from click.testing import CliRunner

from sdcp_conformance.cli.selftest import selftest
from sdcp_conformance.mutants.verifier.faulty import Rule1Fault, faulty_rule1, raw_member
from sdcp_conformance.protocol.codec import encode
from sdcp_conformance.protocol.rules import rule1

ROWS = np.array([[0.0, 2.0, 2.0], [5.0, 0.0, 1.0], [0.0, 0.0, 3.0]])


def test_reference_rule1_on_the_fixture() -> None:
    outcome = rule1(ROWS, [1, 2])
    assert (outcome.accepted, outcome.emitted) == (1, [1, 0])


def test_ties_to_larger_id_prefers_the_larger_token() -> None:
    outcome = faulty_rule1(ROWS, [1, 2], Rule1Fault.TIES_TO_LARGER_ID)
    assert (outcome.accepted, outcome.emitted) == (0, [2])


def test_bonus_from_p_a_reads_the_row_before() -> None:
    outcome = faulty_rule1(ROWS, [1, 2], Rule1Fault.BONUS_FROM_P_A)
    assert outcome.emitted == [1, 1]


def test_extra_position_accepts_the_first_mismatch() -> None:
    outcome = faulty_rule1(ROWS, [1, 2], Rule1Fault.EXTRA_POSITION)
    assert (outcome.accepted, outcome.emitted) == (2, [1, 2, 2])


def test_raw_member_returns_the_received_bytes() -> None:
    contract = b"\xa2\x61z\x01\x61a\x19\x00\x02"  # {"z": 1, "a": 2}: unsorted keys, a non-minimal integer
    body = b"\xa2" + encode("epoch") + b"\x01" + encode("contract") + contract
    assert raw_member(body, "contract") == contract
    assert raw_member(body, "missing") is None


def test_selftest_refuses_an_unknown_mutant() -> None:
    result = CliRunner().invoke(selftest, ["--mutant", "no-such-mutant", "--no-reference"])
    assert result.exit_code == 2
    assert "no mutant named" in result.output
