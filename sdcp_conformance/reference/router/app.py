"""The reference router's front: Table 1's router resources, a client API and a watchdog.

Thin by design: the HTTP handler serves ``PUT instances/{id}/status`` and
``POST events``; :meth:`RouterApp.open_session` and :meth:`RouterApp.set_policy`
serve the router's own client (the ``generate`` command, tests); the
watchdog (:meth:`RouterApp.check_once`, :meth:`RouterApp.run_watchdog`) moves
sessions off failed verifiers (§6.9) and expired drafters. Choices come from
:class:`~.registry.InstanceRegistry`, messages from
:class:`~.session.RouterSession`, and :class:`~.driver.SessionDriver` carries
them, each call under the router's own timeout (D-RTR-18).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import os
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.protocol.contract import parse_contract, validate_contract
from sdcp_conformance.protocol.errors import MalformedMessage, ProtocolError
from sdcp_conformance.protocol.messages import Contract, Event, Policy, Sampling, SessionState, Status
from sdcp_conformance.protocol.problems import ProblemType
from sdcp_conformance.reference.router.decisions import (
    COMMIT_LOG_PATH,
    PATH_MISMATCH_PROBLEM,
    UNKNOWN_SESSION_EVENT_PROBLEM,
)
from sdcp_conformance.reference.router.driver import (
    NoEligibleInstance,
    PolicyRefused,
    RouterConfig,
    RouterError,
    SessionDriver,
    Slot,
    describe,
)
from sdcp_conformance.reference.router.ports import DrafterLink, Refused, RouterCache, VerifierLink
from sdcp_conformance.reference.router.registry import InstanceRegistry
from sdcp_conformance.reference.router.session import RouterSession, Wants
from sdcp_conformance.transport.problem import answered_as_problem, b64url_decode, status_problem_response
from sdcp_conformance.transport.types import Clock, Request, Response, Sleep

log = logging.getLogger(__name__)



@dataclass(frozen=True)
class RouterParts:
    """The classes a router is built from. The reference uses these; the mutant catalogue
    (:mod:`sdcp_conformance.mutants.router`) swaps one at a time to plant a bug."""

    session: type[RouterSession] = RouterSession
    driver: type[SessionDriver] = SessionDriver
    registry: type[InstanceRegistry] = InstanceRegistry


class RouterApp:
    """An async :data:`~sdcp_conformance.transport.types.Handler` plus the router's client API."""

    def __init__(
        self,
        config: RouterConfig,
        verifiers: VerifierLink,
        drafters: DrafterLink,
        cache: RouterCache,
        *,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
        new_session_id: Callable[[], bytes] = lambda: os.urandom(16),
        parts: RouterParts | None = None,
    ) -> None:
        self.config = config
        self.verifiers = verifiers
        self.drafters = drafters
        self.cache = cache
        self.parts = parts or RouterParts()
        self.registry = self.parts.registry(dict(config.drafters), frozenset(config.verifiers))
        self.driver = self.parts.driver(config, self.registry, verifiers, drafters, cache, clock)
        self.sessions: dict[bytes, Slot] = {}
        self._clock = clock
        self._sleep = sleep
        self._new_session_id = new_session_id
        self._background: set[asyncio.Future[None]] = set()
        self._watchdog: asyncio.Task[None] | None = None
        self._status_arrived = asyncio.Event()
        self._base_path = urlsplit(config.base_uri).path.rstrip("/")

    # ------------------------------------------------------------------ HTTP

    async def __call__(self, request: Request) -> Response:
        return await answered_as_problem(self._route, request)

    async def _route(self, request: Request) -> Response:
        path = request.path
        if not path.startswith(self._base_path + "/"):
            return status_problem_response(404, f"no resource at {path}")
        parts = path[len(self._base_path) + 1 :].split("/")
        shape = "instances/*/status" if len(parts) == 3 and parts[0] == "instances" and parts[2] == "status" else None
        shape = shape or "/".join(parts)
        routes = {("PUT", "instances/*/status"): self._status, ("POST", "events"): self._event}
        route = routes.get((request.method, shape))
        if route is None:
            status = 405 if shape in {known for _, known in routes} else 404
            return status_problem_response(status, f"{request.method} {path} is not a router resource")
        return await route(request, parts)

    async def _status(self, request: Request, parts: list[str]) -> Response:
        """PUT instances/{id}/status → 204 (Table 1)."""
        status = Status.from_cbor(request.body)
        # P1-RTR-1: "{id} is the base64url (no padding) of the instance's base URI".
        try:
            named = b64url_decode(parts[1]).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MalformedMessage("the path {id} is not a base URI", problem=PATH_MISMATCH_PROBLEM) from exc
        if named != status.instance:
            detail = f"the path names {named!r}, the status {status.instance!r}"
            raise MalformedMessage(detail, problem=PATH_MISMATCH_PROBLEM)
        self.registry.accept(status, request.peer_identity, self._clock())
        arrived, self._status_arrived = self._status_arrived, asyncio.Event()
        arrived.set()
        return Response(204)

    async def wait_until_live(self, instances: Iterable[str]) -> None:
        """Return once every named instance has an unexpired status (P1-RTR-2), so is eligible.

        A stack is ready only then: a session opened before the verifiers' first
        reports arrive is refused, as it must be, for want of an eligible verifier.
        """
        wanted = list(instances)
        while True:
            arrived = self._status_arrived
            if not self.not_live(wanted):
                return
            await arrived.wait()

    def not_live(self, instances: Iterable[str]) -> list[str]:
        """Those of ``instances`` with no unexpired status now."""
        now = self._clock()
        return [instance for instance in instances if not self.registry.live(instance, now)]

    async def _event(self, request: Request, parts: list[str]) -> Response:
        """POST events → 204 (Table 1, P1-EVT-1)."""
        event = Event.from_cbor(request.body)
        slot = self.sessions.get(event.session)
        if slot is None:
            raise ProtocolError(UNKNOWN_SESSION_EVENT_PROBLEM, "no such session at this router")  # D-RTR-7
        slot.machine.check_event(event, request.peer_identity)
        self._spawn(self._apply_event(slot, event, request.peer_identity))
        return Response(204)

    async def _apply_event(self, slot: Slot, event: Event, peer: str | None) -> None:
        """D-RTR-27: in the session's turn, after an assignment in flight (events keep their order: the lock
        is first come, first served)."""
        async with slot.lock:
            machine = slot.machine
            try:
                wants = machine.on_event(event, peer)
            except ProtocolError as exc:  # the session moved on meanwhile (a failover): the event is stale now
                log.info("session %s: event of kind %s dropped: %s", _b64(machine.session), event.kind, exc)
                return
            if wants is Wants.ANOTHER_DRAFTER:
                # §6.5.2 switch; P1-RTR-5: the same drafter when no other is eligible.
                previous = machine.previous_drafter
                exclude = (previous,) if previous is not None else ()
                await self.driver.assign_locked(slot, exclude=exclude, same_if_alone=previous)
            elif wants is Wants.A_DRAFTER:
                await self.driver.assign_locked(slot)

    # ------------------------------------------------------------------ client API

    async def open_session(
        self,
        contract: Contract | Mapping[str, Any],
        prompt: Sequence[int] | str,
        *,
        session_id: bytes | None = None,
    ) -> bytes:
        """§6.1: open the session at an eligible verifier, then assign a drafter. Returns the session id.

        Raises :class:`~sdcp_conformance.protocol.errors.ProtocolError` 422 sdcp-bad-contract for a contract this
        router cannot serve (D-RTR-22): invalid, no configured drafter permitted by it, or refused as
        sdcp-bad-contract by every verifier tried; :class:`NoEligibleInstance` when no verifier could open it.
        """
        parsed = contract if isinstance(contract, Contract) else parse_contract(contract)
        validate_contract(parsed)
        if not any(self.registry.permitted(drafter, parsed) for drafter in self.config.drafters):
            raise ProtocolError(ProblemType.BAD_CONTRACT, "no configured drafter serves a model the contract permits")
        prompt_ref = prompt if isinstance(prompt, str) else None
        tokens = (
            await self.driver.cache_call(self.cache.get_tokens(prompt)) if isinstance(prompt, str) else list(prompt)
        )
        if not tokens:
            raise InvalidArgument("the prompt is empty (P1-SES-1)")
        session = session_id if session_id is not None else self._new_session_id()
        if len(session) != 16 or session in self.sessions:
            raise InvalidArgument("a session id is 16 octets and new to the router")
        commit_log = self.driver.object_uri(COMMIT_LOG_PATH, session=_b64(session))
        machine = self.parts.session(session, parsed, tokens, commit_log, m_init=self.config.m_init,
                                     prompt_ref=prompt_ref)
        slot = Slot(machine)
        self.sessions[session] = slot
        async with slot.lock:
            refused = await self.driver.open_somewhere(machine)
            if machine.verifier is None:
                del self.sessions[session]
                reasons = "; ".join(f"{verifier}: {describe(answer)}" for verifier, answer in refused)
                if refused and all(isinstance(answer, Refused) and answer.problem is ProblemType.BAD_CONTRACT
                                   for _, answer in refused):
                    # D-RTR-22: "no verifier for its target" (P1-FRONT-1).
                    raise ProtocolError(ProblemType.BAD_CONTRACT, f"every verifier refused the contract: {reasons}")
                raise NoEligibleInstance(f"no eligible verifier opened the session: {reasons or 'none is eligible'}")
            await self.driver.assign_locked(slot)  # D-RTR-19: a session may wait for a drafter
        return session

    async def set_policy(self, session: bytes, sampling: Sampling) -> SessionState:
        """§6.6 / P1-RTR-4: change the sampling profile from the next round on."""
        return (await self.apply_policy(session, sampling))[1]

    async def apply_policy(self, session: bytes, sampling: Sampling) -> tuple[Policy, SessionState]:
        """:meth:`set_policy`, returning the policy the verifier accepted as well (P1-FRONT-3)."""
        slot = self._slot(session)
        async with slot.lock:
            machine = slot.machine
            if machine.ended or machine.verifier is None:
                raise RouterError(f"session {_b64(session)} has no serving verifier ({machine.phase.value})")
            return await self.driver.post_policy_accepted(machine, machine.policy(sampling))

    def slot(self, session: bytes) -> Slot:
        """The session's slot (its machine and change signal); raises :class:`RouterError` if unknown."""
        return self._slot(session)

    def session(self, session: bytes) -> RouterSession:
        """The router's view of a session (its verifier, epoch, phase)."""
        return self._slot(session).machine

    def note_target_kv(self, session: bytes, committed: int, uri: str) -> None:
        """D-RTR-17: an MLC object holding the target KV of the first ``committed`` tokens."""
        self._slot(session).machine.target_kv = (committed, uri)

    def note_verifier_failure(self, verifier: str) -> None:
        """A client saw a resource of ``verifier`` fail (transport error, 404, 5xx; P1-RTR-5)."""
        self.registry.note_failure(verifier, self._clock())

    def note_verifier_success(self, verifier: str) -> None:
        """A client got an answer from ``verifier`` that is not a resource failure: its streak ends (D-RTR-6)."""
        self.registry.note_success(verifier)

    # ------------------------------------------------------------------ watchdog

    async def check_once(self) -> None:
        """One watchdog pass over every live session, acting on each concurrently."""
        now = self._clock()
        actions = [action for slot in list(self.sessions.values()) if (action := self._watch(slot, now)) is not None]
        await asyncio.gather(*actions)

    def _watch(self, slot: Slot, now: float) -> Awaitable[None] | None:
        machine = slot.machine
        if machine.ended or slot.lock.locked():
            return None
        if machine.needs_verifier or (machine.verifier is not None and self.registry.failed(machine.verifier, now)):
            return self.driver.failover(slot)
        if machine.needs_drafter:
            return self.driver.assign(slot)
        if machine.drafter is not None and not self.registry.live(machine.drafter, now):
            # §6.9 Drafter failure: "when a drafter's status expires, the router reassigns its sessions".
            return self.driver.replace_drafter(slot, machine.drafter)
        return None

    async def run_watchdog(self) -> None:
        while True:
            try:
                await self.check_once()
            except Exception:  # the watchdog must outlive any one session's trouble
                log.exception("router watchdog pass failed")
            await self._sleep(self.config.watchdog_interval_s)

    def start(self) -> None:
        if self._watchdog is None or self._watchdog.done():
            self._watchdog = asyncio.ensure_future(self.run_watchdog())

    async def settle(self) -> None:
        """Wait until the work that events started (assignments) is done."""
        while self._background:
            await asyncio.gather(*list(self._background), return_exceptions=True)

    async def close(self) -> None:
        tasks: list[asyncio.Future[None]] = list(self._background)
        if self._watchdog is not None:
            tasks.append(self._watchdog)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._watchdog = None

    # ------------------------------------------------------------------ plumbing

    def _slot(self, session: bytes) -> Slot:
        slot = self.sessions.get(session)
        if slot is None:
            raise RouterError(f"no session {_b64(session)} at this router")
        return slot

    def _spawn(self, coroutine: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._background.add(task)
        task.add_done_callback(self._background.discard)


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def instance_id(base_uri: str) -> str:
    """P1-RTR-1: the ``{id}`` of ``PUT instances/{id}/status``."""
    return _b64(base_uri.encode("utf-8"))


__all__ = [
    "NoEligibleInstance",
    "PolicyRefused",
    "RouterApp",
    "RouterConfig",
    "RouterError",
    "RouterParts",
    "instance_id",
]
