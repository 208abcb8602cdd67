"""Rows that bind a router (§4.1, §5.1, §5.2, §6.1, §6.5.2, §6.6, §6.7 as front end, §6.8, §6.9 and the
profile's P1-RTR-1..6, P1-EVT-1, P1-LOG-1/3, P1-DRF-2/9 and P1-FRONT-1..3).

The router suite (:mod:`sdcp_conformance.suites.router`) judges them against
everything the harness's verifiers, drafters, cache and front client saw.
Where the draft describes what the router does without a keyword (§6.1 "The
router selects a verifier and sends session-open with epoch 1", §6.9's
failover sequence), the sentence is the procedure every other party relies
on, so it is judged at MUST (D-JUDGE-R1); where only the profile decides,
at PROFILE. Whether a verifier whose status expired has failed is the
profile's (P1-RTR-5: "failing a session over from a verifier whose status
expired is this profile's rule (judged as a profile item)"): a router that
never fails such a session over deviates from P1-RTR-5/FAILED-VERIFIER;
how it fails over (the fence first, the resume, the reassignment) is §6.9's.
"""

from __future__ import annotations

from sdcp_conformance.judge.levels import Level
from sdcp_conformance.judge.rows import Refusal, Row, refusal
from sdcp_conformance.protocol.problems import ProblemType as P

R = "router"

ROWS: tuple[Row, ...] = (
    # ------------------------------------------------------------------ §6.1 session creation and assignment
    Row("R-6.1-SESSION-OPEN", "6.1",
        "The router selects a verifier and sends session-open with epoch 1 and a commit_log reference in the MLC.",
        Level.MUST, R),
    Row("R-6.1-PERMITTED", "4.1, 6.1",
        "The router then selects a drafter whose model is permitted by the contract. ... permitted draft models",
        Level.MUST, R),
    Row("R-6.1-ASSIGN-ORDER", "6.1",
        "It first informs the verifier with PUT sessions/{id}/drafter, and then sends the assignment, carrying the "
        "current round, committed length, and digest, to the drafter.",
        Level.MUST, R),
    Row("R-6.1-NOT-EXPIRED", "6.1", "The router MUST NOT assign sessions to an instance whose status has expired.",
        Level.MUST_NOT, R),
    Row("R-6.1-SELECTION", "6.1",
        "Drafter selection is a local policy based on the drafters' status reports, for example preferring "
        "drafters with low load and queue and high recent acceptance.",
        Level.MAY, R),
    Row("R-4.1-UNKNOWN-KEY-ROUTER", "4.1",
        'A contract that contains a key not defined by this document MUST be rejected with problem type '
        '"sdcp-bad-contract", so that all parties compute the contract digest over the same content.',
        Level.MUST, R, refusal=refusal(P.BAD_CONTRACT)),
    Row("R-4.1-ABSENT-DRAFTERS", "4.1",
        'An absent "drafters" member permits any draft model that the router\'s local policy allows.',
        Level.MAY, R),
    Row("R-4.1-CONTRACT-UNCHANGED", "4.1, 6.6",
        "such updates are carried separately from the contract, which, including the acceptance rule, is never "
        "modified. ... the contract in those assignments is unchanged.",
        Level.MUST, R),
    Row("R-5.2-ASSIGNMENT", "5.2",
        "verifier: tstr, ; verifier base URI ... drafter: tstr, ; drafter base URI ... prompt: [* uint] / cache-ref, "
        "... round: uint, ; last round with a verdict",
        Level.MUST, R),
    Row("R-5.2-COMMITTED-TOKENS", "5.2",
        "committed_tokens: cache-ref, ; committed output so far ... Object contents: a token list (`prompt`, "
        "`committed_tokens`) is a CBOR array of uint",
        Level.MUST, R),
    Row("P1-RTR-3/ALWAYS-TOKENS", "P1-RTR-3",
        "The assignment the router sends to the drafter (`POST assignments`) always carries `committed_tokens` when "
        "committed > 0.",
        Level.PROFILE, R),
    Row("P1-RTR-3/ASSIGNMENT-STATE", "P1-RTR-3, P1-EVT-1",
        "the assignment sent to the drafter carries the values of the session-state that PUT returned. ... The "
        "router learns the current round from the session-state returned by `PUT …/drafter`.",
        Level.PROFILE, R),
    Row("P1-DRF-2/ROUTER-M-INIT", "P1-DRF-2",
        "`m_init` and `m_cap` are at least 1; the router sends max(1, min(m_max, m_init))",
        Level.PROFILE, R),
    # ------------------------------------------------------------------ status reports and eligibility (P1-RTR-1/2)
    Row("P1-RTR-1/ROUTER", "P1-RTR-1",
        "In `PUT instances/{id}/status`, `{id}` is the base64url (no padding) of the instance's base URI.",
        Level.PROFILE, R),
    Row("P1-RTR-1/PATH-ID", "P1-RTR-1",
        "In `PUT instances/{id}/status`, `{id}` is the base64url (no padding) of the instance's base URI.",
        Level.PROFILE, R, refusal=Refusal(400, None, any_client_error=True)),
    Row("P1-RTR-2/ELIGIBLE", "P1-RTR-2",
        "Only instances whose latest status is unexpired are eligible — for opening sessions at verifiers as well "
        "as for assigning drafters.",
        Level.PROFILE, R),
    Row("P1-RTR-2/STATUS-SENDER", "P1-RTR-2",
        "It accepts a status report only from the instance it names, and an event only from the session's current "
        "verifier (else 403).",
        Level.PROFILE, R, refusal=Refusal(403, None)),
    Row("P1-RTR-2/EVENT-SENDER", "P1-RTR-2",
        "It accepts a status report only from the instance it names, and an event only from the session's current "
        "verifier (else 403).",
        Level.PROFILE, R, refusal=Refusal(403, None)),
    # ------------------------------------------------------------------ §6.5.2 events (P1-EVT-1, P1-RTR-5)
    Row("R-6.5.2-ROUTER-SWITCH", "6.5.2",
        "switch (2):: The verifier sends an event to the router, which assigns the session to another drafter with "
        "a permitted model",
        Level.MUST, R),
    Row("P1-RTR-5/SAME-DRAFTER", "P1-RTR-5", "`switch` with no other eligible drafter reassigns the same one.",
        Level.PROFILE, R),
    Row("R-6.5.2-ROUTER-SELF-DECODE", "6.5.2",
        "self_decode (3):: The verifier decodes the session itself with the target model. ... it then sends an "
        "event so that the router assigns a drafter again.",
        Level.MUST, R),
    Row("P1-EVT-1/SELF-DECODE", "P1-EVT-1",
        "kind 3 when it starts self-decoding; kind 0 when self-decoding ends and a drafter is needed again",
        Level.PROFILE, R),
    Row("P1-EVT-1/END", "P1-EVT-1, P1-CTL-3",
        "4 and 5 when the session finishes or fails. ... After `finish` or `fail` every new proposal, drafter change "
        "and policy update gets 410 `sdcp-session-closed`",
        Level.PROFILE, R),
    Row("P1-DRF-9/UNKNOWN-KIND", "P1-DRF-9", "an unknown event kind makes the router fail the session.",
        Level.PROFILE, R),
    # ------------------------------------------------------------------ §6.6 policy (P1-RTR-4, P1-FRONT-3)
    Row("R-6.6-FROM-ROUND", "6.6", "It sends a policy message with from_round greater than the current round.",
        Level.MUST, R),
    Row("R-6.6-LATER-ASSIGNMENTS", "6.6",
        'the router includes it in the "sampling" member of subsequent assignments; the contract in those '
        "assignments is unchanged.",
        Level.MUST, R),
    Row("P1-RTR-4/FROM-ROUND", "P1-RTR-4", "Policy: `from_round` = the highest round the router knows + 1",
        Level.PROFILE, R),
    Row("P1-RTR-4/RETRY", "P1-RTR-4", "on 409 it retries with `state.round + 1`.", Level.PROFILE, R),
    Row("P1-FRONT-3", "P1-FRONT-3",
        "`POST client/sessions/{id}/policy` with `{sampling}` makes the router send a policy (§6.6, P1-RTR-4) and "
        "answers 200 `{from_round}` once the verifier accepted it.",
        Level.PROFILE, R),
    # ------------------------------------------------------------------ §6.7 the router as front end (P1-FRONT-2)
    Row("R-6.7-FRONT-END", "6.7",
        "Indices are stable and every output message carries the session epoch, so a front end that retries never "
        "duplicates or loses tokens, and a front end that receives output with a lower epoch than one it has seen "
        "discards it.",
        Level.MUST, R),
    Row("P1-FRONT-2/OUTPUT", "P1-FRONT-2",
        "`GET client/sessions/{id}/output?from=n` is the router acting as the front end of §6.7: tokens from output "
        "index n on, as the current verifier committed them, across failovers, never an output of an epoch lower "
        "than one it has seen; it waits like the verifier's output (P1-OUT-1) and ends with `final: true` and "
        "`finish`.",
        Level.PROFILE, R),
    Row("P1-FRONT-2/DESCRIBE", "P1-FRONT-2", "`GET client/sessions/{id}` answers `{verifier, epoch, phase}`.",
        Level.PROFILE, R),
    # ------------------------------------------------------------------ the front's session-open (P1-FRONT-1)
    Row("P1-FRONT-1/OPEN", "P1-FRONT-1",
        "`POST client/sessions` with `{contract, prompt: [* uint] / cache-ref, ? session: session-id}` makes the "
        "router open the session as §6.1 says, with that contract unchanged (digest for digest) and that prompt, "
        "and answers 201 `{session, verifier, epoch}` once the verifier has answered the session-open.",
        Level.PROFILE, R),
    # Ambient: whatever a case is about, the session it asked for by id is the one it follows (D-JUDGE-R8).
    Row("P1-FRONT-1/SESSION-ID", "P1-FRONT-1",
        "`POST client/sessions` with `{contract, prompt: [* uint] / cache-ref, ? session: session-id}` makes the "
        "router open the session as §6.1 says",
        Level.PROFILE, R, ambient=True),
    Row("P1-FRONT-1/CANNOT-SERVE", "P1-FRONT-1",
        "A contract the router cannot serve (no permitted drafter, no verifier for its target) gets 422 "
        "`sdcp-bad-contract`.",
        Level.PROFILE, R, refusal=refusal(P.BAD_CONTRACT)),
    # ------------------------------------------------------------------ §6.8 the router's fence append
    Row("R-6.8-FENCE-RECORD", "6.8",
        "Each record carries the epoch of its writer. ... A fence record carries only an epoch", Level.MUST, R),
    Row("P1-LOG-3/ROUTER", "P1-LOG-3",
        "The router names the commit log; the object need not exist yet. The first append creates it with "
        "`If-None-Match: *`.",
        Level.PROFILE, R),
    # ------------------------------------------------------------------ §6.9 failure handling (P1-RTR-5/6)
    Row("R-6.9-DRAFTER-FAILURE", "6.9",
        "Drafter failure: when a drafter's status expires, the router reassigns its sessions. The new drafter starts "
        "from the committed prefix in the assignment.",
        Level.MUST, R),
    Row("R-6.9-FENCE-FIRST", "6.9",
        "Verifier failure: the router first appends a fence record with the new epoch to the commit_log, so that "
        "the old verifier, even if it is only partitioned, can no longer commit or release output;",
        Level.MUST, R),
    Row("R-6.9-ROUTER-RESUME", "6.9",
        'it then reads the last commit record and opens the session at a new verifier with that epoch and the '
        '"resume" member carrying that round, committed length, digest, and the target KV cache from the MLC if '
        "available.",
        Level.MUST, R),
    Row("R-6.9-REASSIGN", "6.9", "It then informs the verifier of the drafter and sends a new assignment.",
        Level.MUST, R),
    Row("R-6.9-OLD-EPOCH", "6.9",
        "Proposals carrying an older epoch are rejected, and front ends discard output carrying an older epoch, so "
        "a recovered old verifier cannot extend the session.",
        Level.MUST, R),
    Row("P1-RTR-5/FAILED-VERIFIER", "P1-RTR-5",
        "A verifier has failed when its status expired or its resources failed (transport error, 404, 5xx) three "
        "times in a row over at least 0.5 s. ... failing a session over from a verifier whose status expired is "
        "this profile's rule (judged as a profile item), opening a new session at one is the draft's.",
        Level.PROFILE, R),
    Row("P1-RTR-6", "P1-RTR-6",
        "Resume (§6.9): after appending the fence, the router ignores commit records that follow a fence of a "
        "higher epoch, concatenates the `emitted` tokens of the rest, checks them against the last record's "
        "digest, writes them as the `committed_tokens` object, and opens the session at the new verifier from that "
        "record (round 0, committed 0 and d[0] if there is none).",
        Level.PROFILE, R),
)

__all__ = ["ROWS"]
