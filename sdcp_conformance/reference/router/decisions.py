"""Where the draft and profile leave the reference router a choice, decided once here.

Each decision has an ID (``D-RTR-n``) that the code cites where it applies and
the closing notes list for folding into the profile.
"""

from __future__ import annotations

from sdcp_conformance.protocol.problems import ProblemType

QUEUE_WEIGHT = 10
NEUTRAL_ACCEPT_MILLI = 500
"""D-RTR-1: drafter preference (§6.1 "preferring drafters with low load and
queue and high recent acceptance"). Each eligible drafter costs
``load + 10 * queue + (1000 - accept_milli) / 10``; a report without
``accept_milli`` counts as 500 (no evidence either way). The lowest cost
wins; ties go to the smallest base URI, so the choice is deterministic. Load
is a percentage, so one queued session weighs like ten points of load and the
whole acceptance range like a full load range."""

COUNT_OWN_ASSIGNMENTS_AS_QUEUE = True
"""D-RTR-2: sessions the router assigned to a drafter since that drafter's
latest status report are added to its reported queue, so that a burst of
sessions opened between two reports spreads over the drafters instead of all
going to the one that looked idlest."""

EXPIRY_IS_INCLUSIVE = True
"""D-RTR-3: a status received at t with ttl_ms expires at t + ttl_ms/1000 and is
expired *at* that instant (``now >= expiry``), so ``ttl_ms`` 0 never makes an
instance eligible. The latest report received replaces the previous one."""

UNKNOWN_INSTANCE_PROBLEM = ProblemType.NOT_ASSIGNED
PATH_MISMATCH_PROBLEM = ProblemType.BAD_MESSAGE
"""D-RTR-4: ``PUT instances/{id}/status`` from an instance the router is not
configured with, or with a role other than the configured one, is 403
sdcp-not-assigned (P1-TLS-2: operators configure each party; P1-RTR-2: the
router knows each drafter's model only by configuration). A path ``{id}``
that is not the base64url of the body's ``instance`` is 400 sdcp-bad-message
(P1-RTR-1). A sender that is not the named instance is 403 (P1-RTR-2)."""

TRY_NEXT_VERIFIER_ON_REFUSAL = True
"""D-RTR-5: verifiers are ranked by load, then queue, then base URI. When a
``POST sessions`` fails as a resource (transport error, timeout, 404, 5xx), is
refused in any other way (for example 422 from a verifier serving another
target model), or answers a session-state that does not match what was sent
(not round 0, committed 0 and d[0]; on a resume, not the resumed values), the
router tries the next eligible verifier. Only when all fail does
``open_session`` raise; a failover instead waits for the next watchdog pass."""

STATUS_CLEARS_DECLARED_FAILURE = True
"""D-RTR-6: P1-RTR-5's streak of resource failures is reset by any answer that
is not a resource failure. A verifier declared failed stays ineligible until
it sends a status report received after that declaration, which clears the
streak; a report before the streak reaches the threshold does not clear it."""

UNKNOWN_SESSION_EVENT_PROBLEM = ProblemType.NOT_ASSIGNED
STALE_EVENT_PROBLEM = ProblemType.STALE_EPOCH
"""D-RTR-7: an event for a session the router does not know is 403
sdcp-not-assigned (no verifier is current for it, P1-RTR-2); an event from
the current verifier with another epoch is 409 sdcp-stale-epoch and changes
nothing; an event for a session that already ended is answered 204 and
ignored; an event of kind 1 (reduce, which P1-EVT-1 does not list as an
event) is answered 204 and ignored."""

UNKNOWN_EVENT_KIND_FAILS_SESSION = True
"""D-RTR-8: P1-DRF-9 "an unknown event kind makes the router fail the
session". An unknown kind decodes as 5 (§5.2 "MUST treat it as fail"), so the
router marks the session failed, assigns nothing more, and reports it failed
to its client; the draft has no resource with which a router ends a session
at the verifier."""

INCONSISTENT_LOG_FAILS_SESSION = True
"""D-RTR-9: when the commit log's tokens do not reproduce the digest they
must (the last commit record's on failover, P1-RTR-6; the session-state's when
building ``committed_tokens`` for an assignment), or the log is not a CBOR
sequence of P1-LOG-1 records, the router fails the session and opens it
nowhere. Resuming from an earlier, checkable record could change output
that front ends have already received at the same indices, which §1.3 ("one
authoritative output") rules out."""

NEW_EPOCH_PER_FAILOVER_ATTEMPT = True
"""D-RTR-10: every failover attempt fences with a fresh epoch (the session's
epoch + 1, kept even if the attempt fails later). A verifier that may have
received an open the router saw fail can then never commit next to the one
that a later attempt opens."""

REPOST_POLICY_AFTER_FAILOVER = True
"""D-RTR-11: the new verifier of a failover never saw the policy updates of
§6.6, so when a sampling policy was accepted the router posts it again, with
``from_round`` = the resumed round + 1, before it assigns the drafter. Rounds
up to the resumed one are committed, so this changes no round's profile."""

KEEP_DRAFTER_AFTER_FAILOVER = True
"""D-RTR-12: §6.9 "It then informs the verifier of the drafter": after a
failover the router assigns the same drafter again if it is still eligible,
and otherwise chooses one as usual."""

TOKENS_OBJECT_PATH = "sdcp/{session}/committed-e{epoch}-n{committed}"
COMMIT_LOG_PATH = "sdcp/{session}/commit-log"
"""D-RTR-13: names of the router's MLC objects, relative to its configured
cache base URI; ``{session}`` is the base64url of the session id. The commit
log does not exist until its first append (P1-LOG-3). A ``committed_tokens``
object is written once per (epoch, committed length) and reused while the
length and digest do not change."""

RETRY_OTHER_DRAFTER_ON_REFUSAL = True
"""D-RTR-14: when a drafter refuses ``POST assignments`` or fails as a
resource, the router tries the next eligible drafter (informing the verifier
first each time); when none is left the session waits without a drafter and
the watchdog tries again on its next tick."""

POLICY_RETRIES = 3
"""D-RTR-15: P1-RTR-4 "on 409 it retries with state.round + 1", at most three
times, since rounds can move on between two tries; 410 and other refusals
are final and reported to the caller."""

HIGHER_FENCE_FAILS_SESSION = True
"""D-RTR-16: a fence append that finds a fence with a higher epoch means
another router has taken the session over; this router marks it failed and
stops acting for it."""

TARGET_KV_ONLY_IF_NOTED = True
"""D-RTR-17: the draft names no place where a verifier publishes the target
KV, so ``resume.target_kv`` is sent only when the router was told
(``RouterApp.note_target_kv``) of an object for exactly the resumed committed
length; P1-MLC-2: it is "never required for correctness"."""

CALL_TIMEOUT_IS_TRANSPORT_FAILURE = True
"""D-RTR-18: every call to a verifier, drafter or the MLC runs under the
router's own timeout (``RouterConfig.call_timeout_s``), whatever the link does;
a call that times out counts as a transport error (P1-RTR-5)."""

OPEN_WITHOUT_DRAFTER = True
"""D-RTR-19: ``open_session`` needs an eligible verifier (else it raises), but
not an eligible drafter: the session is opened and the watchdog assigns a
drafter once one reports."""

PUT_DRAFTER_REFUSAL = True
"""D-RTR-20: a ``PUT sessions/{id}/drafter`` answered 410 ends the session
(P1-CTL-3: the verifier finished or failed it); any other refusal or failure
leaves the session without a drafter, for the watchdog to retry."""

MONOTONIC_KNOWLEDGE = True
"""D-RTR-21: the router's last known round, committed length and digest only
move forward: a session-state or event that reports less than the router
already knows (a late answer) does not lower them."""

CANNOT_SERVE_IS_BAD_CONTRACT = True
"""D-RTR-22: P1-FRONT-1 "A contract the router cannot serve (no permitted drafter,
no verifier for its target) gets 422 sdcp-bad-contract". No permitted drafter:
none of the configured drafters' models is in the contract's ``drafters``
(checked before any verifier is asked). No verifier for its target: every
eligible verifier tried refused the session-open with 422 sdcp-bad-contract.
When no verifier is eligible or every one failed otherwise, the front answers
503: the contract may be servable once a verifier reports again."""

FRONT_ENDS_FAILED_SESSION = True
"""D-RTR-23: a session the router failed (an unknown or fail event kind, a
commit log that does not reproduce its digest, a higher fence) has no
verifier to read a final output from, so the front answers ``final: true,
finish: 5`` to any read from the committed length the router knows on; reads
from a lower index still go to the verifier, so no committed token is lost."""

FRONT_RETRY_PAUSE_S = 0.1
"""D-RTR-24: the front discards an output with an epoch below the router's
(§6.7), from another index, a refusal and a failed read, and reads again at
the session's current verifier after this pause, or at once when the session
moves to another verifier (a failover); every failed read counts towards
P1-RTR-5's streak."""

FRONT_WAIT_S = 30.0
VERIFIER_POLL_S = 35.0
"""D-RTR-25: a front read waits up to 30 s (P1-OUT-1) in all, across
failovers; each long poll at a verifier has 35 s (its own 30 s plus a margin).
The verifier's answer is passed on as it came, epoch included, as soon as it
comes, so the front waits as long as the verifier does."""

POLICY_REFUSAL_RELAYED = True
"""D-RTR-26: a front policy (P1-FRONT-3) the verifier did not accept is
answered with the verifier's last status and problem type (409 after the
retries of D-RTR-15, 410 for a closed session); 503 when the verifier did not
answer; 404 when the router does not know the session."""

EVENTS_AFTER_ASSIGNMENT = True
"""D-RTR-27: an event is checked when it arrives (its sender and epoch: 403 or
409 at once) and applied in its session's turn, after an assignment in flight
has finished. A verifier sends switch about the drafter it was told of last
(the PUT …/drafter of that assignment); applied earlier, the switch would drop
the drafter before it and could hand the session straight back to the one it
was meant to leave."""


__all__ = [
    "COMMIT_LOG_PATH",
    "EVENTS_AFTER_ASSIGNMENT",
    "FRONT_RETRY_PAUSE_S",
    "FRONT_WAIT_S",
    "NEUTRAL_ACCEPT_MILLI",
    "PATH_MISMATCH_PROBLEM",
    "POLICY_RETRIES",
    "QUEUE_WEIGHT",
    "STALE_EVENT_PROBLEM",
    "TOKENS_OBJECT_PATH",
    "UNKNOWN_INSTANCE_PROBLEM",
    "UNKNOWN_SESSION_EVENT_PROBLEM",
    "VERIFIER_POLL_S",
]
