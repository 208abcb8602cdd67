"""How long a case waits for an instance's status reports (D-JUDGE-STATUS-TTL), and the longest ttl_ms it can time.

Held here, below the harness and the suites, because both say it: the status cases wait this long, and
``pki init --iut ROLE`` tells a vendor which ttl_ms has its intervals timed.
"""

from __future__ import annotations

WAIT_BUDGET_S = 40.0
"""D-JUDGE-STATUS-TTL: the case waits for reports for at most this long, so a long ttl_ms times fewer intervals; one
of over half of it leaves fewer than the two intervals the span check needs, and the case is SKIPPED after judging
the reports in hand, naming the ttl_ms that would let it run (a long ttl_ms is no fault, but it cannot be timed
within a case)."""
STATUS_TIMED_TTL_MS = int(1000 * WAIT_BUDGET_S / 2)
"""The longest ttl_ms whose two intervals fit in the case's wait (what `pki init` tells a vendor)."""

__all__ = ["STATUS_TIMED_TTL_MS", "WAIT_BUDGET_S"]
