"""Status reports of the instances the harness plays for a router (§6.1, §5.1 Table 1, P1-RTR-1/2).

§6.1: "Each instance reports status at intervals shorter than its ttl_ms."
Every played verifier and drafter has a :class:`StatusReporter` that sends
``PUT instances/{id}/status`` to the router under test with its own
certificate, every :data:`HEARTBEAT_INTERVAL_S` with :data:`HEARTBEAT_TTL_MS`
(heartbeats stay out of the case transcripts). A case makes an instance's
status expire by silencing it after one last report with a short TTL, and
knows from its own clock when the router must consider it expired: the router
receives a report before it answers it, so its expiry is no later than the
harness's answer time plus the TTL. That expiry is an injected fault
(:meth:`StatusReporter.expiry_fault`, :mod:`~..self_check`): it took effect
when the harness's clock passed it with no report sent since the silencing.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from sdcp_conformance.harness.iut import Answer
from sdcp_conformance.harness.roles.router_history import History, StatusSent
from sdcp_conformance.harness.self_check import InjectedFault

HEARTBEAT_TTL_MS = 4000
HEARTBEAT_INTERVAL_S = 0.5
"""D-JUDGE-R2: heartbeats every 0.5 s with a 4 s TTL, so a busy machine that stalls the harness's loop for
a few seconds still leaves every healthy instance eligible."""

Send = Callable[[str, str, str, dict[str, Any]], Awaitable[Answer]]
"""``send(identity, method, path, body)`` towards the router under test."""


def instance_id(uri: str) -> str:
    """P1-RTR-1: "``{id}`` is the base64url (no padding) of the instance's base URI"."""
    return base64.urlsafe_b64encode(uri.encode()).rstrip(b"=").decode()


def instance_path(uri: str) -> str:
    """Where the instance at ``uri`` reports its status (P1-RTR-1)."""
    return f"instances/{instance_id(uri)}/status"


@dataclass
class LastReport:
    completed_at: float
    ttl_ms: int

    @property
    def expires_at(self) -> float:
        return self.completed_at + self.ttl_ms / 1000


@dataclass(eq=False)
class _Expiry:
    """A silencing whose expiry is watched: the reports sent until then, when the status must have expired."""

    fault: InjectedFault
    sent: int
    due: float
    closed: bool = False


class StatusReporter:
    """One played instance's status reports: heartbeats, one-off reports, silencing and revival."""

    def __init__(self, name: str, uri: str, role: int, history: History, *, quiet: Send, recorded: Send) -> None:
        self.name = name
        self.uri = uri
        self.role = role
        self.history = history
        self._quiet = quiet
        self._recorded = recorded
        self.load = 0
        self.queue = 0
        self.accept_milli: int | None = None
        self.silenced = False
        self.last: LastReport | None = None
        self.sent = 0
        """Reports sent so far (answered or not): none while it is silenced but the final one."""
        self._expiries: list[_Expiry] = []
        self._lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None

    # ------------------------------------------------------------------ reports

    def body(self, ttl_ms: int, **changes: Any) -> dict[str, Any]:
        body: dict[str, Any] = {"instance": self.uri, "role": self.role, "load": self.load, "queue": self.queue,
                                "ttl_ms": ttl_ms}
        if self.accept_milli is not None:
            body["accept_milli"] = self.accept_milli
        body.update(changes)
        return {key: value for key, value in body.items() if value is not None}

    async def report(self, ttl_ms: int = HEARTBEAT_TTL_MS, *, recorded: bool = True, identity: str | None = None,
                     path: str | None = None, **changes: Any) -> Answer:
        """Send one report (as this instance unless ``identity`` names another harness identity)."""
        async with self._lock:
            return await self._send(ttl_ms, recorded=recorded, identity=identity, path=path, **changes)

    async def _send(self, ttl_ms: int, *, recorded: bool, identity: str | None = None, path: str | None = None,
                    **changes: Any) -> Answer:
        send = self._recorded if recorded else self._quiet
        who = identity or self.name
        self.sent += 1
        answer = await send(who, "PUT", path or instance_path(self.uri), self.body(ttl_ms, **changes))
        now = asyncio.get_running_loop().time()
        self.history.add(StatusSent(at=now, instance=self.name, ttl_ms=ttl_ms, status=answer.status, identity=who))
        if answer.ok and who == self.name and path is None and "instance" not in changes:
            self.last = LastReport(now, ttl_ms)
        return answer

    # ------------------------------------------------------------------ heartbeats

    async def start(self) -> Answer:
        """The first report, then heartbeats until :meth:`stop`."""
        answer = await self.report(recorded=False)
        if self._task is None:
            self._task = asyncio.ensure_future(self._beat())
        return answer

    async def _beat(self) -> None:
        while True:
            await asyncio.sleep(HEARTBEAT_INTERVAL_S)  # pacing, not synchronisation: §6.1's reporting interval
            async with self._lock:
                if not self.silenced:
                    with contextlib.suppress(Exception):
                        await self._send(HEARTBEAT_TTL_MS, recorded=False)

    async def silence(self, final_ttl_ms: int | None = None) -> float:
        """Stop the heartbeats (after one last report with ``final_ttl_ms``, if given); returns the expiry time.

        The lock waits out a heartbeat in flight, so nothing the router receives after the last report
        renews the status.
        """
        async with self._lock:
            self.silenced = True
            if final_ttl_ms is not None:
                await self._send(final_ttl_ms, recorded=True)
        return self.expires_at

    async def revive(self) -> Answer:
        """Heartbeats again, starting with a report now (a watched expiry not due yet never came)."""
        async with self._lock:
            for expiry in self._expiries:
                self._observe(expiry)
                expiry.closed = True
            self._expiries.clear()
            self.silenced = False
            return await self._send(HEARTBEAT_TTL_MS, recorded=False)

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    # ------------------------------------------------------------------ expiry, by the harness's clock

    @property
    def expires_at(self) -> float:
        """When the router must consider this instance expired at the latest (``-inf``: never reported)."""
        return self.last.expires_at if self.last is not None else float("-inf")

    def expired_for(self, now: float) -> float | None:
        """How long the latest status has been expired at ``now`` (``None`` while it is not)."""
        overdue = now - self.expires_at
        return overdue if overdue > 0 else None

    async def wait_expired(self, margin_s: float = 0.05) -> None:
        """Let the clock pass the expiry (plus a margin): waiting for time is what an expiry test is about."""
        loop = asyncio.get_running_loop()
        delay = self.expires_at + margin_s - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
        for expiry in self._expiries:
            self._observe(expiry)

    # ------------------------------------------------------------------ the expiry as an injected fault

    def expiry_fault(self, label: str, *, must_fire: bool = True) -> InjectedFault:
        """The evidence of the silencing just done (:meth:`silence`): §6.1 "Each instance reports status at
        intervals shorter than its ttl_ms", so an instance that reports no more has expired once its last TTL ran
        out. It met its time when the harness's clock passed that expiry (or the case ended first, still relying on
        it), and fired if no report was sent from the silencing until then (a heartbeat that went on would have
        renewed the status). Revived before it was due, it never met its time."""
        fault = InjectedFault(label, must_fire)
        expiry = _Expiry(fault, self.sent, self.expires_at)
        fault.probe = lambda: self._observe(expiry, ending=True)
        self._expiries.append(expiry)
        return fault

    def _observe(self, expiry: _Expiry, *, ending: bool = False) -> None:
        if expiry.closed or (not ending and asyncio.get_running_loop().time() < expiry.due):
            return
        expiry.closed = True
        expiry.fault.met += 1
        if self.silenced and self.sent == expiry.sent:
            expiry.fault.fired += 1


__all__ = ["HEARTBEAT_INTERVAL_S", "HEARTBEAT_TTL_MS", "LastReport", "StatusReporter", "instance_id", "instance_path"]
