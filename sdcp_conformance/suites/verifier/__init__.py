"""The verifier conformance suite: every requirement the draft and the profile place on a verifier.

Each module of this package declares the cases of one area on
:data:`CATALOGUE`; importing the package imports them all (in name order),
so adding a module adds its cases.
"""

import importlib
import pkgutil

from sdcp_conformance.harness.case import Catalogue

CATALOGUE = Catalogue(exclusive_areas=frozenset({"escalation"}), listening_areas={"escalation": ("router",)})
"""Escalation cases pin the embedded IUT's load (which every session sees): they run alone; they judge the
events the IUT sends to the harness's router listener."""

_NOT_CASES = frozenset({"conversation", "features", "seeded_rule2"})
for _module in sorted(info.name for info in pkgutil.iter_modules(__path__)):
    if _module not in _NOT_CASES:
        importlib.import_module(f"{__name__}.{_module}")
CATALOGUE.declare_features(importlib.import_module(f"{__name__}.features").FEATURES)

__all__ = ["CATALOGUE"]
