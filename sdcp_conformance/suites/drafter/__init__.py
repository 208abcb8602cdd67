"""The drafter conformance suite: every requirement the draft and the profile place on a drafter.

The harness plays the drafter's router (assignments, status), its verifier
(proposals, verdicts, output) and its MLC (q_rows, token lists); each module
of this package declares the cases of one area on :data:`CATALOGUE`, and
importing the package imports them all (in name order).
"""

import importlib
import pkgutil

from sdcp_conformance.harness.case import Catalogue

CATALOGUE = Catalogue(role="drafter", base_models=("bigram-draft-near",), optional_models=("ctx-draft-near",))

_NOT_CASES = frozenset({"conversation", "features", "variants"})
for _module in sorted(info.name for info in pkgutil.iter_modules(__path__)):
    if _module not in _NOT_CASES:
        importlib.import_module(f"{__name__}.{_module}")
CATALOGUE.declare_features(importlib.import_module(f"{__name__}.features").FEATURES)

__all__ = ["CATALOGUE"]
