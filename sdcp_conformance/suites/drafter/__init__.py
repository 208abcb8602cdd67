"""The drafter conformance suite: every requirement the draft and the profile place on a drafter.

The harness plays the drafter's router (assignments, status), its verifier
(proposals, verdicts, output) and its MLC (q_rows, token lists); each module
of this package declares the cases of one area on :data:`CATALOGUE`, and
importing the package imports them all (in name order).
"""

from sdcp_conformance.harness.case import Catalogue

CATALOGUE = Catalogue(role="drafter", base_models=("bigram-draft-near",), optional_models=("ctx-draft-near",))

CATALOGUE.load_suite(__name__, __path__, frozenset({"conversation", "variants"}))

__all__ = ["CATALOGUE"]
