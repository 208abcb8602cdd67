"""The judging decisions taken where the draft and the profile are silent, as data: one place to read them.

Each decision names what it reads into the texts, the requirement rows (or
profile items) whose verdicts it shapes, and the module that carries it out.
Older decisions (D-JUDGE-1 … D-JUDGE-R13, D-JUDGE-D1 …) are still documented
beside the code that applies them; the ones here are the readings of
P1-JUDGE-4, -5 and -6 (time, lost answers, one cause per finding) and the
readings the limit cases rely on. A test checks that each named module applies
the decision it is listed with.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Decision:
    id: str
    reading: str
    """What the harness does, and why, in a sentence or two."""
    rows: tuple[str, ...]
    """Rows or profile items whose verdicts it shapes."""
    where: str
    """The module (dotted, under ``sdcp_conformance``) that applies it."""


DECISIONS: tuple[Decision, ...] = (
    Decision("D-JUDGE-TIME-1",
             "A request's deadline is the target's request_timeout_s or four times the 90th percentile of the IUT's "
             "last 64 answer times in this run, whichever is longer (at most twelve times request_timeout_s): a "
             "deadline follows the IUT's own pace, measured from the sanity case on (P1-JUDGE-5).",
             ("P1-JUDGE-5", "R-5.1-RESOURCES"), "harness.patience"),
    Decision("D-JUDGE-TIME-2",
             "A deadline that comes while the harness's own event loop could not run (its CPU work, or a machine "
             "that gave it none) is moved on by that stall: if the harness is the bottleneck, it waits, it does not "
             "judge (P1-JUDGE-5).",
             ("P1-JUDGE-5",), "harness.patience"),
    Decision("D-JUDGE-TIME-3",
             "A case that missed a deadline (or a 429/503, D-JUDGE-TIME-4) and did not pass runs again, alone, after "
             "the other cases, with every deadline and its own timeout three times longer; its first verdict is not "
             "reported. Missed again, the findings the misses caused become one FAILED 'too slow: no answer in N s, "
             "twice' with the stage, beside the findings that do not come from time (P1-JUDGE-5).",
             ("P1-JUDGE-5", "R-5.1-RESOURCES"), "harness.runner"),
    Decision("D-JUDGE-TIME-4",
             "429 and 503 say the IUT is busy, not that it refuses (P1-DRF-5 has a drafter retry both): like a missed "
             "deadline, they are evidence of load and make a case that did not pass run again.",
             ("P1-JUDGE-5", "P1-DRF-5"), "harness.iut"),
    Decision("D-JUDGE-LOST-1",
             "A request whose connection ended (GOAWAY of any code, a close, a reset connection) before any of its "
             "answer came is sent again on a new connection: while the IUT answers other requests meanwhile, for up "
             "to 30 s (P1-DRF-5's retry span); while it answers nothing, three times. The case judges the answer to "
             "the resend; the losses are one INFORMATIONAL finding per case (RFC 9113 §6.8 allows a server to leave "
             "the streams its GOAWAY names unanswered).",
             ("P1-JUDGE-6", "P1-JUDGE-6/LOST-ANSWER"), "harness.iut"),
    Decision("D-JUDGE-LOST-2",
             "A lost answer whose resend is refused (4xx) — as the draft allows once the lost request was processed: a "
             "proposal whose lost verdict said switch is refused 403 to the same drafter afterwards (§6.3 step 1 "
             "comes before idempotency) — cannot be known. A case that then did not pass runs again alone after the "
             "others; if the same happens again it is INCOMPLETE, naming the exchange (P1-JUDGE-4, P1-JUDGE-6).",
             ("P1-JUDGE-6", "P1-JUDGE-4"), "harness.runner"),
    Decision("D-JUDGE-CONTROL-1",
             "A transport case's valid-client control fails the case on R-5.1-MTLS only when the IUT refused that "
             "valid client's handshake (an alert, a broken-off handshake, no ALPN h2) or the harness could not "
             "verify the IUT's certificate (said so); any other failure of the control (no TCP, a stalled handshake, "
             "a hang, a reset, a GOAWAY, a bad body) makes the case INCOMPLETE, naming it (P1-JUDGE-4).",
             ("P1-JUDGE-4", "R-5.1-MTLS"), "suites.transport_judging"),
    Decision("D-JUDGE-M-INIT-ZERO",
             "A verifier that accepted m_init 0 deviates once, from P1-DRF-2; its later 422 sdcp-limit (the limit "
             "min(m_max, 0) it accepted) or a verdict (it read 0 as 1) is consistent with what it accepted and not "
             "judged again (P1-JUDGE-4); any other answer still is.",
             ("P1-DRF-2/M-INIT-ZERO", "R-6.2-LIMIT"), "suites.verifier.limits"),
    Decision("D-JUDGE-LIMIT-READINGS",
             "After a verdict the limit is the m_cap that verdict carried (§6.5.1, P1-CTL-1); the limit cases drive "
             "the IUT into the states where that reading and the m_init one differ (after a reduce, a restore, a new "
             "assignment) instead of judging the state it happens to choose. Only after a new assignment does the "
             "draft leave the reading open, and there the profile row decides.",
             ("R-6.2-LIMIT", "R-6.5.1-M-CAP", "P1-CTL-1/LATEST-ASSIGNMENT"), "suites.verifier.limit_readings"),
)


def decision(decision_id: str) -> Decision:
    """The decision with this ID (a harness bug, said at once, when there is none)."""
    for known in DECISIONS:
        if known.id == decision_id:
            return known
    raise KeyError(f"no judging decision {decision_id!r}")


__all__ = ["DECISIONS", "Decision", "decision"]
