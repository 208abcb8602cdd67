"""The OpenAPI description of the verifier resources and the schemathesis runner (issue 8, point 3)."""

from __future__ import annotations

import base64
import dataclasses
import re
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openapi_spec_validator import validate

from sdcp_conformance.cli import main
from sdcp_conformance.fuzz import openapi
from sdcp_conformance.fuzz.api import ApiStats, case_strategy, load_schema, run_api_campaign
from sdcp_conformance.protocol import cddl
from sdcp_conformance.protocol import fields as f
from sdcp_conformance.protocol import messages as m

BASE = "https://127.0.0.1:9/verifier/"
DOCUMENT = openapi.build_document(BASE)
RULES = {message: rule for rule, message in m.MESSAGE_TYPES.items()}
REQUESTS = [resource for resource in openapi.RESOURCES if resource.request is not None]


def _component(name: str) -> dict[str, Any]:
    """A component schema that resolves its ``$ref``s against the whole document."""
    return {"$ref": f"#/components/schemas/{name}", "components": DOCUMENT["components"]}


def test_the_document_is_valid_openapi_3_1() -> None:
    validate(DOCUMENT)
    assert DOCUMENT["openapi"] == "3.1.0"
    operations = {(method, path) for path, item in DOCUMENT["paths"].items() for method in item}
    assert operations == {(resource.method, resource.path) for resource in openapi.RESOURCES}


@pytest.mark.parametrize("resource", REQUESTS, ids=lambda resource: resource.request)
def test_generated_request_bodies_are_valid_per_the_cddl(resource: openapi.Resource) -> None:
    """Every positive body schemathesis generates is, after the hex mapping, a valid CDDL message."""
    operation = load_schema(BASE)[resource.path][resource.method.upper()]
    rule = RULES[_message(resource.request)]

    @settings(max_examples=60, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(case=operation.as_strategy())
    def check(case: Any) -> None:
        wire = openapi.to_wire(case.body, {"$ref": f"#/components/schemas/{resource.request}"}, DOCUMENT)
        assert cddl.validate(rule, wire) == [], (case.body, wire)

    check()


def _message(component: str | None) -> type[m.Message]:
    assert component is not None
    found = {message.__name__: message for message in m.MESSAGE_TYPES.values()}
    return found[component]


VALID = {
    "Contract": {"target": bytes(32), "tokenizer": bytes(range(32)), "rule": 1, "m_max": 64, "max_new": 5,
                 "stop": [2], "low_rounds": 1, "fallback": [1, 2, 3, 5], "drafters": [bytes(32)],
                 "sampling": {"temperature_milli": 0, "top_p_milli": 1000}, "low_ratio": 100, "self_load": 0,
                 "self_max": 3, "scope": bytes(16)},
    "SessionState": {"session": bytes(16), "epoch": 1, "round": 0, "committed": 0, "digest": bytes(32), "state": 0},
    "Verdict": {"session": bytes(16), "epoch": 1, "round": 1, "accepted": 1, "emitted": [4, 5], "committed": 2,
                "digest": bytes(32), "action": 9, "m_cap": 8, "low": 0, "load": 100, "unknown": [1]},
    "Output": {"session": bytes(16), "epoch": 1, "tokens": [], "final": True, "from": 0, "finish": 4},
    "Status": {"instance": "https://d/", "role": 1, "load": 0, "queue": 0, "ttl_ms": 5000, "accept_milli": 1000},
    "Policy": {"session": bytes(16), "from_round": 2, "sampling": {"top_k": 1, "extra": "ignored"}},
}


@pytest.mark.parametrize("name", sorted(VALID))
def test_cddl_valid_examples_match_the_document_through_the_hex_mapping(name: str) -> None:
    """A CDDL-valid example, bytes as hex, is valid per the document, and maps back to the identical message."""
    example = VALID[name]
    assert cddl.validate(RULES[_message(name)], example) == []
    document_form = openapi.to_document(example)
    jsonschema.validate(document_form, _component(name))
    assert openapi.to_wire(document_form, {"$ref": f"#/components/schemas/{name}"}, DOCUMENT) == example


@pytest.mark.parametrize(("name", "change"), [
    ("Contract", {"m_max": 65}), ("Contract", {"low_ratio": 101}), ("Contract", {"scope": bytes(17)}),
    ("Contract", {"target": bytes(31)}), ("Contract", {"unknown": 1}), ("Contract", {"fallback": [4]}),
    ("Contract", {"sampling": {"top_k": 1, "unknown": 1}}), ("Status", {"role": 3}), ("SessionState", {"epoch": -1}),
])
def test_cddl_invalid_examples_are_invalid_per_the_document(name: str, change: dict[str, Any]) -> None:
    example = {**VALID[name], **change}
    assert cddl.validate(RULES[_message(name)], example) != []
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(openapi.to_document(example), _component(name))


def _uint_members() -> list[tuple[type[m.Message], dataclasses.Field[Any]]]:
    return [(message, member) for message in m.MESSAGE_TYPES.values() for member in dataclasses.fields(message)
            if openapi.member_kind(member).name.startswith("uint")]


@pytest.mark.parametrize(("message", "member"), _uint_members(),
                         ids=lambda item: getattr(item, "__name__", getattr(item, "name", "")))
def test_uint_ranges_agree_with_the_member_checkers(message: type[m.Message], member: dataclasses.Field[Any]) -> None:
    kind = openapi.member_kind(member)
    schema = openapi.kind_schema(kind)
    values = schema.get("enum") or [schema["minimum"], schema["maximum"]]
    outside = [value for value in (-1, 0, 1, 2, 3, 4, 64, 65, 100, 101, 1000, 1001, f.UINT_LIMIT)
               if not _in(schema, value)]
    for value in values:
        kind.parse(value, "v")
    for value in outside:
        with pytest.raises(f.FieldError):
            kind.parse(value, "v")


def _in(schema: dict[str, Any], value: int) -> bool:
    if "enum" in schema:
        return value in schema["enum"]
    return bool(schema["minimum"] <= value <= schema["maximum"])


def test_the_path_id_pattern_is_exactly_unpadded_base64url_of_16_octets() -> None:
    pattern = openapi.SESSION_PATH_ID["pattern"]

    @settings(max_examples=200, database=None)
    @given(st.binary(min_size=16, max_size=16))
    def check(raw: bytes) -> None:
        assert re.fullmatch(pattern, base64.urlsafe_b64encode(raw).rstrip(b"=").decode())

    check()
    assert not re.fullmatch(pattern, "A" * 21 + "B")  # non-zero trailing bits
    assert not re.fullmatch(pattern, "A" * 22 + "=")


def test_case_strategy_covers_every_operation_in_both_modes() -> None:
    assert case_strategy(load_schema(BASE)) is not None


# ---------------------------------------------------------------------- against the embedded reference


def _strings(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return "".join(_strings(item) for item in value.values())
    if isinstance(value, list):
        return "".join(_strings(item) for item in value)
    return ""


@pytest.fixture(scope="module")
def reference_run() -> ApiStats:
    return run_api_campaign(examples=250, seed=7)


def test_the_reference_passes_a_short_seeded_run(reference_run: ApiStats) -> None:
    failures = reference_run.failures
    assert failures == [], [(f.check, f.operation, f.status, f.message, f.request) for f in failures]
    assert reference_run.examples == 250 and reference_run.canary_checks >= 10


def test_the_run_reaches_every_resource_past_its_front_door(reference_run: ApiStats) -> None:
    """Anchoring works: every operation got a success answer at least once."""
    succeeded = {operation for (operation, _, status), _ in reference_run.outcomes.items() if 200 <= status < 300}
    assert succeeded == {f"{r.method.upper()} {r.path}" for r in openapi.RESOURCES}


def test_a_mutant_that_answers_500_is_reported() -> None:
    stats = run_api_campaign(examples=150, seed=7, mutant="unchecked-token-range")
    found = [failure for failure in stats.failures if failure.check == "not_a_server_error"
             and failure.operation == "POST /proposals"]
    assert found and found[0].strict and found[0].status == 500
    assert stats.failure is not None


def test_the_fuzz_command_runs_the_api_fuzzer() -> None:
    result = CliRunner().invoke(main, ["fuzz", "--api", "--mutant", "unchecked-token-range", "--examples", "150",
                                       "--seed", "7"])
    assert result.exit_code == 1, result.output
    assert "not_a_server_error on POST /proposals (500)" in result.output
