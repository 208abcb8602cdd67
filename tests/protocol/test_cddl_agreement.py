"""The typed messages and the CDDL schema agree on what is well-formed.

Two independent descriptions of §4.1/§5.2 — ``messages.py`` (hand-written
checkers) and ``sdcp.cddl`` (validated by cddl-verifier) — must accept and
refuse the same inputs; a disagreement is a bug in one of them.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdcp_conformance.protocol import cddl
from sdcp_conformance.protocol.errors import MalformedMessage
from sdcp_conformance.protocol.messages import MESSAGE_TYPES
from tests.protocol.message_examples import example

NAMES = sorted(MESSAGE_TYPES)

REPLACEMENTS = st.one_of(
    st.integers(-3, 2**64 - 1), st.booleans(), st.none(), st.text(max_size=3), st.binary(max_size=33),
    st.lists(st.integers(-1, 300), max_size=3), st.just({}), st.just(0.5),
    st.just(bytes(16)), st.just(bytes(32)), st.sampled_from([0, 1, 2, 3, 4, 5, 6, 64, 65, 100, 101, 1000, 1001]),
)


def _typed_accepts(name: str, obj: Any) -> bool:
    try:
        MESSAGE_TYPES[name].from_obj(obj)
    except MalformedMessage:
        return False
    return True


def _mutate(obj: dict[str, Any], data: st.DataObject) -> None:
    target: dict[str, Any] = obj
    nested = [key for key, value in obj.items() if isinstance(value, dict)]
    if nested and data.draw(st.booleans()):
        target = obj[data.draw(st.sampled_from(sorted(nested)))]
    action = data.draw(st.sampled_from(["drop", "replace", "add"]))
    if action == "add":
        target[data.draw(st.sampled_from(["x-new", "temperature_milli", "seed", "state"]))] = data.draw(REPLACEMENTS)
        return
    key = data.draw(st.sampled_from(sorted(target)))
    if action == "drop":
        del target[key]
    else:
        target[key] = data.draw(REPLACEMENTS)


@pytest.mark.parametrize("name", NAMES)
def test_examples_are_valid_for_both(name: str) -> None:
    assert cddl.validate(name, example(name)) == []
    assert _typed_accepts(name, example(name))


@settings(derandomize=True, max_examples=400, deadline=None)
@given(st.sampled_from(NAMES), st.data())
def test_mutated_messages_are_judged_alike(name: str, data: st.DataObject) -> None:
    obj = example(name)
    _mutate(obj, data)
    by_schema = cddl.validate(name, obj) == []
    assert _typed_accepts(name, obj) == by_schema, cddl.validate(name, obj)
