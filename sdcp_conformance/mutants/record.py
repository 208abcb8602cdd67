"""What every mutant is, whatever the role: one planted bug in the reference, named forever, with the sentence it
breaks and the verdicts that count as finding it. Each role's mutant (:class:`~.base.Mutant`,
:class:`~.drafter_base.DrafterMutant`, :class:`~.router_base.RouterMutant`) adds only what it plants the bug in and
how it builds the embedded IUT (its ``factory``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from sdcp_conformance.judge import Verdict

STRICT_KILLS = frozenset({Verdict.FAILED})
PROFILE_KILLS = frozenset({Verdict.FAILED, Verdict.NON_STRICT})


@dataclass(frozen=True)
class MutantRecord:
    """One named faulty variant of a role's reference."""

    role: ClassVar[str]
    name: str
    """Stable forever (the killers file and test IDs use it); unique across roles."""
    area: str
    description: str
    section: str
    violates: str
    """The sentence of the draft (or profile item) the bug breaks, verbatim."""

    profile_only: bool = False
    """The bug breaks only a profile choice, so the suite can at most say NON-STRICT about it."""

    @property
    def kill_verdicts(self) -> frozenset[Verdict]:
        """Verdicts that count as detecting this mutant (NON-STRICT only for a profile-only bug)."""
        return PROFILE_KILLS if self.profile_only else STRICT_KILLS

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "area": self.area, "description": self.description, "section": self.section,
                "violates": self.violates, "profile_only": self.profile_only, "role": self.role}


__all__ = ["PROFILE_KILLS", "STRICT_KILLS", "MutantRecord"]
