"""Rows that bind a drafter (§5.2, §6.2, §6.3, §6.4, §6.5.2, §6.9 and P1-DRF-…).

The drafter suite judges them; until a row has a case, it says why not.
"""

from __future__ import annotations

from sdcp_conformance.judge.levels import Level
from sdcp_conformance.judge.rows import Row

D = "drafter"
_PENDING = "the drafter suite does not judge this row yet"

ROWS: tuple[Row, ...] = (
    Row("R-5.2-EXACT-ROW", "5.2", "The drafter MUST sample each proposed token from exactly the row it publishes.",
        Level.MUST, D, not_judged=_PENDING),
    Row("R-6.2-ONE-OUTSTANDING", "6.2", "A drafter MUST NOT have more than one outstanding proposal per session.",
        Level.MUST_NOT, D, not_judged=_PENDING),
    Row("R-6.2-CHOICE-OF-M", "6.2",
        "The following rule is RECOMMENDED. ... the drafter chooses the M within its limits that maximizes that "
        "quantity divided by (M * t_d + t_v).",
        Level.RECOMMENDED, D, not_judged=_PENDING),
    Row("R-6.3-DISCARD", "6.3",
        "After the verdict, the drafter MUST discard its draft state for proposed positions beyond the accepted "
        "ones and MAY release its leases.",
        Level.MUST, D, not_judged=_PENDING),
    Row("R-6.4-CARRY-Q-ROWS", "6.4", "The proposal MUST carry q_rows", Level.MUST, D, not_judged=_PENDING),
    Row("R-6.4-NOT-HMAC", "6.4", "Drafters MUST NOT use this derivation for their own sampling.",
        Level.MUST_NOT, D, not_judged=_PENDING),
    Row("R-6.5.2-STOP-ON-SWITCH", "6.5.2", "the current drafter MUST stop proposing for the session.",
        Level.MUST, D, not_judged=_PENDING),
)

__all__ = ["ROWS"]
