"""One line of the preflight (``sdcp-conformance check``): a check's name, its outcome and what it saw; shared by the
HTTP/2 lines (:mod:`.check`) and the HTTP/3 ones (:mod:`.check_h3`)."""

from __future__ import annotations

from dataclasses import dataclass

OK, FAIL, SKIP, NON_STRICT = "ok", "FAIL", "--", "warn"
"""NON_STRICT: what certification would report NON-STRICT (a profile-only deviation, P1-JUDGE-1): said, but the IUT
is ready to be certified all the same, as the run would pass."""


@dataclass(frozen=True)
class Check:
    name: str
    outcome: str
    """:data:`OK`, :data:`FAIL`, :data:`NON_STRICT` or :data:`SKIP` (could not be checked)."""
    detail: str

    @property
    def line(self) -> str:
        return f"[{self.outcome:>4}] {self.name}: {self.detail}"


__all__ = ["FAIL", "NON_STRICT", "OK", "SKIP", "Check"]
