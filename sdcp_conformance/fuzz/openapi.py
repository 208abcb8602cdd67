"""An OpenAPI 3.1 description of the verifier resources of Table 1, generated from the typed messages.

The document is built from :mod:`sdcp_conformance.protocol.messages`, whose
members carry their CDDL type in the field metadata, so it cannot drift from
the CDDL; ``tests/fuzz/test_api_fuzz.py`` checks examples both ways against
:func:`sdcp_conformance.protocol.cddl.validate`.

JSON Schema has no byte strings and schemathesis' custom formats cannot
generate raw bytes, so a CDDL ``bstr`` is a lowercase hex string here, marked
``contentEncoding: base16`` (JSON Schema 2020-12) with its exact length as a
pattern; :func:`to_wire` turns such strings back into bytes before CBOR
encoding, and :func:`to_document` turns bytes in a decoded answer into hex.
Maps are open (``additionalProperties``) except the contract and the sampling
map inside it, which are closed (§4.1, D-MSG-2).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

from sdcp_conformance.protocol import fields as f
from sdcp_conformance.protocol import messages as m
from sdcp_conformance.protocol.problems import PROBLEM_CBOR_MEDIA_TYPE, PROBLEM_MEDIA_TYPE, SDCP_MEDIA_TYPE

OPENAPI_VERSION = "3.1.0"
HEX_ENCODING = "base16"
UINT_MAX = f.UINT_LIMIT - 1
ENUM_PROBE = range(16)
"""A bare ``uint`` member whose checker refuses some of these values is an enumeration (``role``)."""

SESSION_PATH_ID = {"type": "string", "pattern": "^[A-Za-z0-9_-]{21}[AQgw]$"}
"""P1-MSG-3: unpadded base64url of 16 octets is 22 characters; the last carries 2 bits, so it is one of A, Q, g, w."""

ERROR_STATUSES = (400, 403, 404, 409, 410, 413, 422, 503)
"""Table 2's statuses plus the profile's: 400 (P1-MSG-2, P1-MSG-3), 404 (P1-SES-1), 413 (P1-MSG-2), 503 (D-VER-8)."""


@dataclasses.dataclass(frozen=True)
class Resource:
    """One row of Table 1 (verifier role): method, path, request and success response components."""

    method: str
    path: str
    request: str | None
    response: str
    success: tuple[int, ...]
    party: str
    """The harness identity that sends it: router-only resources (P1-ID-2) as the router, proposals as a drafter."""


RESOURCES = (
    Resource("post", "/sessions", "SessionOpen", "SessionState", (200, 201), "router"),
    Resource("put", "/sessions/{id}/drafter", "Assignment", "SessionState", (200,), "router"),
    Resource("post", "/proposals", "Proposal", "Verdict", (200,), "drafter-1"),
    Resource("get", "/sessions/{id}/output", None, "Output", (200,), "router"),
    Resource("post", "/sessions/{id}/policy", "Policy", "SessionState", (200,), "router"),
)
"""P1-MSG-4: "POST sessions 200 or 201 with session-state; PUT …/drafter and POST …/policy 200 with
session-state; POST proposals 200 with verdict; GET …/output 200 with output"."""

_MESSAGES: dict[str, type[m.Message]] = {
    "SessionOpen": m.SessionOpen, "SessionState": m.SessionState, "Assignment": m.Assignment,
    "Proposal": m.Proposal, "Verdict": m.Verdict, "Output": m.Output, "Policy": m.Policy,
    "Contract": m.Contract, "Sampling": m.Sampling, "Resume": m.Resume, "Status": m.Status,
}
"""Component name → typed message; ``ContractSampling`` is added for the closed sampling map of a contract."""

CONTRACT_SAMPLING = "ContractSampling"
UNKNOWN = "UnknownMember"

_UINT = re.compile(r"^uint(?: \.le (\d+))?(?: \.ge (\d+))?$")
_BSTR = re.compile(r"^bstr(?: \.size (\d+))?$")
_ARRAY = re.compile(r"^\[([*+]) (.+)\]$")


def wire_name(member: dataclasses.Field[Any]) -> str:
    return str(member.metadata["wire"] or member.name)


def member_kind(member: dataclasses.Field[Any]) -> f.Field:
    kind = member.metadata["kind"]
    assert isinstance(kind, f.Field)
    return kind


def is_required(member: dataclasses.Field[Any]) -> bool:
    """Optional members (``? key``) default to None; required ones have no default."""
    return member.default is dataclasses.MISSING


def hex_string(size: int | None) -> dict[str, Any]:
    """A bstr as lowercase hex; ``.size n`` becomes exactly 2n hex digits."""
    pattern = f"^[0-9a-f]{{{2 * size}}}$" if size is not None else "^(?:[0-9a-f]{2})*$"
    schema: dict[str, Any] = {"type": "string", "contentEncoding": HEX_ENCODING, "pattern": pattern}
    if size is not None:
        schema.update(minLength=2 * size, maxLength=2 * size)
    return schema


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def _uint(kind: f.Field, le: int | None, ge: int | None) -> dict[str, Any]:
    if le is None and ge is None:
        accepted = [value for value in ENUM_PROBE if _accepts(kind, value)]
        if len(accepted) < len(ENUM_PROBE):  # an enumeration such as status.role (§5.2: 1 or 2)
            return {"type": "integer", "enum": accepted}
    return {"type": "integer", "minimum": ge or 0, "maximum": UINT_MAX if le is None else le}


def _accepts(kind: f.Field, value: Any) -> bool:
    try:
        kind.parse(value, "probe")
    except (f.FieldError, ValueError):
        return False
    return True


def kind_schema(kind: f.Field, *, in_contract: bool = False) -> dict[str, Any]:
    """The JSON Schema of one CDDL member type, read from the checker's CDDL name."""
    name = kind.name
    if name == "Sampling" and in_contract:
        return _ref(CONTRACT_SAMPLING)  # D-MSG-2: closed inside the contract
    if name in _MESSAGES:
        return _ref(name)
    if name == "ladder":
        return {"type": "integer", "enum": [int(action) for action in m.LADDER_ACTIONS]}
    if name == "action":  # D-CDDL-3: any uint, unknown values read as fail
        return {"type": "integer", "minimum": 0, "maximum": UINT_MAX}
    return _plain_schema(kind, name)


def _plain_schema(kind: f.Field, name: str) -> dict[str, Any]:
    if (found := _UINT.match(name)) is not None:
        return _uint(kind, _int(found.group(1)), _int(found.group(2)))
    if (found := _BSTR.match(name)) is not None:
        return hex_string(_int(found.group(1)))
    if name == "tstr":
        return {"type": "string"}
    if name == "bool":
        return {"type": "boolean"}
    alternatives = _split_choice(name)
    if len(alternatives) > 1:
        return {"anyOf": [_named(alternative) for alternative in alternatives]}
    if (found := _ARRAY.match(name)) is not None:
        return _array(found.group(1), _named(found.group(2)))
    raise ValueError(f"no JSON Schema for the CDDL type {name!r}")


def _named(name: str) -> dict[str, Any]:
    """A type known only by name (array items and choice alternatives: they have no checker of their own here)."""
    return kind_schema(f.Field(name, lambda value, path: value))


def _array(quantifier: str, items: dict[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "array", "items": items}
    if quantifier == "+":
        schema["minItems"] = 1
    return schema


def _split_choice(name: str) -> list[str]:
    """``[* uint] / tstr`` → two alternatives; a choice inside brackets is not split."""
    parts, depth, start = [], 0, 0
    for index, char in enumerate(name):
        depth += {"[": 1, "]": -1}.get(char, 0)
        if depth == 0 and name.startswith(" / ", index):
            parts.append(name[start:index])
            start = index + 3
    parts.append(name[start:])
    return parts


def _int(text: str | None) -> int | None:
    return None if text is None else int(text)


def message_schema(message: type[m.Message], *, closed: bool | None = None) -> dict[str, Any]:
    """A map: its members, the required ones, closed or open (§5.2, §4.1)."""
    in_contract = message is m.Contract
    members = dataclasses.fields(message)
    properties = {wire_name(member): kind_schema(member_kind(member), in_contract=in_contract) for member in members}
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "required": [wire_name(member) for member in members if is_required(member)],
        "additionalProperties": False if (message.CLOSED if closed is None else closed) else _ref(UNKNOWN),
    }
    return schema


def unknown_member_schema() -> dict[str, Any]:
    """What an unknown member (ignored, §5.2) may hold here: plain CBOR values without tags.

    Any JSON value would do for the CDDL, but an integer beyond 64 bits has no untagged CBOR form
    (it would become a bignum tag, which SDCP does not use), and nesting adds nothing to what the
    message fuzzer already sends.
    """
    scalar: list[dict[str, Any]] = [
        {"type": "string"}, {"type": "boolean"}, {"type": "null"},
        {"type": "integer", "minimum": -f.UINT_LIMIT, "maximum": UINT_MAX},
    ]
    return {"anyOf": [*scalar, {"type": "array", "items": {"anyOf": scalar}}]}


def problem_schema() -> dict[str, Any]:
    """RFC 9457 members; P1-ERR-1 makes ``type`` carry the SDCP suffix, P1-ERR-2 adds ``state``."""
    state = message_schema(m.SessionState)
    for key in ("session", "digest"):  # P1-ERR-2: base64url strings without padding in a JSON problem
        state["properties"][key] = {"type": "string", "pattern": "^[A-Za-z0-9_-]*$"}
    return {
        "type": "object",
        "properties": {
            "type": {"type": "string"}, "title": {"type": "string"}, "status": {"type": "integer"},
            "detail": {"type": "string"}, "instance": {"type": "string"}, "state": state,
        },
        "required": ["type"],
        "additionalProperties": True,
    }


def components() -> dict[str, Any]:
    schemas = {name: message_schema(message) for name, message in _MESSAGES.items()}
    schemas[CONTRACT_SAMPLING] = message_schema(m.Sampling, closed=True)
    schemas["Problem"] = problem_schema()
    schemas[UNKNOWN] = unknown_member_schema()
    return {"schemas": schemas}


def _operation(resource: Resource) -> dict[str, Any]:
    responses: dict[str, Any] = {
        str(status): {"description": "success (P1-MSG-4)",
                      "content": {SDCP_MEDIA_TYPE: {"schema": _ref(resource.response)}}}
        for status in resource.success
    }
    problem = {"schema": _ref("Problem")}
    for status in ERROR_STATUSES:
        responses[str(status)] = {"description": "problem (Table 2, P1-ERR-1)",
                                  "content": {PROBLEM_MEDIA_TYPE: problem, PROBLEM_CBOR_MEDIA_TYPE: problem}}
    operation: dict[str, Any] = {
        "operationId": f"{resource.method}{resource.path}".replace("/", "_").replace("{", "").replace("}", ""),
        "responses": responses,
    }
    parameters = []
    if "{id}" in resource.path:
        parameters.append({"name": "id", "in": "path", "required": True, "schema": SESSION_PATH_ID})
    if resource.method == "get":
        parameters.append({"name": "from", "in": "query", "required": True,
                           "schema": {"type": "integer", "minimum": 0, "maximum": UINT_MAX}})
    if parameters:
        operation["parameters"] = parameters
    if resource.request is not None:
        operation["requestBody"] = {"required": True,
                                    "content": {SDCP_MEDIA_TYPE: {"schema": _ref(resource.request)}}}
    return operation


def build_document(server_url: str | None = None) -> dict[str, Any]:
    """The OpenAPI 3.1 document of the verifier's resources; ``server_url`` is the IUT's base URI."""
    paths: dict[str, dict[str, Any]] = {}
    for resource in RESOURCES:
        paths.setdefault(resource.path, {})[resource.method] = _operation(resource)
    document: dict[str, Any] = {
        "openapi": OPENAPI_VERSION,
        "info": {"title": "SDCP verifier resources (draft-sdcp Table 1, profile P1)", "version": "1"},
        "paths": paths,
        "components": components(),
    }
    if server_url is not None:
        document["servers"] = [{"url": server_url.rstrip("/")}]
    return document


def request_component(method: str, path: str) -> str | None:
    for resource in RESOURCES:
        if resource.method == method.lower() and resource.path == path:
            return resource.request
    return None


def resource_of(method: str, path: str) -> Resource:
    for resource in RESOURCES:
        if resource.method == method.lower() and resource.path == path:
            return resource
    raise KeyError(f"{method} {path} is not a verifier resource of Table 1")


def _resolve(node: Mapping[str, Any], document: Mapping[str, Any]) -> Mapping[str, Any]:
    while "$ref" in node:
        name = str(node["$ref"]).rsplit("/", 1)[-1]
        node = document["components"]["schemas"][name]
    return node


def to_wire(value: Any, node: Mapping[str, Any], document: Mapping[str, Any]) -> Any:
    """Hex strings where the schema says ``contentEncoding: base16`` become bytes; the rest is kept as generated.

    A value that is not valid hex (negative testing) stays a text string, which the IUT must refuse as a wrong type.
    """
    node = _resolve(node, document)
    if node.get("contentEncoding") == HEX_ENCODING and isinstance(value, str):
        try:
            return bytes.fromhex(value) if len(value) % 2 == 0 else value
        except ValueError:
            return value
    if isinstance(value, dict):
        properties = node.get("properties", {})
        return {key: to_wire(item, properties[key], document) if key in properties else item
                for key, item in value.items()}
    if isinstance(value, list) and isinstance(node.get("items"), Mapping):
        return [to_wire(item, node["items"], document) for item in value]
    if isinstance(value, list) and "anyOf" in node:
        arrays = [branch for branch in node["anyOf"] if _resolve(branch, document).get("type") == "array"]
        return to_wire(value, arrays[0], document) if arrays else value
    return value


def to_document(value: Any) -> Any:
    """A decoded CBOR answer in the document's shape: bytes as lowercase hex, everything else unchanged."""
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    if isinstance(value, dict):
        return {key: to_document(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_document(item) for item in value]
    return value


__all__ = [
    "ERROR_STATUSES",
    "HEX_ENCODING",
    "OPENAPI_VERSION",
    "RESOURCES",
    "SESSION_PATH_ID",
    "Resource",
    "build_document",
    "components",
    "hex_string",
    "is_required",
    "kind_schema",
    "member_kind",
    "message_schema",
    "problem_schema",
    "request_component",
    "resource_of",
    "to_document",
    "to_wire",
    "unknown_member_schema",
    "wire_name",
]
