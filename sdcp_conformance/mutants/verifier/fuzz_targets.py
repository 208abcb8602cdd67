"""Mutants for the message fuzzer: input-validation bugs the verifier suite's catalogue does not plant.

Built like the catalogue's (a :class:`~sdcp_conformance.mutants.base.VerifierMutant`
each) but kept apart in :data:`FUZZ_MUTANTS`, so the suite's selftest and
``killers.json`` are not affected; ``sdcp-conformance fuzz --mutant NAME``
knows both lists.
"""

from __future__ import annotations

from sdcp_conformance.mutants.base import MutantSession, VerifierMutant
from sdcp_conformance.protocol.errors import ProtocolError
from sdcp_conformance.protocol.messages import Proposal
from sdcp_conformance.protocol.problems import ProblemType


class UncheckedTokenRange(MutantSession):
    def _check_limits(self, proposal: Proposal) -> None:
        """Bug: proposed token ids are never checked against V, so scoring indexes past the vocabulary."""
        m = len(proposal.tokens)
        limit = min(self.contract.m_max, self.control.limit())
        if m > limit:
            raise ProtocolError(ProblemType.LIMIT, f"M = {m} exceeds the limit {limit}")


FUZZ_MUTANTS: tuple[VerifierMutant, ...] = (
    VerifierMutant("unchecked-token-range", "input-validation",
                   "a proposed token >= V reaches the model and the request fails with 500", "5.2, 6.3",
                   "Errors use Problem Details [RFC9457]; clients handle unlisted status codes by class [RFC9110].",
                   session=UncheckedTokenRange),
)

FUZZ_MUTANTS_BY_NAME: dict[str, VerifierMutant] = {mutant.name: mutant for mutant in FUZZ_MUTANTS}

__all__ = ["FUZZ_MUTANTS", "FUZZ_MUTANTS_BY_NAME", "UncheckedTokenRange"]
