"""A fault plan for the harness's cache: armed per path, consumed per request, each firing recorded.

The plan only decides which faults fire for a request; the cache app
applies them. Nothing is ever done silently: the cache never reorders,
drops or alters anything that no armed fault names, and each fault that
fires leaves a :class:`FaultFiring` behind (and a mark in the transcript).
Each armed fault also counts the requests that met it (:meth:`FaultPlan.meet`,
called by whoever serves the plan) and its firings, and says whether the
case that armed it relies on it (``must_fire``): the evidence the harness
checks itself with (:mod:`sdcp_conformance.harness.self_check`).
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.transport.types import TransportFault


class FaultKind(enum.Enum):
    FAIL_GET = "fail-get"
    """A GET (or HEAD) is answered with an error status (5xx by default)."""
    MISSING_GET = "missing-get"
    """A GET (or HEAD) is answered 404 although the object exists."""
    TRANSPORT_GET = "transport-get"
    """A GET (or HEAD) is not answered: the server commits a :class:`TransportFault`."""
    DELAY = "delay"
    """The response is held back for some seconds after the request was handled."""
    HOLD = "hold"
    """The request waits, before it is handled, until the harness opens the fault's :class:`Gate`.

    This is how the harness, playing the MLC, keeps a verification in flight
    for as long as a case needs (a q_rows GET or a commit-log PUT held), so a
    race it wants to test is no longer left to chance."""
    DROP_LEASE = "drop-lease"
    """The object is evicted before its lease ends, just before the next request for it."""
    REJECT_APPEND = "reject-append"
    """A PUT is refused with an error status and not applied."""
    INSERT_BEFORE_PUT = "insert-before-put"
    """Bytes (a fence record, say) land in the object just before the next PUT to it.

    Plain: as if another writer appended first, so a PUT with If-Match gets 412
    (the re-read path of P1-LOG-1). Spliced: the cache is neither fencing nor
    atomic — it stores old content + inserted bytes + the PUT's new records and
    answers success, which only a read-back after the append can reveal (§6.8)."""

    @property
    def terminal(self) -> bool:
        """A terminal fault replaces the answer; the others change the circumstances of one."""
        return self in _TERMINAL


_TERMINAL = frozenset({FaultKind.FAIL_GET, FaultKind.MISSING_GET, FaultKind.TRANSPORT_GET, FaultKind.REJECT_APPEND})
_READS = frozenset({"GET", "HEAD"})
_ALL_METHODS = frozenset({"GET", "HEAD", "PUT", "DELETE"})


HOLD_LIMIT_S = 60.0
"""A held request is released after this long even if the gate was never opened (a case that forgot, or died)."""


@dataclass(eq=False)
class Gate:
    """What a HOLD fault waits on: ``arrived`` is set when a held request comes in, ``opened`` lets it go on.

    Both are asyncio events of the loop that serves the cache (the harness's own loop).
    """

    arrived: asyncio.Event = field(default_factory=asyncio.Event)
    opened: asyncio.Event = field(default_factory=asyncio.Event)
    held: int = 0
    bodies: list[bytes] = field(default_factory=list)
    """The bodies of the requests held, in arrival order (what a held append would have written)."""

    def open(self) -> None:
        self.opened.set()

    async def wait_arrival(self, timeout_s: float) -> bool:
        """Whether a held request arrived within ``timeout_s``."""
        try:
            await asyncio.wait_for(self.arrived.wait(), timeout_s)
        except TimeoutError:
            return False
        return True

    async def hold(self, body: bytes = b"") -> None:
        self.held += 1
        self.bodies.append(body)
        self.arrived.set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.opened.wait(), HOLD_LIMIT_S)


@dataclass
class ArmedFault:
    """A fault waiting for ``remaining`` more matching requests."""

    fault_id: int
    kind: FaultKind
    path: str | None
    """The object path it applies to; ``None`` matches every path."""
    methods: frozenset[str]
    remaining: int
    status: int | None = None
    seconds: float = 0.0
    transport: TransportFault | None = None
    data: bytes = b""
    splice: bool = False
    gate: Gate | None = None
    must_fire: bool = True
    """The case that armed it relies on it firing (False: armed in case the IUT sends such a request)."""
    met: int = 0
    """Requests that met it while it was armed (:meth:`FaultPlan.meet`), whether it fired on them or not."""
    fired: int = 0
    """Requests it fired on."""

    def matches(self, method: str, path: str) -> bool:
        return self.remaining > 0 and method in self.methods and (self.path is None or self.path == path)

    @property
    def label(self) -> str:
        """The fault in words, for the evidence: ``hold of PUT /cache/…/log (held until the harness released it)``."""
        return f"{self.kind.value} of {'/'.join(sorted(self.methods))} {self.path or 'any path'} ({self.describe()})"

    def describe(self) -> str:
        if self.kind is FaultKind.DELAY:
            return f"delay {self.seconds} s"
        if self.kind is FaultKind.HOLD:
            return "held until the harness released it"
        if self.transport is not None:
            return f"transport fault {self.transport.value}"
        if self.status is not None:
            return f"status {self.status}"
        if self.kind is FaultKind.INSERT_BEFORE_PUT:
            return f"{'splice' if self.splice else 'insert'} {len(self.data)} bytes before the PUT"
        return str(self.kind.value)


@dataclass(frozen=True)
class FaultFiring:
    """One fault applied to one request."""

    sequence: int
    """Firing order across the plan, from 1."""
    fault_id: int
    kind: FaultKind
    method: str
    path: str
    detail: str


class FaultPlan:
    """Faults to inject; thread-safe (tests arm faults while a server thread serves)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._armed: list[ArmedFault] = []
        self._fired: list[FaultFiring] = []
        self._ids = itertools.count(1)
        self._gates: list[Gate] = []
        self._gate_paths: dict[Gate, str | None] = {}
        self.on_arm: Callable[[ArmedFault], object] | None = None
        """Called with every fault armed (the harness registers it with the case that armed it)."""

    # ------------------------------------------------------------------ arming

    def fail_gets(self, path: str | None, count: int = 1, *, status: int = 503, must_fire: bool = True) -> int:
        """Answer the next ``count`` GETs of ``path`` with ``status`` (an error status)."""
        if not 400 <= status <= 599:
            raise InvalidArgument(f"an injected failure needs an error status, not {status}")
        return self._arm(FaultKind.FAIL_GET, path, _READS, count, status=status, must_fire=must_fire)

    def missing_gets(self, path: str | None, count: int = 1, *, must_fire: bool = True) -> int:
        """Answer the next ``count`` GETs of ``path`` with 404, as if the object did not exist."""
        return self._arm(FaultKind.MISSING_GET, path, _READS, count, status=404, must_fire=must_fire)

    def transport_gets(
        self,
        path: str | None,
        count: int = 1,
        *,
        fault: TransportFault = TransportFault.RESET_STREAM,
        must_fire: bool = True,
    ) -> int:
        """Leave the next ``count`` GETs of ``path`` unanswered, committing ``fault`` instead."""
        return self._arm(FaultKind.TRANSPORT_GET, path, _READS, count, transport=fault, must_fire=must_fire)

    def delay(
        self,
        path: str | None,
        seconds: float,
        count: int = 1,
        *,
        methods: frozenset[str] = _ALL_METHODS,
        must_fire: bool = True,
    ) -> int:
        """Hold back the next ``count`` responses for ``path`` by ``seconds`` each."""
        if seconds < 0:
            raise InvalidArgument("a delay cannot be negative")
        return self._arm(FaultKind.DELAY, path, frozenset(methods), count, seconds=seconds, must_fire=must_fire)

    def hold(self, path: str | None, count: int = 1, *, methods: frozenset[str] = _ALL_METHODS,
             must_fire: bool = True) -> Gate:
        """Hold the next ``count`` requests for ``path`` before handling them, until the returned gate opens.

        Must be called on the loop that serves the cache (it creates asyncio events).
        """
        gate = Gate()
        fault_id = self._arm(FaultKind.HOLD, path, frozenset(methods), count, must_fire=must_fire)
        with self._lock:
            self._gates.append(gate)
            self._gate_paths[gate] = path
            for fault in self._armed:
                if fault.fault_id == fault_id:
                    fault.gate = gate
        return gate

    def drop_lease(self, path: str, *, must_fire: bool = True) -> int:
        """Evict the object at ``path`` before the next request for it, whatever its lease."""
        return self._arm(FaultKind.DROP_LEASE, path, _ALL_METHODS, 1, must_fire=must_fire)

    def reject_appends(self, path: str | None, count: int = 1, *, status: int = 503, must_fire: bool = True) -> int:
        """Refuse the next ``count`` PUTs to ``path`` with ``status``, storing nothing."""
        if not 400 <= status <= 599:
            raise InvalidArgument(f"an injected rejection needs an error status, not {status}")
        return self._arm(FaultKind.REJECT_APPEND, path, frozenset({"PUT"}), count, status=status,
                         must_fire=must_fire)

    def insert_before_put(self, path: str, data: bytes, *, splice: bool = False, must_fire: bool = True) -> int:
        """Put ``data`` into the object at ``path`` just before the next PUT to it (see the kind)."""
        if not data:
            raise InvalidArgument("nothing to insert")
        fault_id = self._arm(FaultKind.INSERT_BEFORE_PUT, path, frozenset({"PUT"}), 1, must_fire=must_fire)
        with self._lock:
            for fault in self._armed:
                if fault.fault_id == fault_id:
                    fault.data, fault.splice = data, splice
        return fault_id

    def _arm(
        self,
        kind: FaultKind,
        path: str | None,
        methods: frozenset[str],
        count: int,
        *,
        status: int | None = None,
        seconds: float = 0.0,
        transport: TransportFault | None = None,
        must_fire: bool = True,
    ) -> int:
        if count < 1:
            raise InvalidArgument("a fault must fire at least once")
        with self._lock:
            fault_id = next(self._ids)
            fault = ArmedFault(fault_id, kind, path, methods, count, status, seconds, transport, must_fire=must_fire)
            self._armed.append(fault)
        if self.on_arm is not None:
            self.on_arm(fault)
        return fault.fault_id

    # ------------------------------------------------------------------ firing

    def take(self, method: str, path: str) -> list[ArmedFault]:
        """Fire the faults that apply to this request and record each firing.

        Faults fire in the order they were armed. Every matching non-terminal
        fault fires; of the terminal ones only the first, the others stay armed
        for later requests.
        """
        with self._lock:
            firing: list[ArmedFault] = []
            terminal_taken = False
            for fault in self._armed:
                if not fault.matches(method, path) or (fault.kind.terminal and terminal_taken):
                    continue
                terminal_taken = terminal_taken or fault.kind.terminal
                fault.remaining -= 1
                fault.fired += 1
                firing.append(fault)
                self._record(fault, method, path)
            self._armed = [fault for fault in self._armed if fault.remaining > 0]
            return firing

    def meet(self, method: str, path: str) -> None:
        """A request for ``path`` arrived: every armed fault it matches counts it (before :meth:`take` decides
        which of them fire), the evidence that the fault had its chance."""
        with self._lock:
            for fault in self._armed:
                if fault.matches(method, path):
                    fault.met += 1

    def _record(self, fault: ArmedFault, method: str, path: str) -> None:
        sequence = len(self._fired) + 1
        firing = FaultFiring(sequence, fault.fault_id, fault.kind, method, path, fault.describe())
        self._fired.append(firing)

    # ------------------------------------------------------------------ inspection

    @property
    def fired(self) -> list[FaultFiring]:
        """Every firing so far, in order."""
        with self._lock:
            return list(self._fired)

    @property
    def armed(self) -> list[ArmedFault]:
        """Faults that have not fired as often as asked."""
        with self._lock:
            return list(self._armed)

    def disarm_under(self, prefix: str) -> None:
        """Remove the armed faults on paths under ``prefix`` (one case's objects) and let their held requests go."""
        with self._lock:
            mine = [fault for fault in self._armed if fault.path is not None and fault.path.startswith(prefix)]
            self._armed = [fault for fault in self._armed if fault not in mine]
            gates = [gate for gate, path in self._gate_paths.items() if path is not None and path.startswith(prefix)]
            for gate in gates:
                del self._gate_paths[gate]
                gate.open()

    def disarm(self, fault_id: int | None = None) -> None:
        """Remove one armed fault, or all of them (and then let every held request go on)."""
        with self._lock:
            self._armed = [fault for fault in self._armed if fault_id is not None and fault.fault_id != fault_id]
            if fault_id is None:
                gates, self._gates = self._gates, []
                self._gate_paths.clear()
                for gate in gates:
                    gate.open()


__all__ = ["HOLD_LIMIT_S", "ArmedFault", "FaultFiring", "FaultKind", "FaultPlan", "Gate"]
