"""Judging decisions that shape a verifier's verdicts: limits, escalation and self-decoding, resume, rule 2.

Data only, gathered into :data:`sdcp_conformance.judge.decisions.DECISIONS`: each entry is
``(id, reading, rows, where)`` as :class:`~sdcp_conformance.judge.decisions.Decision` names them.
"""

from __future__ import annotations

ENTRIES: tuple[tuple[str, str, tuple[str, ...], str], ...] = (
    # ------------------------------------------------------------------ messages and paths (P1-MSG-3)
    ("D-JUDGE-PATH-BODY",
     "{id} in the path of PUT …/drafter and POST …/policy is the session the request is about (P1-MSG-3); a body "
     "naming another open session contradicts it, and neither reading is safe to act on, as one session's "
     "drafter or profile would change through a request about the other. The draft and the profile do not say "
     "so: such a request is to be refused with 400 sdcp-bad-message and change neither session, and a deviation "
     "is NON-STRICT.",
     ("P1-MSG-3/BODY-SESSION",), "judge.requirements.verifier"),
    # ------------------------------------------------------------------ the speculation limit (§6.2, §6.5.1)
    ("D-JUDGE-M-INIT-ZERO",
     "A verifier that accepted m_init 0 deviates once, from P1-DRF-2; its later 422 sdcp-limit (the limit "
     "min(m_max, 0) it accepted) or a verdict (it read 0 as 1) is consistent with what it accepted and not "
     "judged again (P1-JUDGE-4); any other answer still is.",
     ("P1-DRF-2/M-INIT-ZERO", "R-6.2-LIMIT"), "suites.verifier.limits"),
    ("D-JUDGE-LIMIT-READINGS",
     "After a verdict the limit is the m_cap that verdict carried (§6.5.1, P1-CTL-1); the limit cases drive "
     "the IUT into the states where that reading and the m_init one differ (after a reduce, a restore, a new "
     "assignment) instead of judging the state it happens to choose. Only after a new assignment does the "
     "draft leave the reading open, and there the profile row decides.",
     ("R-6.2-LIMIT", "R-6.5.1-M-CAP", "P1-CTL-1/LATEST-ASSIGNMENT"), "suites.verifier.limit_readings"),
    # ------------------------------------------------------------------ escalation and self-decoding (§6.5.2)
    ("D-JUDGE-3",
     "Load-dependent escalation (whether self_decode is permitted under self_load, the m_cap a reduce leaves) is "
     "judged against the load the IUT itself reports in the verdict of the round that escalates: that is the "
     "load its control step used. A case that cannot reach the branch it names from the loads the IUT reports "
     "says so, SKIPPED, rather than judging the other branch.",
     ("R-6.5.2-SELF-PERMITTED", "R-6.5.2-REDUCE", "R-6.5.2-ESCALATE"), "suites.verifier.escalation"),
    ("D-JUDGE-ASSIGN-SELF",
     "A PUT …/drafter that arrives during self-decoding ends the period (the reference's D-VER-6): after the "
     "append under way completes, the verifier appends no token of its own, and the newly assigned drafter's "
     "proposal at the committed prefix is verified. §6.5.2 ends the period on self_max or load only; P1-EVT-1's "
     "\"until a new assignment arrives\" is the only word on it, so a deviation is NON-STRICT.",
     ("P1-EVT-1/NEW-ASSIGNMENT",), "suites.verifier.escalation"),
    ("D-JUDGE-SELF-GREEDY",
     "Under rule 2, a self-decoding period whose tokens are all the argmax of the target's distribution is "
     "judged greedy (not decoded with the target model's distribution) only when a sampler would land on all "
     "of them with a probability below the rule-2 tests' alpha, which keeps this check's false alarm below it.",
     ("R-6.5.2-SELF-TARGET",), "suites.verifier.escalation"),
    ("D-JUDGE-SLOW-SELF",
     "The harness waits for the event that ends a self-decoding period as long as the verifier keeps appending "
     "commit records: each new record gives it another 10 s, at most 120 s in all. A period of n tokens takes n "
     "passes of the target model and a slow engine (a second a pass) is conformant, so the wait follows the "
     "commits, not a fixed time.",
     ("R-6.5.2-SELF-RUN", "P1-EVT-1/EVENTS"), "suites.verifier.conversation"),
    # ------------------------------------------------------------------ resume and output (§6.7, §6.9)
    ("D-JUDGE-2",
     "Neither the draft nor the profile says what a verifier does with a resume whose committed tokens do not "
     "reproduce its digest; resuming from it would extend an unverifiable prefix, so refusing it with any 4xx "
     "passes and accepting it is a deviation from a SHOULD (NON-STRICT).",
     ("R-6.9-RESUME-CONSISTENT",), "judge.requirements.verifier"),
    ("D-JUDGE-4",
     "§6.7 serves \"the tokens committed at output indices n and later\" but does not say whether a verifier "
     "that took over a session by resume serves the tokens committed before it; a careful one does, so it is "
     "judged at SHOULD (NON-STRICT).",
     ("R-6.7-RESUMED-PREFIX",), "judge.requirements.verifier"),
    # ------------------------------------------------------------------ rule 2's statistical cases (§6.4)
    ("D-JUDGE-STAT-ROW",
     "A statistical case's rejection is a finding on the sentence its evidence points to: on R-6.4-RULE2, "
     "which every design tests, unless the evidence for the design's own sentence (a sampling-profile family, "
     "§4.1; the memory bet across sessions in identical states, §6.4 independence) leads every other "
     "explanation by a likelihood ratio of 10, or, after an impossible outcome, every family under which it is "
     "possible points at that sentence. With unseeded values the row may differ from run to run; the verdict "
     "does not.",
     ("R-6.4-RULE2", "R-4.1-SAMPLING", "R-6.4-INDEPENDENT"), "suites.verifier.rule2_stats"),
)

__all__ = ["ENTRIES"]
