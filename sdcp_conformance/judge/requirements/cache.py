"""Rows that bind the multi-level cache (MLC). The harness plays the MLC in every certification; no IUT is one."""

from __future__ import annotations

from sdcp_conformance.judge.levels import Level
from sdcp_conformance.judge.rows import Row

ROWS: tuple[Row, ...] = (
    Row("R-6.8-FENCE-RULE", "6.8",
        "A fence record carries only an epoch; after a fence record with epoch E+1, appends carrying an epoch lower "
        "than E+1 MUST fail.",
        Level.MUST, "cache",
        not_judged="binds the MLC, which the harness plays itself (enforcing and non-enforcing, P1-LOG-2); the "
                   "project's own tests check the harness's cache (tests/cache), and the verifier's side of it is "
                   "R-6.8-READ-BACK"),
)

__all__ = ["ROWS"]
