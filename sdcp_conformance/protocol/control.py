"""Speculation limit and escalation of draft §6.5: the counters c, g, j and m_cap of one session.

The machine is fed one verified round at a time (a drafter's round, never a
self-decoded one: P1-CTL-2 "Self-decoded rounds do not change c, g or j", so
callers simply do not feed those) and answers the verdict's ``action``,
``m_cap`` and ``low``.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.protocol.errors import ProtocolError
from sdcp_conformance.protocol.problems import ProblemType
from sdcp_conformance.protocol.rules import is_low_round

M_MAX_LIMIT = 64
"""§4.1: ``m_max: uint .le 64``."""


class Action(enum.IntEnum):
    """The action codes of §4.1; also the session-state codes of P1-STATE-1."""

    CONTINUE = 0
    REDUCE = 1
    SWITCH = 2
    SELF_DECODE = 3
    FINISH = 4
    FAIL = 5

    @classmethod
    def parse(cls, value: object) -> Action:
        """§5.2: "A receiver that encounters an unknown action value MUST treat it as "fail"."""
        if not isinstance(value, int) or isinstance(value, bool):
            return cls.FAIL
        try:
            return cls(value)
        except ValueError:
            return cls.FAIL


class Phase(enum.IntEnum):
    """P1-STATE-1: the values of ``session-state.state`` (the action codes a session can be in), declared once for
    the reference verifier and for every party the harness plays."""

    ACTIVE = Action.CONTINUE
    SELF_DECODING = Action.SELF_DECODE
    FINISHED = Action.FINISH
    FAILED = Action.FAIL


LADDER_ACTIONS = frozenset({Action.REDUCE, Action.SWITCH, Action.SELF_DECODE, Action.FAIL})
"""§6.5.2: "The fallback list MUST contain only the actions reduce, switch, self_decode,
and fail"."""


@dataclass(frozen=True)
class EscalationPolicy:
    """The contract members that drive §6.5 (fallback, R = low_rounds, low_ratio, m_max, ...)."""

    fallback: tuple[Action, ...]
    low_rounds: int
    low_ratio: int = 0
    m_max: int = M_MAX_LIMIT
    self_load: int | None = None
    self_max: int | None = None

    def __post_init__(self) -> None:
        if not self.fallback or not set(self.fallback) <= LADDER_ACTIONS:
            raise InvalidArgument("fallback must be a non-empty list of ladder actions")
        if self.low_rounds < 1:
            raise InvalidArgument("low_rounds must be at least 1")
        if not 0 <= self.low_ratio <= 100:
            raise InvalidArgument("low_ratio must lie in 0..100")
        # P1-CTL-4: "m_max 0 is refused": no M could satisfy 1 <= M <= m_max.
        if not 1 <= self.m_max <= M_MAX_LIMIT:
            raise InvalidArgument("m_max must lie in 1..64")
        if self.self_load is not None and not 0 <= self.self_load <= 100:
            raise InvalidArgument("self_load must lie in 0..100")

    @classmethod
    def from_contract(cls, contract: Mapping[str, Any]) -> EscalationPolicy:
        """The policy of a decoded contract; a violation is sdcp-bad-contract."""
        try:
            return cls(
                fallback=tuple(_ladder_entry(value) for value in contract["fallback"]),
                low_rounds=contract["low_rounds"],
                low_ratio=contract.get("low_ratio", 0),
                m_max=contract["m_max"],
                self_load=contract.get("self_load"),
                self_max=contract.get("self_max"),
            )
        except (InvalidArgument, KeyError, TypeError) as exc:
            raise ProtocolError(ProblemType.BAD_CONTRACT, f"escalation policy: {exc}") from exc

    def self_decode_permitted(self, load: int) -> bool:
        """§6.5.2: self_decode "is permitted only if the contract contains self_load
        and the verifier's current load does not exceed it"."""
        return self.self_load is not None and load <= self.self_load

    def self_decode_continues(self, decoded: int, load: int) -> bool:
        """§6.5.2: self-decoding "stops after self_max tokens (if present) or when
        its load exceeds self_load"; ``decoded`` counts tokens of this period so far."""
        within_budget = self.self_max is None or decoded < self.self_max
        return within_budget and self.self_decode_permitted(load)


def _ladder_entry(value: object) -> Action:
    # Unlike a verdict's action (§5.2), an unknown fallback entry makes the
    # contract invalid: the CDDL allows only the ladder values there.
    ladder_values = {int(action) for action in LADDER_ACTIONS}
    if not isinstance(value, int) or isinstance(value, bool) or value not in ladder_values:
        raise InvalidArgument(f"{value!r} is not a ladder action")
    return Action.parse(value)


@dataclass(frozen=True)
class RoundControl:
    """The control members of a verdict: ``action``, ``m_cap`` and ``low`` (P1-CTL-5)."""

    action: Action
    m_cap: int
    low: int


class SpeculationControl:
    """c, g, j and m_cap of one session (§6.5.1, §6.5.2, P1-CTL-1..5).

    D-CTL-1: c and g, like j, persist across a change of drafter; §6.5.2 keeps
    all three "per session" and names no other reset than those below.
    """

    def __init__(self, policy: EscalationPolicy) -> None:
        self.policy = policy
        self.c = 0  # consecutive low rounds
        self.g = 0  # consecutive rounds that are not low
        self.j = 0  # position in the fallback list
        self.m_cap: int | None = None
        self.m_ceiling: int | None = None
        self.closed = False

    def on_assignment(self, m_init: int) -> None:
        """P1-CTL-1: before the first verdict the limit is min(m_max, m_init);
        P1-CTL-4: m_cap is restored up to that same value."""
        if m_init < 1:
            raise InvalidArgument("m_init must be at least 1 (P1-DRF-2)")
        self.m_cap = self.m_ceiling = min(self.policy.m_max, m_init)

    def limit(self) -> int:
        """The largest M the drafter may propose now (P1-CTL-1)."""
        if self.m_cap is None:
            raise InvalidArgument("no assignment yet")
        return self.m_cap

    def on_round(self, accepted: int, proposed: int, finished: bool, load: int) -> RoundControl:
        """Update the counters with one verified round and decide its action."""
        if self.closed:
            raise InvalidArgument("the session has already finished or failed")
        if not 0 <= load <= 100:
            raise InvalidArgument("load must lie in 0..100")
        low = is_low_round(accepted, proposed, self.policy.low_ratio)
        self._count(low)
        action = Action.CONTINUE
        if self.c >= self.policy.low_rounds:
            action = self._escalate(load)
        self._adjust_m_cap(action, low)
        # P1-CTL-5: "a round that both finishes the session and would escalate
        # reports finish"; D-CTL-3: its counters and m_cap change all the same.
        if finished:
            action = Action.FINISH
        self.closed = action in (Action.FINISH, Action.FAIL)
        return RoundControl(action, self.limit(), self.c)

    def _count(self, low: bool) -> None:
        # §6.5.2: "After a low round, c is incremented and g reset; after a round
        # that is not low, c is reset and g incremented, and when g reaches R,
        # where R is low_rounds, j is reset to zero."
        if low:
            self.c, self.g = self.c + 1, 0
            return
        self.c, self.g = 0, self.g + 1
        if self.g >= self.policy.low_rounds:
            self.j = 0

    def _escalate(self, load: int) -> Action:
        # §6.5.2: "When c reaches R, the verifier applies entry j of the fallback
        # list (skipping entries that are not permitted ..., and advancing j past
        # every entry it applies or skips), then resets c to zero. If no entry
        # remains, it applies "fail"."
        self.c = 0
        fallback = self.policy.fallback
        while self.j < len(fallback):
            entry = fallback[self.j]
            self.j += 1
            if entry is not Action.SELF_DECODE or self.policy.self_decode_permitted(load):
                return entry
        return Action.FAIL

    def _adjust_m_cap(self, action: Action, low: bool) -> None:
        cap = self.limit()
        ceiling = cap if self.m_ceiling is None else self.m_ceiling
        if action is Action.REDUCE:
            # §6.5.2 reduce: "The verifier sets m_cap to max(1, floor(m_cap / 2))".
            self.m_cap = max(1, cap // 2)
        elif not low:
            # §6.5.1: "It SHOULD restore m_cap gradually (for example by one per
            # round) when rounds are no longer low"; P1-CTL-4: up to
            # min(m_max, m_init). D-CTL-2: the reference never lowers m_cap
            # for its own load, so restoring ignores load.
            self.m_cap = min(ceiling, cap + 1)


__all__ = [
    "LADDER_ACTIONS",
    "M_MAX_LIMIT",
    "Action",
    "EscalationPolicy",
    "Phase",
    "RoundControl",
    "SpeculationControl",
]
