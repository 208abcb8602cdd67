"""The drafter cases that send an optional feature: the rule-2 assignments (the drafter must publish q_rows, §6.4)
and the cache-ref prompt; measured as the verifier's table was (``suites/verifier/features.py``)."""

FEATURES: dict[str, tuple[str, ...]] = {
    **dict.fromkeys((
        "DRF-5.2-EXACT-ROW-001", "DRF-5.2-Q-ROWS-001", "DRF-5.2-SAMPLING-001", "DRF-6.2-ARTIFACTS-001",
        "DRF-6.2-CHOICE-OF-M-002", "DRF-6.4-NOT-HMAC-001", "DRF-6.9-LOST-003", "DRF-6.9-LOST-004", "DRF-6.9-LOST-005",
        "DRF-6.9-LOST-006", "DRF-6.9-LOST-007", "DRF-P1-DRF-5-Q-UNAVAILABLE-001",
    ), ("rule2",)),
    "DRF-P1-MLC-2-001": ("cache_ref_prompt",),
}

__all__ = ["FEATURES"]
