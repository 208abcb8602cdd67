"""The verifier conformance suite: every requirement the draft and the profile place on a verifier.

Each module of this package declares the cases of one area on
:data:`CATALOGUE`; importing the package imports them all (in name order),
so adding a module adds its cases.
"""

from sdcp_conformance.harness.case import Catalogue

CATALOGUE = Catalogue(exclusive_areas=frozenset({"escalation"}), listening_areas={"escalation": ("router",)})
"""Escalation cases pin the embedded IUT's load (which every session sees): they run alone; they judge the
events the IUT sends to the harness's router listener."""

CATALOGUE.load_suite(__name__, __path__, frozenset({"conversation", "seeded_rule2"}))

__all__ = ["CATALOGUE"]
