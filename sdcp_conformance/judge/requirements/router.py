"""Rows that bind a router (§6.1, §6.5.2, §6.6, §6.7 as front end, §6.8, §6.9 and P1-RTR-…, P1-FRONT-…).

The router suite judges them; until a row has a case, it says why not.
"""

from __future__ import annotations

from sdcp_conformance.judge.levels import Level
from sdcp_conformance.judge.rows import Row

R = "router"
_PENDING = "the router suite does not judge this row yet"

ROWS: tuple[Row, ...] = (
    Row("R-6.1-NOT-EXPIRED", "6.1", "The router MUST NOT assign sessions to an instance whose status has expired.",
        Level.MUST_NOT, R, not_judged=_PENDING),
)

__all__ = ["ROWS"]
