"""The drafter's mutants: named faulty variants of the reference drafter, one realistic bug each.

Each module of this package declares, on :data:`CATALOGUE`, the mutants whose bugs it holds: the session machine's
and the draft model's (:mod:`.sessions`), the loop's and the HTTP layer's (:mod:`.apps`); importing the package
imports them all. Names are stable forever and unique across roles: ``killers-drafter.json`` and the test IDs use
them. ``selftest --role drafter`` certifies the reference and each of them and records which cases kill which.
"""

import importlib

from sdcp_conformance.mutants.base import DrafterMutant
from sdcp_conformance.mutants.catalogue import Catalogue

CATALOGUE = Catalogue(DrafterMutant.unmutated("unmutated-drafter", "the reference drafter built through the mutant "
                                              "factory, no bug planted (a control)"))
UNMUTATED = CATALOGUE.control

for _module in ("sessions", "apps"):
    importlib.import_module(f"{__name__}.{_module}")

MUTANTS = CATALOGUE.mutants

__all__ = ["CATALOGUE", "MUTANTS", "UNMUTATED"]
