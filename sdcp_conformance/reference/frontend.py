"""A small client-facing front on the reference router, so a separate process can start sessions.

SDCP defines no client API (§1.4: "client-facing inference APIs" are out of
scope), so this is the reference stack's own, kept apart from the SDCP
resources and named under ``client/`` of the router's base URI:

* ``POST client/sessions`` with CBOR ``{contract, prompt: [* uint], ? session}`` opens a
  session through the router (§6.1) and answers 201 ``{session, verifier, epoch}``;
* ``GET client/sessions/{id}`` answers ``{verifier, epoch, phase}``, which a
  reader asks again after a failover (§6.9) to find the new verifier.

Everything else goes to the router's SDCP handler unchanged.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from sdcp_conformance.errors import MalformedMessage, ProtocolError, SdcpConformanceError
from sdcp_conformance.protocol.codec import decode, encode
from sdcp_conformance.protocol.messages import Event
from sdcp_conformance.protocol.problems import SDCP_MEDIA_TYPE
from sdcp_conformance.reference.router.app import RouterApp
from sdcp_conformance.transport.problem import b64url_decode, problem_response, status_problem_response
from sdcp_conformance.transport.types import Request, Response

CLIENT_PREFIX = "client/sessions"


class RouterFrontend:
    """Wraps a :class:`RouterApp` handler and adds the ``client/`` resources."""

    def __init__(self, router: RouterApp) -> None:
        self.router = router
        base = urlsplit(router.config.base_uri).path.rstrip("/")
        self._prefix = base + "/" + CLIENT_PREFIX
        self._events_path = base + "/events"
        self.events: list[Event] = []
        """Every event the router accepted, in arrival order (for operators and tests)."""

    async def __call__(self, request: Request) -> Response:
        if not request.path.startswith(self._prefix):
            response = await self.router(request)
            if request.path == self._events_path and 200 <= response.status < 300:
                self.events.append(Event.from_cbor(request.body))
            return response
        try:
            if request.method == "POST" and request.path == self._prefix:
                return await self._open(request)
            if request.method == "GET":
                return self._describe(request.path[len(self._prefix) + 1 :])
            return status_problem_response(405, f"{request.method} is not allowed here")
        except ProtocolError as error:
            return problem_response(error)
        except SdcpConformanceError as error:
            return status_problem_response(503, str(error))

    async def _open(self, request: Request) -> Response:
        body = decode(request.body)
        if not isinstance(body, dict) or "contract" not in body or not isinstance(body.get("prompt"), list):
            raise MalformedMessage("expected {contract, prompt: [* uint]}")
        requested = body.get("session")
        if requested is not None and (not isinstance(requested, bytes) or len(requested) != 16):
            raise MalformedMessage("session, when given, is 16 octets")
        session = await self.router.open_session(body["contract"], body["prompt"], session_id=requested)
        return _cbor(201, self._view(session) | {"session": session})

    def _describe(self, encoded: str) -> Response:
        session = b64url_decode(encoded)
        if session not in self.router.sessions:
            return status_problem_response(404, f"no session {encoded}")
        return _cbor(200, self._view(session))

    def _view(self, session: bytes) -> dict[str, Any]:
        machine = self.router.session(session)
        return {"verifier": machine.verifier or "", "epoch": machine.epoch, "phase": machine.phase.value}


def _cbor(status: int, body: dict[str, Any]) -> Response:
    return Response(status, encode(body), [("content-type", SDCP_MEDIA_TYPE)])


__all__ = ["CLIENT_PREFIX", "RouterFrontend"]
