"""Where the draft and profile leave the reference drafter a choice, decided once here.

Each decision has an ID (``D-DRF-n``) that the code cites where it applies and
the closing notes list for folding into the profile.
"""

from __future__ import annotations

from sdcp_conformance.protocol.problems import ProblemType

AUTHORIZE_BEFORE_PARSING = True
"""D-DRF-1: ``POST assignments`` from an identity outside the configured routers
gets 403 sdcp-not-assigned (P1-DRF-1) before its body is parsed, so a stranger
learns nothing about what the drafter would accept."""

FOREIGN_ASSIGNMENT = ProblemType.BAD_MESSAGE
"""D-DRF-2: an assignment whose ``drafter`` member is not this drafter's base URI
is 400 sdcp-bad-message: every proposal built from it would name another
drafter and be refused by the verifier (P1-ID-1)."""

BAD_PROMPT = ProblemType.BAD_MESSAGE
"""D-DRF-3: an empty prompt, a prompt token outside the draft model's vocabulary,
or a prompt cache-ref that cannot be read or does not hold a CBOR array of
uint is 400 sdcp-bad-message, as the verifier answers for session-open
(P1-SES-1, D-VER-2)."""

INCONSISTENT_COMMITTED_TOKENS = ProblemType.BAD_MESSAGE
"""D-DRF-4: a ``committed_tokens`` object that does not hold exactly ``committed``
tokens reproducing ``digest`` from d[0] is 400 sdcp-bad-message (like D-VER-3).
When ``committed_tokens`` is absent although ``committed`` > 0, or cannot be
read, the drafter accepts the assignment and first reads the missing tokens
with ``GET …/output`` and checks them against ``digest``, exactly as P1-DRF-6
resynchronises after sdcp-stale-base."""

CARRY_ESTIMATES = True
"""D-DRF-5: when an assignment replaces the one held for the same session, the
acceptance estimates (alpha, accept) carry over: the draft and target models
are the same, so what was learned still applies. A new session starts alpha at
``DrafterConfig.initial_alpha``."""

TIMING = "ewma"
"""D-DRF-6: §6.2's t_d is an instance-wide EWMA of (wall time from asking for the
model to having written q_rows) / M, so waiting for a busy model makes a loaded
drafter propose fewer tokens; t_v is an EWMA per verifier of the round trip of
the proposal exchange that got the answer. Both start from configured priors
and are floored at 1 µs so §6.2's quotient is defined."""

BUDGET_CAP = True
"""D-DRF-7: M is also capped at max(1, max_new - n - 1): a round commits at most
M + 1 tokens, so a longer proposal cannot commit more before max_new. The cap
depends on n only, never on the drafted tokens."""

Q_ROWS_NAMING = "q/{instance}/{session}/{epoch}/{round}/{serial}"
"""D-DRF-8: every published proposal gets its own q_rows object under the
drafter's MLC base URI (``instance`` = first 16 hex digits of SHA-256 of the
drafter's base URI, so drafters sharing an MLC never collide; ``serial``
counts publications of this drafter). The lease (P1-MLC-3, P1-DRF-8) lasts the
worst case of the whole exchange: every attempt's timeout plus every backoff,
plus a margin. The object is deleted once the round has its answer (verdict,
or a problem that ends the round); a failed delete is logged and left to the
lease."""

DRAFT_SAMPLING = "float32-row"
"""D-DRF-9: under rule 2 the published row is the draft model's distribution
after the session's sampling profile (``target_distribution`` on the draft
logits, §4.1 and P1-SAMP-1), cast to binary32; the token is drawn from that
binary32 row widened to binary64 with P1-SAMP-2's inverse CDF, so "the drafter
MUST sample each proposed token from exactly the row it publishes" (§5.2)
holds up to P1-SAMP-2's normalisation by the row's own sum. Uniforms come from
a numpy Generator per session, spawned from the instance's SeedSequence
(``DrafterConfig.seed``), never from §6.4's HMAC derivation. Under rule 1 the
drafter proposes the argmax of its logits (ties to the smaller id) and
publishes no q_rows (P1-DRF-4)."""

TRANSPORT_RETRIES = "bounded"
"""D-DRF-10: a lost verdict (transport error, timeout, 5xx, 429; P1-DRF-5) is
resent with the identical body, sleeping ``backoff_s * 2**(k-1)`` (at most
``backoff_max_s``) before retry k, until at least ``max_attempts`` attempts
were made AND ``retry_window_s`` (30 s, P1-DRF-5's "for at least 30 s") has
passed since the first one, or a new assignment for the session cancels the
exchange (P1-DRF-7). When every attempt failed the drafter stops the session;
the router reassigns it when the drafter's status or the verifier's recovery
calls for it (§6.9). (Until the drafter suite existed the bound was
``max_attempts`` alone, which gave up after about 0.35 s of 503s: a short
verifier outage left the session without a drafter.)"""

FINAL_PROBLEMS_STOP = True
"""D-DRF-11: every 4xx other than sdcp-stale-base (resync, P1-DRF-6) and
sdcp-q-unavailable (redraft, P1-DRF-5) stops the session: "a 4xx is final"
(P1-DRF-5). That includes sdcp-limit, which means the drafter's and the
verifier's limits disagree."""

SETBACK_LIMIT = "max_attempts"
"""D-DRF-12: a round that ends without a verdict and without new committed
tokens (sdcp-q-unavailable, or sdcp-stale-base whose state names nothing new,
e.g. a different proposal of an abandoned one still in flight, P1-IDEM-1) is
a setback. Before drafting again after setback k the drafter sleeps like
retry k of D-DRF-10; more than ``max_attempts`` consecutive setbacks stop the
session. A verdict or a resync that learned tokens resets the count."""

VERDICT_CHECKS = "digest-chain"
"""D-DRF-13: a verdict must name the session, epoch and round of the outstanding
proposal, and its committed length and digest must be d[n] extended by its
emitted tokens (§4.2); otherwise the drafter logs an error and stops. A
verdict whose tokens are not the proposal's first ``accepted`` tokens plus
one (truncated) — the stored verdict of an abandoned earlier proposal for the
same round (P1-IDEM-1) — still commits its tokens but does not update the
acceptance estimates. An m_cap outside 1..m_max is clamped into it (§6.5.1)."""

RESYNC_RULES = "forward-only"
"""D-DRF-14: on sdcp-stale-base the drafter stops when ``state`` is missing or
malformed, names another epoch, has ``state`` 3, 4 or 5 (P1-DRF-6), or names
fewer committed tokens than the drafter already checked (committed output
never shrinks). Otherwise it reads ``GET …/output?from=k`` from its first
missing index k, at most ``max_attempts`` reads, keeps exactly the tokens up
to ``state.committed`` and adopts them only if they reproduce
``state.digest``; output of another epoch or session, or a forged token list,
stops the session."""

STATUS_FIELDS = "instance-wide"
"""D-DRF-15: status ``load`` is 100 × drafting sessions / ``capacity`` (at most
100); ``queue`` counts draft calls waiting for or running on the model;
``accept_milli`` is an instance-wide EWMA of a/M over every verdict matching its
proposal, omitted before the first one; it is sent to every configured router
every ttl_ms / 3."""

KEEP_STOPPED_SESSIONS = True
"""D-DRF-16: a session whose loop stopped keeps its record (epoch included), so
that a late assignment with a lower epoch still gets 409 sdcp-stale-epoch
(P1-DRF-7) and an equal or higher one restarts drafting."""

MEASURED_TIMING_DEFAULT = True
"""D-DRF-17: M is chosen from measured drafting and verification times by
default (§6.2); ``DrafterConfig.measured_timing = False`` uses the configured
priors instead, so that a seeded run (same session id, same drafter) repeats
exactly — wall-clock timing would otherwise change M and thereby the rounds."""

MODEL_CALLS_QUEUED = True
"""D-DRF-19: every call into the draft model (draft, forget) is queued on the
drafter's own executor of ``draft_concurrency`` threads, in the order asked for,
never run on a thread of its own. A drafting loop that a new assignment cancels
(P1-DRF-7) cannot stop the thread its draft runs on; the next loop's draft, and
the old loop's ``forget``, wait for it. Otherwise they ran beside it on a model
that is thread-confined (the torch runtime's per-session KV caches), the new
loop failed, and the session fell silent — the drafter fuzzer found this as a
flaky R-6.5.2-CONTINUE."""

SEVERAL_MODELS = "first-permitted"
"""D-DRF-20: one reference drafter may serve several draft models (the
conformance harness uses ``bigram-draft-near`` and ``ctx-draft-near`` together,
as D-VER-9 does for verifiers); each session drafts with the first of them, in
the order served, whose SHA-256 its contract's ``drafters`` lists, or with the
first one when the contract lists no drafters. A contract listing none of them,
or naming a tokenizer other than that model's, is refused (P1-DRF-3)."""
