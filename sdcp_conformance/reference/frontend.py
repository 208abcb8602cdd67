"""The reference router's test front (PROFILE.md "Test front of a router", P1-FRONT-1..3).

SDCP defines no client API (§1.4), so the profile defines a small front that
every router under certification offers on its base URI, with the same TLS
profile (any certificate of the CA is a client) and CBOR bodies:

* ``POST client/sessions`` with ``{contract, prompt: [* uint] / cache-ref, ? session}``
  opens the session as §6.1 says and answers 201 ``{session, verifier, epoch}``
  once the verifier has answered; a contract the router cannot serve gets 422
  sdcp-bad-contract (P1-FRONT-1, D-RTR-22);
* ``GET client/sessions/{id}/output?from=n`` is the router as the front end of
  §6.7 (P1-FRONT-2, :mod:`~sdcp_conformance.reference.router.front_output`);
* ``GET client/sessions/{id}`` answers ``{verifier, epoch, phase}``;
* ``POST client/sessions/{id}/policy`` with ``{sampling}`` sends a policy
  (§6.6, P1-RTR-4) and answers 200 ``{from_round}`` once the verifier accepted
  it (P1-FRONT-3, D-RTR-26).

Everything else goes to the router's SDCP handler unchanged.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.protocol.codec import decode, encode
from sdcp_conformance.protocol.errors import MalformedMessage, ProtocolError
from sdcp_conformance.protocol.messages import Event, Sampling
from sdcp_conformance.protocol.problems import SDCP_MEDIA_TYPE
from sdcp_conformance.reference.router.app import NoEligibleInstance, PolicyRefused, RouterApp, RouterError
from sdcp_conformance.reference.router.front_output import FrontOutput
from sdcp_conformance.transport.problem import b64url_decode, problem_response, status_problem_response
from sdcp_conformance.transport.types import Request, Response

CLIENT_PREFIX = "client/sessions"


class RouterFrontend:
    """Wraps a :class:`RouterApp` handler and adds the P1-FRONT resources under ``client/``."""

    output_class: type[FrontOutput] = FrontOutput

    def __init__(self, router: RouterApp) -> None:
        self.router = router
        base = urlsplit(router.config.base_uri).path.rstrip("/")
        self._prefix = base + "/" + CLIENT_PREFIX
        self._events_path = base + "/events"
        self.output = self.output_class(router)
        self.events: list[Event] = []
        """Every event the router accepted, in arrival order (for operators and tests)."""

    async def __call__(self, request: Request) -> Response:
        if not request.path.startswith(self._prefix):
            response = await self.router(request)
            if request.path == self._events_path and 200 <= response.status < 300:
                self.events.append(Event.from_cbor(request.body))
            return response
        try:
            return await self._route(request)
        except ProtocolError as error:
            return problem_response(error)
        except InvalidArgument as error:
            return problem_response(MalformedMessage(str(error)))
        except NoEligibleInstance as error:
            return status_problem_response(503, str(error))
        except RouterError as error:
            return status_problem_response(404, str(error))

    async def _route(self, request: Request) -> Response:
        rest = request.path[len(self._prefix):].strip("/")
        parts = rest.split("/") if rest else []
        if not parts:
            if request.method == "POST":
                return await self._open(request)
            return _not_allowed(request, "POST")
        session = _session_id(parts[0])
        if len(parts) == 1 and request.method == "GET":
            return _cbor(200, self._view(session))
        if parts[1:] == ["output"] and request.method == "GET":
            output = await self.output.read(session, _from(request.query))
            return _cbor(200, output.to_obj())
        if parts[1:] == ["policy"] and request.method == "POST":
            return await self._policy(request, session)
        if len(parts) <= 2 and parts[1:] in ([], ["output"], ["policy"]):
            return _not_allowed(request, "POST" if parts[1:] == ["policy"] else "GET")
        return status_problem_response(404, f"no resource at {request.path}")

    async def _open(self, request: Request) -> Response:
        body = _map(request.body)
        prompt = body.get("prompt")
        if "contract" not in body or not (isinstance(prompt, str) or _uints(prompt)) or prompt is None:
            raise MalformedMessage("expected {contract, prompt: [* uint] / cache-ref, ? session}")
        requested = body.get("session")
        if requested is not None and (not isinstance(requested, bytes) or len(requested) != 16):
            raise MalformedMessage("session, when given, is 16 octets")
        session = await self.router.open_session(body["contract"], prompt, session_id=requested)
        return _cbor(201, self._view(session, with_phase=False) | {"session": session})

    async def _policy(self, request: Request, session: bytes) -> Response:
        body = _map(request.body)
        if "sampling" not in body:
            raise MalformedMessage("expected {sampling}")
        sampling = Sampling.from_obj(body["sampling"], path="sampling")
        try:
            policy, _ = await self.router.apply_policy(session, sampling)
        except PolicyRefused as refusal:  # D-RTR-26
            refused = refusal.refused
            if refused is None or refused.status == 0:
                return status_problem_response(503, str(refusal))
            if refused.problem is not None:
                return problem_response(ProtocolError(refused.problem, refused.detail or str(refusal)))
            return status_problem_response(refused.status if refused.status >= 400 else 502, str(refusal))
        return _cbor(200, {"from_round": policy.from_round})

    def _view(self, session: bytes, *, with_phase: bool = True) -> dict[str, Any]:
        machine = self.router.session(session)
        view: dict[str, Any] = {"verifier": machine.verifier or "", "epoch": machine.epoch}
        if with_phase:
            view["phase"] = machine.phase.value
        return view


def _map(raw: bytes) -> dict[Any, Any]:
    body = decode(raw)
    if not isinstance(body, dict):
        raise MalformedMessage("the body is not a CBOR map")
    return body


def _uints(value: Any) -> bool:
    return isinstance(value, list) and all(type(item) is int and item >= 0 for item in value)


def _session_id(encoded: str) -> bytes:
    """P1-MSG-3: the unpadded base64url of a 16-octet session id; anything else is 400."""
    session = b64url_decode(encoded)
    if len(session) != 16:
        raise MalformedMessage(f"{encoded!r} is not a 16-octet session id")
    return session


def _from(query: str) -> int:
    values = parse_qs(query).get("from", ["0"])
    text = values[0]
    if len(values) != 1 or not text.isascii() or not text.isdigit():
        raise MalformedMessage(f"from={text!r} is not an output index")
    return int(text)


def _not_allowed(request: Request, allowed: str) -> Response:
    response = status_problem_response(405, f"{request.method} is not allowed on {request.path}")
    response.headers.append(("allow", allowed))
    return response


def _cbor(status: int, body: dict[str, Any]) -> Response:
    return Response(status, encode(body), [("content-type", SDCP_MEDIA_TYPE)])


__all__ = ["CLIENT_PREFIX", "RouterFrontend"]
