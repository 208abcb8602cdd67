"""Which optional features each verifier case exercises (D-JUDGE-DECL-1), grouped by feature: what the harness
saw every case send in a certification of the reference (``harness/features.py``), kept as the test plan a
declaration is read against; a case that sends another feature is held to it by the runner (``harness/terms.py``)."""

SEEDED_RULE2 = ("rule2", "seeded_rule2")
RULE2 = ("rule2",)
SELF_DECODE = ("self_decode",)
CACHE_REF_PROMPT = ("cache_ref_prompt",)
RESUME = ("resume",)

FEATURES: dict[str, tuple[str, ...]] = {
    **dict.fromkeys((
        "VER-4.1-CONTRACT-019", "VER-6.5-ESC-008", "VER-6.5-ESC-009", "VER-6.5-ESC-010", "VER-6.5-ESC-015",
        "VER-6.5-ESC-017", "VER-6.5-ESC-019", "VER-6.5-ESC-020",
    ), SELF_DECODE),
    **dict.fromkeys((
        "VER-6.1-SESSION-006",
    ), CACHE_REF_PROMPT),
    **dict.fromkeys((
        "VER-6.3-QPRE-001", "VER-6.3-QPRE-002", "VER-6.3-QPRE-003", "VER-6.3-QPRE-004", "VER-6.3-QPRE-005",
        "VER-6.3-QPRE-006", "VER-6.3-QPRE-007", "VER-6.3-QPRE-008", "VER-6.3-QPRE-009", "VER-6.3-QPRE-010",
        "VER-6.3-QPRE-011", "VER-6.4-RULE2-001", "VER-6.4-RULE2-002", "VER-6.4-RULE2-003", "VER-6.4-RULE2-004",
        "VER-6.4-RULE2-005", "VER-6.4-RULE2-006", "VER-6.4-RULE2-007", "VER-6.4-RULE2-011", "VER-6.4-RULE2-012",
        "VER-6.4-VOCAB-003", "VER-6.6-POLICY-001", "VER-6.6-POLICY-003", "VER-6.6-POLICY-004", "VER-6.6-POLICY-005",
        "VER-6.6-POLICY-006", "VER-6.6-POLICY-007", "VER-P1-NUM-1-TEMPERATURE-001",
    ), SEEDED_RULE2),
    **dict.fromkeys((
        "VER-6.4-RULE2-008", "VER-6.4-RULE2-009", "VER-6.4-RULE2-010", "VER-6.4-RULE2-STAT-001",
        "VER-6.4-RULE2-STAT-002", "VER-6.4-RULE2-STAT-003", "VER-6.4-RULE2-STAT-004", "VER-6.4-RULE2-STAT-005",
        "VER-6.4-RULE2-STAT-006", "VER-6.4-RULE2-STAT-007", "VER-6.4-RULE2-STAT-008", "VER-6.4-RULE2-STAT-009",
        "VER-6.4-RULE2-STAT-010",
    ), RULE2),
    "VER-6.5-ESC-018": ("rule2", "seeded_rule2", "self_decode"),
    **dict.fromkeys((
        "VER-6.9-RESUME-001", "VER-6.9-RESUME-002", "VER-6.9-RESUME-003", "VER-6.9-RESUME-004", "VER-6.9-RESUME-005",
        "VER-6.9-RESUME-006", "VER-6.9-RESUME-007", "VER-6.9-RESUME-008",
    ), RESUME),
}

__all__ = ["CACHE_REF_PROMPT", "FEATURES", "RESUME", "RULE2", "SEEDED_RULE2", "SELF_DECODE"]
