"""The verifier's mutants: named faulty variants of the reference verifier, one realistic bug each.

Each module of this package declares, on :data:`CATALOGUE`, the mutants whose bugs it holds: the session machine's
(:mod:`.sessions`), the HTTP layer's (:mod:`.apps`), the ports' (:mod:`.faulty`), the refusals the judge must see
through (:mod:`.judging`) and the rule-2 engines only statistics find (:mod:`.rule2_stats`); importing the package
imports them all. :mod:`.fuzz_targets` holds the message fuzzer's, kept apart. Names are stable forever:
``killers.json`` and the test IDs use them.
"""

import importlib

from sdcp_conformance.mutants.base import VerifierMutant
from sdcp_conformance.mutants.catalogue import Catalogue

CATALOGUE = Catalogue(VerifierMutant.unmutated("unmutated", "the hookable base classes with no bug planted (a "
                                                             "control)"))
UNMUTATED = CATALOGUE.control

for _module in ("sessions", "apps", "faulty", "judging", "rule2_stats"):
    importlib.import_module(f"{__name__}.{_module}")

MUTANTS = CATALOGUE.mutants

__all__ = ["CATALOGUE", "MUTANTS", "UNMUTATED"]
