"""The CDDL schema accepts what draft §4.1/§5.2 and the profile allow, and nothing else.

Every expectation here is transcribed from the draft's and profile's text by
hand (the SHAPES table and the example messages), never taken from the
validator's output. Each constraint in ``sdcp.cddl`` has a rejecting case and
an accepting case next to it.
"""

from __future__ import annotations

import base64
import copy
import string
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import cbor2
import cddl_verifier
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.protocol import cddl
from sdcp_conformance.protocol.codec import encode
from sdcp_conformance.protocol.errors import MalformedMessage
from sdcp_conformance.protocol.problems import ProblemType

Path = tuple[str, ...]

SID = bytes(range(16))
H32 = bytes(range(32))
URI = "https://mlc.example/obj/1"

# --------------------------------------------------------------------------- examples


def contract_example() -> dict[str, Any]:
    """§4.1 contract with every optional member present."""
    return {
        "target": H32,
        "tokenizer": bytes(32),
        "drafters": [H32, bytes([7]) * 32],
        "rule": 2,
        "sampling": sampling_example(),
        "m_max": 8,
        "max_new": 64,
        "stop": [2, 0],
        "low_rounds": 3,
        "low_ratio": 50,
        "fallback": [1, 2, 3, 5],
        "self_load": 80,
        "self_max": 16,
        "scope": bytes(range(100, 116)),
    }


def sampling_example() -> dict[str, Any]:
    return {"temperature_milli": 700, "top_k": 40, "top_p_milli": 900, "seed": 2**63}


def status_example() -> dict[str, Any]:
    return {
        "instance": "https://drafter.example/",
        "role": 1,
        "load": 20,
        "queue": 3,
        "accept_milli": 650,
        "cache_mbps": 1000,
        "ttl_ms": 5000,
    }


def problem_state_example() -> dict[str, Any]:
    return {
        "session": _b64(SID),
        "epoch": 2,
        "round": 9,
        "committed": 30,
        "digest": _b64(H32),
        "state": 0,
    }


EXAMPLES: dict[str, Callable[[], dict[str, Any]]] = {
    "contract": contract_example,
    "sampling": sampling_example,
    "status": status_example,
    "session-open": lambda: {
        "session": SID,
        "epoch": 2,
        "contract": contract_example(),
        "prompt": [1, 2, 3],
        "prompt_kv": URI,
        "commit_log": URI,
        "resume": {
            "round": 4,
            "committed": 10,
            "digest": H32,
            "committed_tokens": URI,
            "target_kv": URI,
        },
    },
    "session-state": lambda: {
        "session": SID, "epoch": 1, "round": 0, "committed": 0, "digest": H32, "state": 0,
    },
    "assignment": lambda: {
        "session": SID,
        "epoch": 1,
        "contract": contract_example(),
        "verifier": "https://verifier.example/",
        "drafter": "https://drafter.example/",
        "prompt": URI,
        "round": 5,
        "sampling": sampling_example(),
        "committed": 12,
        "digest": H32,
        "committed_tokens": URI,
        "m_init": 4,
    },
    "proposal": lambda: {
        "session": SID,
        "epoch": 1,
        "round": 6,
        "drafter": "https://drafter.example/",
        "base": 12,
        "base_digest": H32,
        "tokens": [5, 6, 7],
        "q_rows": URI,
        "draft_kv": URI,
        "status": status_example(),
    },
    "verdict": lambda: {
        "session": SID,
        "epoch": 1,
        "round": 6,
        "accepted": 2,
        "emitted": [5, 6, 9],
        "committed": 15,
        "digest": H32,
        "action": 0,
        "m_cap": 4,
        "low": 0,
        "load": 30,
    },
    "output": lambda: {
        "session": SID, "epoch": 1, "from": 0, "tokens": [5, 6], "final": True, "finish": 4,
    },
    "event": lambda: {"session": SID, "epoch": 1, "kind": 2, "committed": 15, "digest": H32},
    "policy": lambda: {"session": SID, "from_round": 7, "sampling": sampling_example()},
    "problem-details": lambda: {
        "type": ProblemType.STALE_BASE.uri,
        "title": "stale base",
        "status": 409,
        "detail": "base 3 is not the committed length 5",
        "instance": "urn:uuid:1",
        "state": problem_state_example(),
    },
    "problem-state": problem_state_example,
    "commit-record": lambda: {
        "epoch": 1, "round": 3, "emitted": [4, 5], "committed": 9, "digest": H32,
    },
    "fence-record": lambda: {"epoch": 2},
}

MAP_RULES = sorted(EXAMPLES)
CLOSED_RULES = {"contract", "fence-record"}
OPEN_RULES = sorted(set(MAP_RULES) - CLOSED_RULES)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _get(message: dict[str, Any], path: Path) -> Any:
    for key in path:
        message = message[key]
    return message


def replaced(message: dict[str, Any], path: Path, value: Any) -> dict[str, Any]:
    """A deep copy of ``message`` whose member at ``path`` is ``value``."""
    result = copy.deepcopy(message)
    _get(result, path[:-1])[path[-1]] = value
    return result


def without(message: dict[str, Any], path: Path) -> dict[str, Any]:
    """A deep copy of ``message`` without the member at ``path``."""
    result = copy.deepcopy(message)
    del _get(result, path[:-1])[path[-1]]
    return result


def accepts(rule: str, value: Any) -> bool:
    return cddl.validate(rule, value) == []


# --------------------------------------------------------------------------- the schema itself


def test_schema_has_no_problems_and_imports_nothing() -> None:
    assert cddl_verifier.schema_diagnostics(cddl.schema_text(), strict_modules=True) == ()
    assert ";#" not in cddl.schema_text()


@pytest.mark.parametrize("rule", MAP_RULES)
def test_full_examples_are_accepted(rule: str) -> None:
    assert cddl.validate(rule, EXAMPLES[rule]()) == []


def test_unknown_rule_name_is_a_caller_error() -> None:
    with pytest.raises(InvalidArgument, match="no-such-rule"):
        cddl.validate("no-such-rule", {})


# --------------------------------------------------------------------------- shapes (hand transcription)


@dataclass(frozen=True)
class Member:
    """One CDDL member: valid values, values of a wrong CBOR type, and nested members."""

    valid: st.SearchStrategy[Any]
    wrong: tuple[Any, ...]
    required: bool = True
    nested: dict[str, Member] | None = field(default=None)


UINT = st.integers(0, 2**64 - 1)
SMALL_UINTS = st.lists(st.integers(0, 2**32), max_size=4)
NOT_UINT = ("7", -1, True, False, None, 1.5, b"\x07", [7], {"v": 7})
NOT_BSTR = ("00" * 16, 16, None, [0] * 16, True)
NOT_TSTR = (URI.encode(), 1, None, [URI], False)
NOT_ARRAY = ("1", 1, b"\x01", {"0": 1}, None)
NOT_UINTS = (*NOT_ARRAY, [1, -1], [1, "7"], [1.5], [True], [None], [[1]])
NOT_MAP: tuple[Any, ...] = ([], [1], "map", 1, None, b"")
NOT_BOOL = (1, 0, "true", None, b"\x01")
NOT_ACTION = (-1, "fail", True, None, 5.0, [5])
NOT_PROMPT = (b"\x01\x02", 1, None, {"0": 1}, True, ["a"], [1, -1], [1.5])


def uint(*, le: int | None = None, ge: int = 0, required: bool = True) -> Member:
    upper = 2**64 - 1 if le is None else le
    return Member(st.integers(ge, upper), NOT_UINT, required)


def bstr(size: int, *, required: bool = True) -> Member:
    return Member(st.binary(min_size=size, max_size=size), NOT_BSTR, required)


def tstr(*, required: bool = True) -> Member:
    return Member(st.text(max_size=12), NOT_TSTR, required)


def uints(*, nonempty: bool = False) -> Member:
    return Member(st.lists(UINT, min_size=int(nonempty), max_size=4), NOT_UINTS)


def shape_strategy(members: dict[str, Member]) -> st.SearchStrategy[dict[str, Any]]:
    required = {name: m.valid for name, m in members.items() if m.required}
    optional = {name: m.valid for name, m in members.items() if not m.required}
    return st.fixed_dictionaries(required, optional=optional)


def submap(members: dict[str, Member], *, required: bool = True) -> Member:
    return Member(shape_strategy(members), NOT_MAP, required, members)


def action(*, required: bool = True) -> Member:
    # D-CDDL-3: any uint is a well-formed action as received.
    return Member(UINT, NOT_ACTION, required)


SAMPLING = {
    "temperature_milli": uint(required=False),
    "top_k": uint(required=False),
    "top_p_milli": uint(le=1000, required=False),
    "seed": uint(required=False),
}
STATUS = {
    "instance": tstr(),
    "role": Member(st.sampled_from([1, 2]), NOT_UINT),
    "load": uint(le=100),
    "queue": uint(),
    "accept_milli": uint(le=1000, required=False),
    "cache_mbps": uint(required=False),
    "ttl_ms": uint(),
}
CONTRACT = {
    "target": bstr(32),
    "tokenizer": bstr(32),
    "drafters": Member(st.lists(st.binary(min_size=32, max_size=32), min_size=1, max_size=3),
                       (*NOT_ARRAY, ["ab" * 16], [list(H32)]), required=False),
    "rule": uint(),
    "sampling": submap(SAMPLING, required=False),  # D-CDDL-2: closed in the contract
    "m_max": uint(le=64),
    "max_new": uint(),
    "stop": uints(),
    "low_rounds": uint(ge=1),
    "low_ratio": uint(le=100, required=False),
    "fallback": Member(st.lists(st.sampled_from([1, 2, 3, 5]), min_size=1, max_size=5),
                       NOT_UINTS),
    "self_load": uint(le=100, required=False),
    "self_max": uint(required=False),
    "scope": bstr(16, required=False),
}
PROMPT = Member(st.one_of(SMALL_UINTS, st.text(max_size=12)), NOT_PROMPT)
B64_SID = Member(st.binary(min_size=16, max_size=16).map(_b64), NOT_TSTR)
B64_H32 = Member(st.binary(min_size=32, max_size=32).map(_b64), NOT_TSTR)
PROBLEM_STATE = {
    "session": B64_SID,
    "epoch": uint(),
    "round": uint(),
    "committed": uint(),
    "digest": B64_H32,
    "state": uint(required=False),
}


SHAPES: dict[str, dict[str, Member]] = {
    "contract": CONTRACT,
    "sampling": SAMPLING,
    "status": STATUS,
    "session-open": {
        "session": bstr(16),
        "epoch": uint(),
        "contract": submap(CONTRACT),
        "prompt": PROMPT,
        "prompt_kv": tstr(required=False),
        "commit_log": tstr(),
        "resume": submap(
            {
                "round": uint(),
                "committed": uint(),
                "digest": bstr(32),
                "committed_tokens": tstr(),
                "target_kv": tstr(required=False),
            },
            required=False,
        ),
    },
    "session-state": {
        "session": bstr(16), "epoch": uint(), "round": uint(), "committed": uint(),
        "digest": bstr(32), "state": uint(required=False),
    },
    "assignment": {
        "session": bstr(16),
        "epoch": uint(),
        "contract": submap(CONTRACT),
        "verifier": tstr(),
        "drafter": tstr(),
        "prompt": PROMPT,
        "round": uint(),
        "sampling": submap(SAMPLING, required=False),
        "committed": uint(),
        "digest": bstr(32),
        "committed_tokens": tstr(required=False),
        "m_init": uint(),
    },
    "proposal": {
        "session": bstr(16),
        "epoch": uint(),
        "round": uint(),
        "drafter": tstr(),
        "base": uint(),
        "base_digest": bstr(32),
        "tokens": uints(nonempty=True),
        "q_rows": tstr(required=False),
        "draft_kv": tstr(required=False),
        "status": submap(STATUS),
    },
    "verdict": {
        "session": bstr(16), "epoch": uint(), "round": uint(), "accepted": uint(),
        "emitted": uints(), "committed": uint(), "digest": bstr(32), "action": action(),
        "m_cap": uint(), "low": uint(), "load": uint(le=100),
    },
    "output": {
        "session": bstr(16), "epoch": uint(), "from": uint(), "tokens": uints(),
        "final": Member(st.booleans(), NOT_BOOL), "finish": action(required=False),
    },
    "event": {
        "session": bstr(16), "epoch": uint(), "kind": action(), "committed": uint(),
        "digest": bstr(32),
    },
    "policy": {"session": bstr(16), "from_round": uint(), "sampling": submap(SAMPLING)},
    "problem-details": {
        "type": tstr(),
        "title": tstr(required=False),
        "status": Member(st.integers(100, 599), NOT_UINT, required=False),
        "detail": tstr(required=False),
        "instance": tstr(required=False),
        "state": submap(PROBLEM_STATE, required=False),
    },
    "problem-state": PROBLEM_STATE,
    "commit-record": {
        "epoch": uint(), "round": uint(), "emitted": uints(), "committed": uint(),
        "digest": bstr(32),
    },
    "fence-record": {"epoch": uint()},
}


def member_paths(members: dict[str, Member], prefix: Path = ()) -> Iterator[tuple[Path, Member]]:
    """Every member, nested ones included, with its path."""
    for name, member in members.items():
        yield (*prefix, name), member
        if member.nested is not None:
            yield from member_paths(member.nested, (*prefix, name))


def _path_id(rule: str, path: Path) -> str:
    return "/".join((rule, *path))


def _cases(predicate: Callable[[Member], bool]) -> list[Any]:
    return [
        pytest.param(rule, path, id=_path_id(rule, path))
        for rule in MAP_RULES
        for path, member in member_paths(SHAPES[rule])
        if predicate(member)
    ]


def test_shapes_cover_every_member_of_the_examples() -> None:
    # Keeps the two hand transcriptions (examples and SHAPES) in step.
    for rule in MAP_RULES:
        example_paths = set(_all_paths(EXAMPLES[rule]()))
        assert example_paths == {path for path, _ in member_paths(SHAPES[rule])}, rule


def _all_paths(message: dict[str, Any], prefix: Path = ()) -> Iterator[Path]:
    for key, value in message.items():
        yield (*prefix, key)
        if isinstance(value, dict):
            yield from _all_paths(value, (*prefix, key))


# --------------------------------------------------------------------------- required, optional, types


@pytest.mark.parametrize(("rule", "path"), _cases(lambda m: m.required))
def test_missing_required_member_is_rejected(rule: str, path: Path) -> None:
    problems = cddl.validate(rule, without(EXAMPLES[rule](), path))
    assert problems
    assert path[-1] in " ".join(problems)


@pytest.mark.parametrize(("rule", "path"), _cases(lambda m: not m.required))
def test_absent_optional_member_is_accepted(rule: str, path: Path) -> None:
    assert cddl.validate(rule, without(EXAMPLES[rule](), path)) == []


@pytest.mark.parametrize(("rule", "path"), _cases(lambda m: True))
def test_member_of_wrong_type_is_rejected(rule: str, path: Path) -> None:
    example = EXAMPLES[rule]()
    for wrong in _member_at(rule, path).wrong:
        assert not accepts(rule, replaced(example, path, wrong)), (path, wrong)


def _member_at(rule: str, path: Path) -> Member:
    return dict(member_paths(SHAPES[rule]))[path]


# --------------------------------------------------------------------------- value constraints

HASH32_MEMBERS = [
    ("contract", ("target",)),
    ("contract", ("tokenizer",)),
    ("session-open", ("resume", "digest")),
    ("session-state", ("digest",)),
    ("assignment", ("digest",)),
    ("proposal", ("base_digest",)),
    ("verdict", ("digest",)),
    ("event", ("digest",)),
    ("commit-record", ("digest",)),
]
SESSION_ID_MEMBERS = [
    (rule, ("session",))
    for rule in ("session-open", "session-state", "assignment", "proposal", "verdict", "output",
                 "event", "policy")
]
BSTR_SIZES = [(rule, path, 32) for rule, path in HASH32_MEMBERS] + [
    (rule, path, 16) for rule, path in [*SESSION_ID_MEMBERS, ("contract", ("scope",))]
]


@pytest.mark.parametrize(
    ("rule", "path", "size"),
    [pytest.param(*case, id=_path_id(case[0], case[1])) for case in BSTR_SIZES],
)
def test_bstr_size_is_exact(rule: str, path: Path, size: int) -> None:
    example = EXAMPLES[rule]()
    assert accepts(rule, replaced(example, path, b"\xaa" * size))
    assert not accepts(rule, replaced(example, path, b"\xaa" * (size - 1)))
    assert not accepts(rule, replaced(example, path, b"\xaa" * (size + 1)))


def test_drafters_entries_are_hash32_and_the_list_is_not_empty() -> None:
    contract = contract_example()
    assert accepts("contract", replaced(contract, ("drafters",), [H32]))
    assert not accepts("contract", replaced(contract, ("drafters",), []))
    assert not accepts("contract", replaced(contract, ("drafters",), [H32, H32[:31]]))
    assert not accepts("contract", replaced(contract, ("drafters",), [H32 + b"\x00"]))


UPPER_BOUNDS = [
    ("contract", ("m_max",), 64),
    ("contract", ("low_ratio",), 100),
    ("contract", ("self_load",), 100),
    ("contract", ("sampling", "top_p_milli"), 1000),
    ("sampling", ("top_p_milli",), 1000),
    ("assignment", ("sampling", "top_p_milli"), 1000),
    ("policy", ("sampling", "top_p_milli"), 1000),
    ("verdict", ("load",), 100),
    ("status", ("load",), 100),
    ("status", ("accept_milli",), 1000),
    ("proposal", ("status", "load"), 100),
    ("proposal", ("status", "accept_milli"), 1000),
    ("problem-details", ("status",), 599),
]


@pytest.mark.parametrize(
    ("rule", "path", "bound"),
    [pytest.param(*case, id=_path_id(case[0], case[1])) for case in UPPER_BOUNDS],
)
def test_upper_bound_is_inclusive(rule: str, path: Path, bound: int) -> None:
    example = EXAMPLES[rule]()
    assert accepts(rule, replaced(example, path, bound))
    assert not accepts(rule, replaced(example, path, bound + 1))


def test_low_rounds_is_at_least_one() -> None:
    contract = contract_example()
    assert accepts("contract", replaced(contract, ("low_rounds",), 1))
    assert not accepts("contract", replaced(contract, ("low_rounds",), 0))


def test_problem_status_is_an_http_status_code() -> None:
    problem = EXAMPLES["problem-details"]()
    assert accepts("problem-details", replaced(problem, ("status",), 100))
    assert not accepts("problem-details", replaced(problem, ("status",), 99))


@pytest.mark.parametrize(("role", "ok"), [(0, False), (1, True), (2, True), (3, False)])
def test_status_role_is_drafter_or_verifier(role: int, ok: bool) -> None:
    assert accepts("status", replaced(status_example(), ("role",), role)) is ok


@pytest.mark.parametrize(
    ("fallback", "ok"),
    [([], False), ([1, 2, 5], True), ([3], True), ([1, 2, 3, 5, 1], True),
     ([0], False), ([4], False), ([1, 4], False), ([6], False)],
)
def test_fallback_is_a_nonempty_ladder(fallback: list[int], ok: bool) -> None:
    # §6.5.2: "The fallback list MUST contain only the actions reduce, switch,
    # self_decode, and fail".
    assert accepts("contract", replaced(contract_example(), ("fallback",), fallback)) is ok


def test_proposal_tokens_are_not_empty() -> None:
    proposal = EXAMPLES["proposal"]()
    assert accepts("proposal", replaced(proposal, ("tokens",), [0]))
    assert not accepts("proposal", replaced(proposal, ("tokens",), []))


@pytest.mark.parametrize("rule", ["session-open", "assignment"])
@pytest.mark.parametrize(
    ("prompt", "ok"),
    [([1, 2, 3], True), ([], True), ([2**64 - 1], True), (URI, True), ("", True),
     (b"\x01\x02", False), (["a", "b"], False), ([1, "a"], False), ([-1], False),
     ([True], False), ([2**64], False)],
)
def test_prompt_is_uint_tokens_or_cache_ref(rule: str, prompt: Any, ok: bool) -> None:
    assert accepts(rule, replaced(EXAMPLES[rule](), ("prompt",), prompt)) is ok


@pytest.mark.parametrize(
    ("tokens", "ok"),
    [([], True), ([0, 2**64 - 1], True), ([-1], False), (["a"], False), ([1.0], False),
     ([True], False), ([2**64], False), ("1,2", False), ({"0": 1}, False)],
)
def test_token_list_object_is_an_array_of_uint(tokens: Any, ok: bool) -> None:
    assert accepts("token-list", tokens) is ok


# --------------------------------------------------------------------------- unknown keys and actions


@pytest.mark.parametrize("key", ["x-extension", 99])
def test_unknown_key_in_contract_is_rejected(key: Any) -> None:
    # §4.1: "A contract that contains a key not defined by this document MUST be rejected".
    assert not accepts("contract", {**contract_example(), key: 1})
    open_ = EXAMPLES["session-open"]()
    assert not accepts("session-open", replaced(open_, ("contract", key), 1))


@pytest.mark.parametrize("rule", ["contract", "session-open", "assignment"])
def test_unknown_key_in_contract_sampling_is_rejected(rule: str) -> None:
    # D-CDDL-2: the contract digest covers its sampling map.
    message = EXAMPLES[rule]()
    path = ("sampling", "x-extension") if rule == "contract" else ("contract", "sampling", "x")
    assert not accepts(rule, replaced(message, path, 1))


@pytest.mark.parametrize("rule", OPEN_RULES)
@pytest.mark.parametrize("key", ["x-extension", 99, b"k"])
def test_unknown_key_is_ignored_outside_the_contract(rule: str, key: Any) -> None:
    # §5.2: "Unknown map keys MUST be ignored, except in the contract".
    assert accepts(rule, {**EXAMPLES[rule](), key: {"any": ["thing"]}})


@pytest.mark.parametrize(
    ("rule", "path"),
    [("session-open", ("resume",)), ("assignment", ("sampling",)), ("policy", ("sampling",)),
     ("proposal", ("status",)), ("problem-details", ("state",))],
)
def test_unknown_key_is_ignored_in_nested_message_maps(rule: str, path: Path) -> None:
    assert accepts(rule, replaced(EXAMPLES[rule](), (*path, "x-extension"), 1))


@pytest.mark.parametrize(("rule", "path"), [("verdict", ("load",)), ("policy", ("session",))])
def test_known_key_with_bad_value_cannot_hide_among_unknown_keys(rule: str, path: Path) -> None:
    # The wildcard of D-CDDL-1 must not swallow a known member (RFC 8610 §3.5.4 cut).
    assert not accepts(rule, replaced(EXAMPLES[rule](), path, "bad"))


ACTION_MEMBERS = [("verdict", ("action",)), ("event", ("kind",)), ("output", ("finish",))]


@pytest.mark.parametrize(("rule", "path"), ACTION_MEMBERS)
@pytest.mark.parametrize("value", [0, 1, 2, 3, 4, 5, 6, 255, 2**64 - 1])
def test_any_uint_action_is_well_formed(rule: str, path: Path, value: int) -> None:
    # D-CDDL-3, §5.2: "A receiver that encounters an unknown action value MUST
    # treat it as 'fail'" -- so the message carrying it is not malformed.
    assert accepts(rule, replaced(EXAMPLES[rule](), path, value))


# --------------------------------------------------------------------------- profile shapes


BASE64URL_ALPHABET = string.ascii_uppercase + string.ascii_lowercase + string.digits + "-_"
"""RFC 4648 Table 2."""


def _canonical_last_chars(size: int) -> set[str]:
    """Brute force: every character that ends the unpadded base64url of ``size`` octets."""
    return {_b64(bytes(size - 1) + bytes([last]))[-1] for last in range(256)}


@pytest.mark.parametrize(("member", "size"), [("session", 16), ("digest", 32)])
def test_problem_state_text_is_canonical_unpadded_base64url(member: str, size: int) -> None:
    state = problem_state_example()
    body = _b64(bytes(size))[:-1]
    canonical = _canonical_last_chars(size)
    for last in BASE64URL_ALPHABET:
        ok = accepts("problem-state", replaced(state, (member,), body + last))
        assert ok is (last in canonical), last
    padded = base64.urlsafe_b64encode(bytes(size)).decode("ascii")
    for text in (padded, body, body + "AA", body[:-1] + "+A", body[:-1] + "/A"):
        assert not accepts("problem-state", replaced(state, (member,), text)), text


@settings(derandomize=True, max_examples=50, deadline=None)
@given(session=st.binary(min_size=16, max_size=16), digest=st.binary(min_size=32, max_size=32))
def test_problem_state_accepts_any_encoded_session_and_digest(session: bytes, digest: bytes) -> None:
    state = {**problem_state_example(), "session": _b64(session), "digest": _b64(digest)}
    assert cddl.validate("problem-state", state) == []


def test_log_record_is_a_commit_or_a_fence() -> None:
    commit = EXAMPLES["commit-record"]()
    assert accepts("log-record", commit)
    assert accepts("log-record", {"epoch": 3})
    assert accepts("log-record", {**commit, "x-extension": 1})
    # D-CDDL-7, §6.8: "A fence record carries only an epoch".
    assert not accepts("fence-record", {"epoch": 3, "round": 1})
    assert not accepts("log-record", {"epoch": 3, "x-extension": 1})
    assert not accepts("log-record", without(commit, ("round",)))
    assert not accepts("log-record", replaced(commit, ("round",), "4"))
    assert not accepts("log-record", {})


# --------------------------------------------------------------------------- bytes in, check()


def test_bytes_are_validated_as_the_cbor_they_encode() -> None:
    verdict = EXAMPLES["verdict"]()
    # A valid but not deterministic encoding (keys in insertion order, a
    # uint in a longer head) is accepted: P1-MSG-1 "receivers accept any
    # well-formed encoding".
    loose = cbor2.dumps(dict(reversed(list(verdict.items()))))
    assert loose != encode(verdict)
    assert cddl.validate("verdict", loose) == []
    assert cddl.validate("token-list", bytes([0x81, 0x19, 0x00, 0x05])) == []
    assert cddl.validate("verdict", encode({**verdict, "load": 101}))


@pytest.mark.parametrize(
    "data",
    [
        b"",
        encode({"epoch": 2})[:-1],  # truncated
        encode({"epoch": 2}) + b"\x00",  # trailing byte
        bytes([0xA2, 0x65]) + b"epoch" + b"\x01" + bytes([0x65]) + b"epoch" + b"\x02",  # duplicate
        bytes([0xC2, 0x41, 0x01]),  # a tag
    ],
    ids=["empty", "truncated", "trailing", "duplicate-key", "tag"],
)
def test_malformed_cbor_is_reported_not_raised(data: bytes) -> None:
    problems = cddl.validate("fence-record", data)
    assert problems and problems[0].startswith("malformed CBOR")


def test_check_passes_a_valid_message() -> None:
    cddl.check("verdict", EXAMPLES["verdict"]())  # raises on failure


def test_check_raises_bad_message_naming_the_member() -> None:
    with pytest.raises(MalformedMessage) as caught:
        cddl.check("verdict", replaced(EXAMPLES["verdict"](), ("m_cap",), "4"))
    assert caught.value.problem is ProblemType.BAD_MESSAGE
    assert caught.value.status == 400
    assert "m_cap" in caught.value.detail


def test_check_blames_the_contract_when_only_the_contract_is_wrong() -> None:
    # P1-MSG-2: a bad contract is 422 sdcp-bad-contract, not 400.
    message = replaced(EXAMPLES["session-open"](), ("contract", "m_max"), 65)
    with pytest.raises(MalformedMessage) as caught:
        cddl.check("session-open", message)
    assert caught.value.problem is ProblemType.BAD_CONTRACT
    with pytest.raises(MalformedMessage) as caught:
        cddl.check("contract", {**contract_example(), "extra": 1})
    assert caught.value.problem is ProblemType.BAD_CONTRACT


def test_check_blames_the_message_when_more_than_the_contract_is_wrong() -> None:
    # D-CDDL-8.
    message = replaced(EXAMPLES["assignment"](), ("contract", "m_max"), 65)
    with pytest.raises(MalformedMessage) as caught:
        cddl.check("assignment", replaced(message, ("epoch",), -1))
    assert caught.value.problem is ProblemType.BAD_MESSAGE
    with pytest.raises(MalformedMessage) as caught:
        cddl.check("assignment", without(EXAMPLES["assignment"](), ("contract",)))
    assert caught.value.problem is ProblemType.BAD_MESSAGE


# --------------------------------------------------------------------------- properties


def _present_paths(rule: str, message: dict[str, Any]) -> list[Path]:
    return sorted(
        path for path, _ in member_paths(SHAPES[rule]) if _has_path(message, path)
    )


def _has_path(message: Any, path: Path) -> bool:
    for key in path:
        if not isinstance(message, dict) or key not in message:
            return False
        message = message[key]
    return True


PROPERTY = settings(derandomize=True, max_examples=30, deadline=None)


@pytest.mark.parametrize("rule", MAP_RULES)
@PROPERTY
@given(data=st.data())
def test_generated_valid_messages_are_accepted(rule: str, data: st.DataObject) -> None:
    assert cddl.validate(rule, data.draw(shape_strategy(SHAPES[rule]))) == []


RULES_WITH_REQUIRED = [r for r in MAP_RULES if any(m.required for m in SHAPES[r].values())]


@pytest.mark.parametrize("rule", RULES_WITH_REQUIRED)
@PROPERTY
@given(data=st.data())
def test_dropping_a_required_member_is_rejected(rule: str, data: st.DataObject) -> None:
    message = data.draw(shape_strategy(SHAPES[rule]))
    members = dict(member_paths(SHAPES[rule]))
    required = [p for p in _present_paths(rule, message) if members[p].required]
    path = data.draw(st.sampled_from(required))
    assert cddl.validate(rule, without(message, path))


@pytest.mark.parametrize("rule", MAP_RULES)
@PROPERTY
@given(data=st.data())
def test_retyping_a_member_is_rejected(rule: str, data: st.DataObject) -> None:
    message = data.draw(shape_strategy(SHAPES[rule]))
    paths = _present_paths(rule, message)
    assume(paths)  # an empty sampling map has nothing to retype
    path = data.draw(st.sampled_from(paths))
    wrong = data.draw(st.sampled_from(_member_at(rule, path).wrong))
    assert cddl.validate(rule, replaced(message, path, wrong))
