"""The router's instance registry, sans I/O: status reports, expiry, choices and failure streaks.

Time is passed in (``now``, seconds on the router's clock); nothing here reads
a clock. §6.1: "The router MUST NOT assign sessions to an instance whose
status has expired. Each instance reports status at intervals shorter than
its ttl_ms." P1-RTR-2: "Only instances whose latest status is unexpired are
eligible — for opening sessions at verifiers as well as for assigning
drafters."
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.protocol.errors import ProtocolError
from sdcp_conformance.protocol.messages import ROLE_DRAFTER, ROLE_VERIFIER, Contract, Status
from sdcp_conformance.protocol.problems import ProblemType
from sdcp_conformance.reference.router.decisions import (
    NEUTRAL_ACCEPT_MILLI,
    QUEUE_WEIGHT,
    UNKNOWN_INSTANCE_PROBLEM,
)

FAILURES_IN_A_ROW = 3
FAILURE_SPAN_S = 0.5
"""P1-RTR-5: "A verifier has failed when its status expired or its resources
failed (transport error, 404, 5xx) three times in a row over at least 0.5 s"."""


@dataclass(frozen=True)
class Report:
    """The latest status of one instance and when the router received it."""

    status: Status
    received_at: float

    @property
    def expires_at(self) -> float:
        return self.received_at + self.status.ttl_ms / 1000

    def live(self, now: float) -> bool:
        # D-RTR-3: expired at the instant of expiry; ttl_ms 0 is never live.
        return now < self.expires_at


@dataclass
class _Streak:
    """Resource failures in a row (P1-RTR-5), reset by any other answer (D-RTR-6)."""

    count: int = 0
    first: float = 0.0
    last: float = 0.0
    declared_at: float | None = None


@dataclass
class InstanceRegistry:
    """Configured drafters (with their model digests) and verifiers, and what they reported."""

    drafter_models: Mapping[str, bytes]
    """Drafter base URI → SHA-256 of its model (P1-RTR-2: "by configuration")."""
    verifiers: Collection[str]
    failures_in_a_row: int = FAILURES_IN_A_ROW
    failure_span_s: float = FAILURE_SPAN_S
    _reports: dict[str, Report] = field(default_factory=dict)
    _streaks: dict[str, _Streak] = field(default_factory=dict)
    _assigned_since_report: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        both = set(self.drafter_models) & set(self.verifiers)
        if both:
            raise InvalidArgument(f"instances configured as drafter and verifier: {sorted(both)}")

    # ------------------------------------------------------------------ reports

    def accept(self, status: Status, peer: str | None, now: float) -> None:
        """PUT instances/{id}/status; raises 403 sdcp-not-assigned for a sender it must refuse."""
        # P1-RTR-2: "It accepts a status report only from the instance it names".
        if peer != status.instance:
            raise ProtocolError(ProblemType.NOT_ASSIGNED, f"{peer!r} may not report for {status.instance!r}")
        if self._configured_role(status.instance) != status.role:
            # D-RTR-4: unconfigured instance or a role other than the configured one.
            raise ProtocolError(UNKNOWN_INSTANCE_PROBLEM, f"{status.instance!r} is not a configured role-{status.role}")
        self._reports[status.instance] = Report(status, now)
        self._assigned_since_report.pop(status.instance, None)
        streak = self._streaks.get(status.instance)
        if streak is not None and streak.declared_at is not None and now > streak.declared_at:
            del self._streaks[status.instance]  # D-RTR-6: a report after the declaration clears it

    def _configured_role(self, instance: str) -> int | None:
        if instance in self.drafter_models:
            return ROLE_DRAFTER
        if instance in self.verifiers:
            return ROLE_VERIFIER
        return None

    def report(self, instance: str) -> Report | None:
        return self._reports.get(instance)

    def live(self, instance: str, now: float) -> bool:
        report = self._reports.get(instance)
        return report is not None and report.live(now)

    # ------------------------------------------------------------------ drafters

    def permitted(self, drafter: str, contract: Contract) -> bool:
        """§4.1: "An absent drafters member permits any draft model that the router's local policy allows"."""
        model = self.drafter_models.get(drafter)
        if model is None:
            return False
        return contract.drafters is None or model in contract.drafters

    def drafter_cost(self, drafter: str) -> float:
        """D-RTR-1 (and D-RTR-2): lower is preferred."""
        report = self._reports[drafter]
        status = report.status
        queue = status.queue + self._assigned_since_report.get(drafter, 0)
        accept = status.accept_milli if status.accept_milli is not None else NEUTRAL_ACCEPT_MILLI
        return status.load + QUEUE_WEIGHT * queue + (1000 - accept) / 10

    def ranked_drafters(self, contract: Contract, now: float, exclude: Iterable[str] = ()) -> list[str]:
        """Eligible drafters with a permitted model, best first."""
        excluded = set(exclude)
        eligible = [
            uri
            for uri in self.drafter_models
            if uri not in excluded and self.live(uri, now) and self.permitted(uri, contract)
        ]
        return sorted(eligible, key=lambda uri: (self.drafter_cost(uri), uri))

    def choose_drafter(
        self, contract: Contract, now: float, *, exclude: Iterable[str] = (), same_if_alone: str | None = None
    ) -> str | None:
        """The best eligible drafter not in ``exclude``; ``None`` when there is none.

        P1-RTR-5: "switch with no other eligible drafter reassigns the same
        one": ``same_if_alone`` names that one, used only if still eligible.
        """
        ranked = self.ranked_drafters(contract, now, exclude)
        if ranked:
            return ranked[0]
        if same_if_alone is not None and same_if_alone in self.ranked_drafters(contract, now):
            return same_if_alone
        return None

    def note_assigned(self, drafter: str) -> None:
        self._assigned_since_report[drafter] = self._assigned_since_report.get(drafter, 0) + 1

    # ------------------------------------------------------------------ verifiers

    def ranked_verifiers(self, now: float, exclude: Iterable[str] = ()) -> list[str]:
        """D-RTR-5: eligible verifiers (unexpired, not failed) by load, queue, URI."""
        excluded = set(exclude)
        eligible = [
            uri for uri in self.verifiers if uri not in excluded and self.live(uri, now) and not self.failed(uri, now)
        ]

        def key(uri: str) -> tuple[int, int, str]:
            status = self._reports[uri].status
            return status.load, status.queue, uri

        return sorted(eligible, key=key)

    def note_failure(self, verifier: str, now: float) -> None:
        """A resource of ``verifier`` failed: transport error, timeout, 404 or 5xx (P1-RTR-5)."""
        streak = self._streaks.setdefault(verifier, _Streak())
        if streak.count == 0:
            streak.first = now
        streak.count += 1
        streak.last = now
        if streak.declared_at is None and self._streak_is_failure(streak):
            streak.declared_at = now

    def note_success(self, verifier: str) -> None:
        """Any answer that is not a resource failure ends the streak (D-RTR-6), unless it was declared a failure:
        that stands until a status report received after it (:meth:`accept`)."""
        streak = self._streaks.get(verifier)
        if streak is not None and streak.declared_at is None:
            del self._streaks[verifier]

    def _streak_is_failure(self, streak: _Streak) -> bool:
        return streak.count >= self.failures_in_a_row and streak.last - streak.first >= self.failure_span_s

    def failed(self, verifier: str, now: float) -> bool:
        """P1-RTR-5: status expired, or resources failed three times in a row over at least 0.5 s."""
        if not self.live(verifier, now):
            return True
        streak = self._streaks.get(verifier)
        return streak is not None and streak.declared_at is not None


__all__ = ["FAILURES_IN_A_ROW", "FAILURE_SPAN_S", "InstanceRegistry", "Report"]
