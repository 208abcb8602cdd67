"""The router's mutants: named faulty variants of the reference router, one realistic bug each.

:mod:`.faults` declares them on :data:`CATALOGUE`, each above the class it swaps into the router (a session machine,
a driver, an instance registry, the app, the test front) or wraps its MLC port with; importing the package imports
it. Names are stable forever and unique across roles: ``killers-router.json`` and the test IDs use them.
"""

import importlib

from sdcp_conformance.mutants.base import RouterMutant
from sdcp_conformance.mutants.catalogue import Catalogue

CATALOGUE = Catalogue(RouterMutant.unmutated("router-unmutated", "the hookable parts with no bug planted (a control)"))
UNMUTATED = CATALOGUE.control

importlib.import_module(f"{__name__}.faults")

MUTANTS = CATALOGUE.mutants

__all__ = ["CATALOGUE", "MUTANTS", "UNMUTATED"]
