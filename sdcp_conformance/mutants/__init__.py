"""Named faulty variants of the reference verifier ("mutants") and the tools that prove the suite kills them.

Each mutant plants ONE realistic bug (:mod:`~sdcp_conformance.mutants.catalogue`);
``selftest`` runs the verifier suite against the clean reference and every
mutant and prints the kill matrix; ``killers.json`` records, per mutant, the
cases that killed it in the last selftest, so CI can re-run only those.
"""

from sdcp_conformance.mutants.base import UNMUTATED, Mutant, MutantApp, MutantSession
from sdcp_conformance.mutants.catalogue import MUTANTS, MUTANTS_LIST, get_mutant

__all__ = ["MUTANTS", "MUTANTS_LIST", "UNMUTATED", "Mutant", "MutantApp", "MutantSession", "get_mutant"]
