"""Tests for speculation control and escalation (draft §6.5, P1-CTL-1..5)."""

from __future__ import annotations

from typing import Any

import pytest

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.protocol.control import (
    Action,
    EscalationPolicy,
    RoundControl,
    SpeculationControl,
)
from sdcp_conformance.protocol.errors import ProtocolError
from sdcp_conformance.protocol.problems import ProblemType
from tests.vectors import read_vectors


def load_traces() -> list[dict[str, Any]]:
    return read_vectors("escalation_traces.json")["traces"]  # type: ignore[no-any-return]


def contract(**members: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"fallback": [1], "low_rounds": 2, "m_max": 8}
    base.update(members)
    return base


@pytest.mark.parametrize("trace", load_traces(), ids=lambda trace: trace["name"])
def test_hand_written_escalation_traces(trace: dict[str, Any]) -> None:
    control = SpeculationControl(EscalationPolicy.from_contract(trace["policy"]))
    for number, step in enumerate(trace["steps"]):
        if step["op"] == "assign":
            control.on_assignment(step["m_init"])
            assert control.limit() == step["expect"]["limit"], number
            continue
        got = control.on_round(step["accepted"], step["proposed"], step["finished"], step["load"])
        expected = step["expect"]
        assert got == RoundControl(Action(expected["action"]), expected["m_cap"], expected["low"]), number
        assert control.limit() == expected["m_cap"]


def test_action_codes_are_the_drafts() -> None:
    assert [(a.name, int(a)) for a in Action] == [
        ("CONTINUE", 0),
        ("REDUCE", 1),
        ("SWITCH", 2),
        ("SELF_DECODE", 3),
        ("FINISH", 4),
        ("FAIL", 5),
    ]


@pytest.mark.parametrize(("value", "action"), [(0, Action.CONTINUE), (3, Action.SELF_DECODE), (5, Action.FAIL)])
def test_parse_known_actions(value: int, action: Action) -> None:
    assert Action.parse(value) is action


@pytest.mark.parametrize("value", [6, 255, -1, "2", None, True, 2.0])
def test_parse_unknown_actions_as_fail(value: object) -> None:
    # §5.2: "A receiver that encounters an unknown action value MUST treat it as "fail"."
    assert Action.parse(value) is Action.FAIL


def test_policy_from_contract_reads_members_and_defaults() -> None:
    policy = EscalationPolicy.from_contract(
        contract(fallback=[3, 2, 5], low_rounds=4, m_max=16, self_load=70, self_max=32, stop=[1])
    )
    assert policy == EscalationPolicy(
        fallback=(Action.SELF_DECODE, Action.SWITCH, Action.FAIL),
        low_rounds=4,
        low_ratio=0,
        m_max=16,
        self_load=70,
        self_max=32,
    )


@pytest.mark.parametrize(
    "members",
    [
        {"fallback": []},
        {"fallback": [0]},  # continue is not a ladder action
        {"fallback": [4]},  # nor is finish
        {"fallback": [1, 9]},
        {"fallback": [True]},
        {"fallback": [1.0]},
        {"low_rounds": 0},
        {"low_ratio": 101},
        {"m_max": 0},  # P1-CTL-4
        {"m_max": 65},
        {"self_load": 101},
        {"fallback": None},
    ],
)
def test_policy_from_invalid_contract_is_bad_contract(members: dict[str, Any]) -> None:
    with pytest.raises(ProtocolError) as caught:
        EscalationPolicy.from_contract(contract(**members))
    assert caught.value.problem is ProblemType.BAD_CONTRACT


def test_policy_from_contract_without_required_members_is_bad_contract() -> None:
    with pytest.raises(ProtocolError):
        EscalationPolicy.from_contract({"fallback": [1], "m_max": 4})


@pytest.mark.parametrize(
    ("self_load", "load", "permitted"),
    [(None, 0, False), (50, 50, True), (50, 51, False), (0, 0, True)],
)
def test_self_decode_permission(self_load: int | None, load: int, permitted: bool) -> None:
    policy = EscalationPolicy(fallback=(Action.SELF_DECODE,), low_rounds=1, self_load=self_load)
    assert policy.self_decode_permitted(load) is permitted


def test_self_decoding_stops_at_self_max_or_when_load_exceeds_self_load() -> None:
    policy = EscalationPolicy(fallback=(Action.SELF_DECODE,), low_rounds=1, self_load=40, self_max=3)
    assert policy.self_decode_continues(2, 40)
    assert not policy.self_decode_continues(3, 40)
    assert not policy.self_decode_continues(0, 41)
    unbounded = EscalationPolicy(fallback=(Action.SELF_DECODE,), low_rounds=1, self_load=40)
    assert unbounded.self_decode_continues(10_000, 0)


def test_limit_before_any_assignment_is_an_error() -> None:
    control = SpeculationControl(EscalationPolicy.from_contract(contract()))
    with pytest.raises(InvalidArgument):
        control.limit()
    with pytest.raises(InvalidArgument):
        control.on_round(1, 1, False, 0)


def test_m_init_zero_is_refused() -> None:
    control = SpeculationControl(EscalationPolicy.from_contract(contract()))
    with pytest.raises(InvalidArgument):
        control.on_assignment(0)


def test_no_round_after_finish_or_fail() -> None:
    control = SpeculationControl(EscalationPolicy.from_contract(contract(fallback=[5], low_rounds=1)))
    control.on_assignment(4)
    assert control.on_round(0, 4, False, 0).action is Action.FAIL
    with pytest.raises(InvalidArgument):
        control.on_round(1, 4, False, 0)


def test_load_out_of_range_is_refused() -> None:
    control = SpeculationControl(EscalationPolicy.from_contract(contract()))
    control.on_assignment(4)
    with pytest.raises(InvalidArgument):
        control.on_round(1, 4, False, 101)


def test_counters_follow_the_draft_sentence_by_sentence() -> None:
    control = SpeculationControl(EscalationPolicy.from_contract(contract(fallback=[1, 2], low_rounds=3)))
    control.on_assignment(8)
    control.on_round(0, 8, False, 0)
    control.on_round(0, 8, False, 0)
    assert (control.c, control.g, control.j) == (2, 0, 0)
    control.on_round(1, 8, False, 0)
    assert (control.c, control.g, control.j) == (0, 1, 0)
    for _ in range(3):
        control.on_round(0, 8, False, 0)
    assert (control.c, control.g, control.j) == (0, 0, 1)  # reduce applied, j advanced
    control.on_round(1, 8, False, 0)
    control.on_round(1, 8, False, 0)
    assert control.j == 1  # g = 2 < R
    control.on_round(1, 8, False, 0)
    assert (control.g, control.j) == (3, 0)  # "when g reaches R ... j is reset to zero"


def test_reduce_never_goes_below_one() -> None:
    policy = EscalationPolicy.from_contract(contract(fallback=[1, 1, 1], low_rounds=1, m_max=2))
    control = SpeculationControl(policy)
    control.on_assignment(2)
    assert [control.on_round(0, 1, False, 0).m_cap for _ in range(3)] == [1, 1, 1]
