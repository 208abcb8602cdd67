"""Typed messages: required members, types, ranges, unknown keys and actions (§4.1, §5.2, P1-MSG-2)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdcp_conformance.protocol import contract_digest, decode, encode
from sdcp_conformance.protocol.contract import digest_of, parse_contract
from sdcp_conformance.protocol.control import Action
from sdcp_conformance.protocol.errors import MalformedMessage, ProtocolError
from sdcp_conformance.protocol.messages import (
    MESSAGE_TYPES,
    Contract,
    Output,
    Proposal,
    SessionOpen,
    Verdict,
)
from sdcp_conformance.protocol.problems import ProblemType
from tests.protocol.message_examples import EXAMPLES, example, required_members

NAMES = sorted(MESSAGE_TYPES)


def _problem_for(name: str) -> ProblemType:
    return ProblemType.BAD_CONTRACT if name == "contract" else ProblemType.BAD_MESSAGE


@pytest.mark.parametrize("name", NAMES)
def test_every_example_round_trips_unchanged(name: str) -> None:
    obj = example(name)
    message = MESSAGE_TYPES[name].from_obj(obj)
    assert message.to_obj() == obj
    assert decode(message.to_cbor()) == obj
    assert MESSAGE_TYPES[name].from_cbor(encode(obj)) == message


@pytest.mark.parametrize(
    ("name", "member"), [(name, member) for name in NAMES for member in required_members(name)]
)
def test_missing_required_member_is_refused(name: str, member: str) -> None:
    obj = example(name)
    del obj[member]
    with pytest.raises(MalformedMessage, match=f"{member}: required member missing") as info:
        MESSAGE_TYPES[name].from_obj(obj)
    assert info.value.problem is _problem_for(name)


@pytest.mark.parametrize("name", NAMES)
def test_unknown_keys_are_ignored_except_in_the_contract(name: str) -> None:
    obj = example(name) | {"x-vendor": 1, 99: "also unknown"}
    if name == "contract":
        with pytest.raises(MalformedMessage, match="unknown keys") as info:
            MESSAGE_TYPES[name].from_obj(obj)
        assert info.value.problem is ProblemType.BAD_CONTRACT
    else:
        assert MESSAGE_TYPES[name].from_obj(obj).to_obj() == example(name)


def test_unknown_key_inside_a_contracts_sampling_is_a_bad_contract() -> None:
    """D-MSG-2: the contract digest covers its sampling map, so it is closed too."""
    obj = example("session-open")
    obj["contract"]["sampling"]["min_p_milli"] = 50
    with pytest.raises(MalformedMessage) as info:
        SessionOpen.from_obj(obj)
    assert info.value.problem is ProblemType.BAD_CONTRACT
    # The same key in a policy's sampling, outside any contract, is ignored.
    policy = example("policy")
    policy["sampling"]["min_p_milli"] = 50
    assert MESSAGE_TYPES["policy"].from_obj(policy).to_obj() == example("policy")


@pytest.mark.parametrize(
    ("name", "member", "value"),
    [
        ("contract", "m_max", 65),
        ("contract", "low_ratio", 101),
        ("contract", "low_rounds", 0),
        ("contract", "self_load", 101),
        ("contract", "target", bytes(31)),
        ("contract", "tokenizer", bytes(33)),
        ("contract", "scope", bytes(15)),
        ("contract", "fallback", []),
        ("contract", "fallback", [0]),
        ("contract", "fallback", [4]),
        ("contract", "fallback", [1, 9]),
        ("contract", "drafters", []),
        ("contract", "rule", -1),
        ("contract", "stop", [1, "2"]),
        ("contract", "sampling", {"top_p_milli": 1001}),
        ("session-open", "session", bytes(17)),
        ("session-open", "prompt", b"\x01"),
        ("session-open", "prompt", ["a"]),
        ("session-open", "epoch", True),
        ("session-open", "epoch", -1),
        ("session-open", "resume", {"round": 1}),
        ("proposal", "tokens", []),
        ("proposal", "base_digest", bytes(32).hex()),
        ("proposal", "status", {"instance": "x", "role": 3, "load": 0, "queue": 0, "ttl_ms": 1}),
        ("status", "load", 101),
        ("status", "accept_milli", 1001),
        ("status", "role", 0),
        ("verdict", "load", 101),
        ("verdict", "emitted", [1, -2]),
        ("verdict", "action", "continue"),
        ("output", "final", 1),
        ("output", "from", "0"),
        ("event", "kind", None),
        ("policy", "sampling", [1]),
        ("sampling", "top_p_milli", 1001),
        ("assignment", "m_init", 1.0),
    ],
)
def test_out_of_type_or_range_values_are_refused(name: str, member: str, value: Any) -> None:
    obj = example(name)
    obj[member] = value
    with pytest.raises(MalformedMessage) as info:
        MESSAGE_TYPES[name].from_obj(obj)
    expected = ProblemType.BAD_CONTRACT if name == "contract" else ProblemType.BAD_MESSAGE
    if name == "proposal" and member == "status":
        expected = ProblemType.BAD_MESSAGE
    assert info.value.problem is expected


@pytest.mark.parametrize(("name", "member"), [("contract", "m_max"), ("contract", "low_ratio"),
                                              ("status", "load"), ("sampling", "top_p_milli")])
def test_bounds_are_inclusive(name: str, member: str) -> None:
    obj = example(name)
    obj[member] = {"m_max": 64, "low_ratio": 100, "load": 100, "top_p_milli": 1000}[member]
    assert MESSAGE_TYPES[name].from_obj(obj).to_obj()[member] == obj[member]


@pytest.mark.parametrize("value", [6, 7, 255, 2**64 - 1])
def test_unknown_action_values_read_as_fail(value: int) -> None:
    """§5.2: "A receiver that encounters an unknown action value MUST treat it as fail"."""
    verdict = example("verdict") | {"action": value}
    assert Verdict.from_obj(verdict).action is Action.FAIL
    event = example("event") | {"kind": value}
    assert MESSAGE_TYPES["event"].from_obj(event).kind is Action.FAIL  # type: ignore[attr-defined]
    output = example("output") | {"finish": value}
    assert Output.from_obj(output).finish is Action.FAIL


def test_contract_errors_come_after_envelope_errors() -> None:
    """D-MSG-1: a message wrong outside and inside its contract gets the envelope's 400."""
    obj = example("session-open")
    obj["contract"]["m_max"] = 99
    with pytest.raises(MalformedMessage) as info:
        SessionOpen.from_obj(obj)
    assert info.value.problem is ProblemType.BAD_CONTRACT
    del obj["epoch"]
    with pytest.raises(MalformedMessage) as info:
        SessionOpen.from_obj(obj)
    assert info.value.problem is ProblemType.BAD_MESSAGE


def test_non_map_bodies_are_refused() -> None:
    for name in NAMES:
        with pytest.raises(MalformedMessage):
            MESSAGE_TYPES[name].from_obj([1, 2])
    with pytest.raises(MalformedMessage) as info:
        SessionOpen.from_obj(example("session-open") | {"contract": "not a map"})
    assert info.value.problem is ProblemType.BAD_CONTRACT


def test_output_uses_the_cbor_member_name_from() -> None:
    obj = example("output")
    message = Output.from_obj(obj)
    assert message.from_ == 0
    assert "from" in message.to_obj() and "from_" not in message.to_obj()


def test_identical_proposals_differ_only_in_status() -> None:
    """P1-IDEM-1: "Identical" proposals are equal in every member except status."""
    first = Proposal.from_obj(example("proposal"))
    busier = first.replace(status=first.status.replace(load=99))
    assert first.identity_key() == busier.identity_key()
    other = first.replace(tokens=(5, 6, 8))
    assert first.identity_key() != other.identity_key()


def test_contract_digest_is_over_the_decoded_contract() -> None:
    obj = example("contract")
    contract = parse_contract(obj)
    assert digest_of(contract) == contract_digest(obj)


@pytest.mark.parametrize(("member", "value"), [("rule", 3), ("rule", 0), ("m_max", 0)])
def test_semantic_contract_checks(member: str, value: int) -> None:
    obj = example("contract") | {member: value}
    Contract.from_obj(obj)  # well-formed per the CDDL...
    with pytest.raises(ProtocolError) as info:
        parse_contract(obj)  # ...but refused by §6.4 / P1-CTL-4
    assert info.value.problem is ProblemType.BAD_CONTRACT
    assert info.value.status == 422


@settings(derandomize=True, max_examples=150)
@given(st.sampled_from(NAMES), st.data())
def test_dropping_or_retyping_a_member_is_detected(name: str, data: st.DataObject) -> None:
    obj = example(name)
    member = data.draw(st.sampled_from(sorted(obj)))
    mutation = data.draw(st.sampled_from(["drop", "text", "negative", "float"]))
    if mutation == "drop":
        del obj[member]
    else:
        obj[member] = {"text": "x", "negative": -1, "float": 0.5}[mutation]
    optional_drop = mutation == "drop" and member not in required_members(name)
    # `stop` and the like may be a text? No member of any SDCP message accepts
    # -1 or 0.5; text is accepted only where the CDDL says tstr or cache-ref.
    text_ok = mutation == "text" and _accepts_text(name, member)
    if optional_drop or text_ok:
        MESSAGE_TYPES[name].from_obj(obj)
    else:
        with pytest.raises(MalformedMessage):
            MESSAGE_TYPES[name].from_obj(obj)


def _accepts_text(name: str, member: str) -> bool:
    texts = {"prompt", "prompt_kv", "commit_log", "verifier", "drafter", "committed_tokens",
             "q_rows", "draft_kv", "instance"}
    return member in texts and member in EXAMPLES[name]
