"""Problem Details (RFC 9457) for SDCP: building responses and parsing them (P1-ERR-1/2)."""

from __future__ import annotations

import base64
import http
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sdcp_conformance.protocol import codec
from sdcp_conformance.protocol.errors import MalformedMessage, ProtocolError
from sdcp_conformance.protocol.problems import (
    PROBLEM_CBOR_MEDIA_TYPE,
    PROBLEM_MEDIA_TYPE,
    ProblemType,
)
from sdcp_conformance.transport.types import Handler, Request, Response, media_type

ABOUT_BLANK = "about:blank"
"""RFC 9457 §4.2.1: the type of a problem with no more semantics than its status code."""

BYTES_MEMBERS_OF_STATE = ("session", "digest")
"""P1-ERR-2: in ``state``, "``session`` and ``digest`` as base64url strings without padding"."""

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Problem:
    """A decoded problem document."""

    status: int
    type_uri: str
    title: str | None
    detail: str | None
    state: dict[str, Any] | None
    members: dict[str, Any]
    """Every member as received, extensions included."""

    @property
    def problem_type(self) -> ProblemType | None:
        """The SDCP problem type, matched by suffix (P1-ERR-1); ``None`` if not an SDCP type."""
        return ProblemType.from_type_uri(self.type_uri)


def problem_response(error: ProtocolError) -> Response:
    """The ``application/problem+json`` response for a protocol error."""
    members: dict[str, Any] = {
        "type": error.problem.uri,
        "title": error.problem.suffix,
        "status": error.status,
        "detail": error.detail,
    }
    if error.state is not None:
        members["state"] = state_to_json(error.state)
    return _json_response(error.status, members)


async def answered_as_problem(route: Handler, request: Request) -> Response:
    """``route``'s response, or the problem document of the :class:`ProtocolError` it raised (P1-ERR-1)."""
    try:
        return await route(request)
    except ProtocolError as error:
        return problem_response(error)


def status_problem_response(status: int, detail: str) -> Response:
    """A problem response with no SDCP type (``about:blank``), e.g. 404, 413, 500, 505."""
    title = http.HTTPStatus(status).phrase
    members = {"type": ABOUT_BLANK, "title": title, "status": status, "detail": detail}
    return _json_response(status, members)


def state_to_json(state: Mapping[str, Any]) -> dict[str, Any]:
    """Render a session-state for a JSON problem: byte members as unpadded base64url."""
    return {key: _b64url(value) if isinstance(value, bytes) else value for key, value in state.items()}


def state_from_json(state: Mapping[str, Any]) -> dict[str, Any]:
    """Undo :func:`state_to_json`; raises MalformedMessage on a bad base64url member."""
    out = dict(state)
    for key in BYTES_MEMBERS_OF_STATE:
        value = out.get(key)
        if isinstance(value, str):
            out[key] = b64url_decode(value)
    return out


def parse_problem(status: int, content_type: str | None, body: bytes) -> Problem | None:
    """Decode a problem body (JSON or CBOR, P1-ERR-1); ``None`` if the body is not a problem.

    A problem whose members have the wrong types raises :class:`MalformedMessage`.
    """
    media = media_type(content_type)
    if media == PROBLEM_MEDIA_TYPE:
        members = _json_members(body)
    elif media == PROBLEM_CBOR_MEDIA_TYPE:
        members = _cbor_members(body)
    else:
        return None
    return _problem_from_members(status, members)


def b64url_decode(text: str) -> bytes:
    """Strict unpadded base64url (RFC 4648 §5) as P1-MSG-3 and P1-ERR-2 use it."""
    if "=" in text or len(text) % 4 == 1:
        raise MalformedMessage(f"not unpadded base64url: {text!r}")
    try:
        raw = base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_", validate=True)
    except ValueError as exc:  # binascii.Error, and non-ASCII text, which b64decode refuses with ValueError
        raise MalformedMessage(f"not unpadded base64url: {text!r}") from exc
    if _b64url(raw) != text:  # non-canonical trailing bits
        raise MalformedMessage(f"non-canonical base64url: {text!r}")
    return raw


def _b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _json_response(status: int, members: Mapping[str, Any]) -> Response:
    body = json.dumps(members, separators=(",", ":"), ensure_ascii=False).encode()
    return Response(status=status, body=body, headers=[("content-type", PROBLEM_MEDIA_TYPE)])


def _json_members(body: bytes) -> dict[str, Any]:
    try:
        members = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MalformedMessage(f"problem+json body is not JSON: {exc}") from exc
    if not isinstance(members, dict):
        raise MalformedMessage("problem+json body is not an object")
    return members


def _cbor_members(body: bytes) -> dict[str, Any]:
    members = codec.decode(body)
    if not isinstance(members, dict) or not all(isinstance(k, str) for k in members):
        raise MalformedMessage("problem+cbor body is not a map with text keys")
    return members


def _problem_from_members(status: int, members: dict[str, Any]) -> Problem:
    type_uri = members.get("type", ABOUT_BLANK)  # RFC 9457 §3.1.1: absent means about:blank
    title, detail, state = members.get("title"), members.get("detail"), members.get("state")
    if not isinstance(type_uri, str):
        raise MalformedMessage("problem member 'type' is not a string")
    if title is not None and not isinstance(title, str):
        raise MalformedMessage("problem member 'title' is not a string")
    if detail is not None and not isinstance(detail, str):
        raise MalformedMessage("problem member 'detail' is not a string")
    # A state that is not a map of P1-ERR-2's encoding does not hide the problem type: ``state`` is then
    # None and the member as sent stays in ``members`` for whoever judges its encoding.
    parsed_state = None
    if isinstance(state, dict):
        try:
            parsed_state = state_from_json(state)
        except MalformedMessage:
            parsed_state = None
    return Problem(status, type_uri, title, detail, parsed_state, members)


async def call_handler(handler: Handler, request: Request, on_error: Callable[[], None]) -> Response:
    """The handler's response to ``request``; a :class:`ProtocolError` it raises becomes its problem response, any
    other exception a 500 problem (``on_error`` counts it) — a server never ends a connection for a handler's bug."""
    try:
        return await handler(request)
    except ProtocolError as error:
        return problem_response(error)
    except Exception as exc:
        on_error()
        log.exception("handler failed on %s %s", request.method, request.path)
        return status_problem_response(500, f"handler raised {type(exc).__name__}")


__all__ = [
    "ABOUT_BLANK",
    "Problem",
    "answered_as_problem",
    "b64url_decode",
    "call_handler",
    "parse_problem",
    "problem_response",
    "state_from_json",
    "state_to_json",
    "status_problem_response",
]
