"""The optional features each case of the drafter suite exercises (D-JUDGE-DECL-1: under a declaration that does not
claim one, the case is NOT CLAIMED). The harness finds the features of every message a case sends
(``harness/features.py``) and makes a case that uses one this table does not give it ERROR, a harness bug; a
case needing the target's load control exercises ``load_hook`` by its ``requires``."""

FEATURES: dict[str, tuple[str, ...]] = {
    "DRF-5.2-EXACT-ROW-001": ("rule2",),
    "DRF-5.2-Q-ROWS-001": ("rule2",),
    "DRF-5.2-SAMPLING-001": ("rule2",),
    "DRF-6.2-ARTIFACTS-001": ("rule2",),
    "DRF-6.2-CHOICE-OF-M-002": ("rule2",),
    "DRF-6.4-NOT-HMAC-001": ("rule2",),
    "DRF-6.9-LOST-003": ("rule2",),
    "DRF-6.9-LOST-004": ("rule2",),
    "DRF-6.9-LOST-005": ("rule2",),
    "DRF-6.9-LOST-006": ("rule2",),
    "DRF-6.9-LOST-007": ("rule2",),
    "DRF-P1-DRF-5-Q-UNAVAILABLE-001": ("rule2",),
    "DRF-P1-MLC-2-001": ("cache_ref_prompt",),
}

__all__ = ["FEATURES"]
