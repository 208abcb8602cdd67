"""Named faulty variants of each role's reference ("mutants") and the tools that prove the suites kill them.

Each mutant plants ONE realistic bug (:mod:`.base`: what a mutant is and how each role's is built); each role's are
declared in its package (:mod:`.verifier`, :mod:`.drafter`, :mod:`.router`) on one :class:`~.catalogue.Catalogue`
(:mod:`.catalogue`: finding a mutant, the killers files). ``selftest`` runs a role's suite against its clean
reference and every mutant and prints the kill matrix; ``killers.json`` (``killers-<role>.json``) records, per
mutant, the cases that killed it in the last selftest, so CI can re-run only those.
"""

from sdcp_conformance.mutants.base import Mutant
from sdcp_conformance.mutants.catalogue import find_mutant, get_mutant, mutants_for

__all__ = ["Mutant", "find_mutant", "get_mutant", "mutants_for"]
