"""Judging decisions that shape a router's verdicts: its levels, the played instances' pace, the front, failover.

Data only, gathered into :data:`sdcp_conformance.judge.decisions.DECISIONS`: each entry is
``(id, reading, rows, where)`` as :class:`~sdcp_conformance.judge.decisions.Decision` names them.
"""

from __future__ import annotations

ENTRIES: tuple[tuple[str, str, tuple[str, ...], str], ...] = (
    # ------------------------------------------------------------------ levels of the router's rows
    ("D-JUDGE-R1",
     "Where the draft describes what the router does without a keyword (§6.1 \"The router selects a verifier "
     "and sends session-open with epoch 1\", §6.9's failover sequence), the sentence is the procedure every "
     "other party relies on, so it is judged at MUST; where only the profile decides, at PROFILE.",
     ("R-6.1-SESSION-OPEN", "R-6.1-ASSIGN-ORDER", "R-6.9-FENCE-FIRST", "R-6.9-ROUTER-RESUME", "R-6.9-REASSIGN"),
     "judge.requirements.router"),
    # ------------------------------------------------------------------ how the harness's parties behave and wait
    ("D-JUDGE-R2",
     "The harness's played drafters and verifiers send status heartbeats every 0.5 s with a 4 s TTL, so a busy "
     "machine that stalls the harness's loop for a few seconds still leaves every healthy instance eligible.",
     ("P1-RTR-2/ELIGIBLE", "R-6.1-NOT-EXPIRED"), "harness.roles.router_status"),
    ("D-JUDGE-R3",
     "The played verifiers' output long poll waits up to 1 s (P1-OUT-1 leaves the time to the server), so a "
     "router's front that waits \"like the verifier's output\" (P1-FRONT-2) answers a case within about a second.",
     ("P1-FRONT-2/OUTPUT", "R-6.7-FRONT-END"), "harness.roles.router_verifiers"),
    ("D-JUDGE-R4",
     "A router's decision (a session-open, an assignment) that reaches the harness more than 0.5 s after the "
     "status of the instance it names expired, by the harness's clock (which is never earlier than the "
     "router's), was taken with that status expired.",
     ("R-6.1-NOT-EXPIRED",), "harness.roles.router_truth"),
    ("D-JUDGE-R5",
     "The harness waits 10 s for a router to act (open, assign, fail over) before it judges that it did not, "
     "generous against a slow IUT; 2 s for the embedded reference and its mutants, which act within a few "
     "hundred milliseconds, so that a mutant that never acts costs little.",
     ("R-6.1-SESSION-OPEN", "R-6.1-ASSIGN-ORDER", "R-6.9-DRAFTER-FAILURE", "R-6.9-FENCE-FIRST",
      "R-6.9-ROUTER-RESUME", "P1-RTR-5/FAILED-VERIFIER"), "harness.router_context"),
    # ------------------------------------------------------------------ assignments (§6.1, P1-RTR-3)
    ("D-JUDGE-R6",
     "The session-state PUT …/drafter returned is the verifier's current one, so an assignment carrying another "
     "round, committed length or digest breaks §6.1 (\"carrying the current round, committed length, and "
     "digest\", MUST) as well as P1-RTR-3: a router that assigns from what it knew before the PUT misleads the "
     "drafter.",
     ("P1-RTR-3/ASSIGNMENT-STATE", "R-6.1-ASSIGN-ORDER"), "harness.roles.router_assignment_checks"),
    # ------------------------------------------------------------------ the front (P1-FRONT-1, P1-FRONT-2)
    ("D-JUDGE-R7",
     "Any 2xx from the front opens the session for the rest of a case (P1-MSG-4: \"A client treats any 2xx as "
     "success\"); the exact 201 and the members of its answer that P1-FRONT-1 names are judged by "
     "RTR-6.1-OPEN-001 alone.",
     ("P1-FRONT-1/OPEN",), "harness.router_context"),
    ("D-JUDGE-R8",
     "Whatever a case is about, the session it asked the front for by id is the one it follows: a front that "
     "opens it under another id deviates from P1-FRONT-1 (an ambient row, judged on every case's open), and the "
     "harness follows the session under the id the router named, so that the rest of the case judges the "
     "router's work, not a session nobody opened.",
     ("P1-FRONT-1/SESSION-ID",), "judge.requirements.router"),
    ("D-JUDGE-R10",
     "A session the router opened with other prompt tokens than the front's deviates from P1-FRONT-1 (judged on "
     "the open, NON-STRICT); the session's digests and assignments are then followed with the prompt the router "
     "opened it with, so that the rest of a case judges the router's work on the session that exists.",
     ("P1-FRONT-1/OPEN", "R-5.2-ASSIGNMENT", "R-6.1-ASSIGN-ORDER"), "harness.router_context"),
    ("D-JUDGE-R13",
     "The epoch on the front's own output is P1-FRONT-2's message: output carrying a lower epoch than the "
     "session's current one, or than one the front already sent, is a P1-FRONT-2 deviation while its tokens are "
     "the committed ones, and the draft's (§6.7, §6.9: output a fenced verifier could extend) only where they "
     "are not.",
     ("P1-FRONT-2/OUTPUT", "R-6.9-OLD-EPOCH", "R-6.7-FRONT-END"), "harness.roles.router_checks"),
    # ------------------------------------------------------------------ failover (§6.9, P1-RTR-5)
    ("D-JUDGE-R9",
     "An epoch is used once a verifier accepted a session-open carrying it: a failover's open that the verifier "
     "refused (a 4xx or 5xx, or a fault at the transport) leaves its epoch unused, so the router may offer the "
     "same epoch, the fence's, to the next candidate (§6.9: \"opens the session at a new verifier with that "
     "epoch\"); two verifiers that both accepted one epoch are judged by the one-verifier-per-epoch check.",
     ("R-6.9-FENCE-FIRST", "R-6.1-SESSION-OPEN"), "harness.roles.router_checks"),
    ("D-JUDGE-R11",
     "No text says what a router does while no verifier can take a session whose verifier failed: waiting for "
     "one, or failing the session; either passes. Opening it again at the failed verifier is judged (§6.9: \"at "
     "a new verifier\"), and so is a session left neither resumed at the verifier that reports again nor ended.",
     ("R-6.9-ROUTER-RESUME",), "suites.router.failover"),
    ("D-JUDGE-R12",
     "No text says what a router does with a session it opened while no permitted drafter was live: waiting for "
     "one, or ending the session; either passes. A session left neither assigned once the permitted drafter "
     "reports again nor ended waits for an event that cannot come (no drafter, no proposal, no verdict) and is "
     "judged.",
     ("R-6.1-PERMITTED",), "suites.router.drafter_expiry"),
)

__all__ = ["ENTRIES"]
