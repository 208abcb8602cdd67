"""The verifier conformance suite: every requirement the draft and the profile place on a verifier.

Case modules register their cases on :data:`CATALOGUE` when imported; the
import list below is the suite.
"""

from sdcp_conformance.harness.case import Catalogue

CATALOGUE = Catalogue()

from sdcp_conformance.suites.verifier import sanity  # noqa: E402,F401  (registers the cases)

__all__ = ["CATALOGUE"]
