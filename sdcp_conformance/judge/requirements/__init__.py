"""The requirement table: every sentence of the draft and the profile that the harness judges, one row each.

One module per party the rows bind; :data:`TABLE` holds them all. The
coverage table (``suites/<role>/COVERAGE.md``) is generated from these rows and
the cases that declare them.
"""

from __future__ import annotations

from sdcp_conformance.judge.requirements import cache, common, drafter, router, verifier
from sdcp_conformance.judge.rows import Table

TABLE = Table((*common.ROWS, *verifier.ROWS, *drafter.ROWS, *router.ROWS, *cache.ROWS))

__all__ = ["TABLE"]
