"""Rows that bind a verifier: §4.1, §6.1, §6.3–§6.9 and the profile items a verifier must follow.

Where the draft names the status and the problem type of a refusal, the row
carries them and they are exact (P1-JUDGE-1). Where the draft demands the
refusal but only the profile names its type, ``type_level`` is PROFILE.
"""

from __future__ import annotations

from sdcp_conformance.judge.levels import Level
from sdcp_conformance.judge.rows import Refusal, Row, refusal
from sdcp_conformance.protocol.problems import ProblemType as P

V = "verifier"
TABLE2_CONTRACT = "sdcp-bad-contract 422 Contract invalid or not supported"
STALE_BASE = ('Base check: if base is not the committed length or base_digest is not d[base], respond 409 with problem '
              'type "sdcp-stale-base" and the current session-state, so that the drafter can resynchronize.')

ROWS: tuple[Row, ...] = (
    # ------------------------------------------------------------------ §4.1 contract, §6.1 session
    Row("R-6.1-VALIDATES", "4.1, 6.1", f"The verifier validates the contract ... {TABLE2_CONTRACT}",
        Level.MUST, V, refusal=refusal(P.BAD_CONTRACT)),
    Row("R-4.1-UNKNOWN-KEY", "4.1",
        'A contract that contains a key not defined by this document MUST be rejected with problem type '
        '"sdcp-bad-contract", so that all parties compute the contract digest over the same content.',
        Level.MUST, V, refusal=refusal(P.BAD_CONTRACT)),
    Row("R-6.1-TARGET", "6.1",
        f"it MUST refuse a contract whose target digest does not match its model ... {TABLE2_CONTRACT}",
        Level.MUST, V, refusal=refusal(P.BAD_CONTRACT)),
    Row("R-6.5.2-LADDER", "6.5.2",
        "The fallback list MUST contain only the actions reduce, switch, self_decode, and fail ... "
        f"{TABLE2_CONTRACT}",
        Level.MUST, V, refusal=refusal(P.BAD_CONTRACT)),
    Row("R-4.1-DIGEST", "4.1",
        "The contract digest is the SHA-256 of the contract encoded with the core deterministic encoding of Section "
        "4.2.1 of [RFC8949], prefixed with a domain separator",
        Level.MUST, V),
    Row("P1-CTL-4/M-MAX-ZERO", "P1-CTL-4",
        "`m_max` 0 is refused (422 `sdcp-bad-contract`): no M could satisfy 1 ≤ M ≤ m_max.",
        Level.PROFILE, V, refusal=refusal(P.BAD_CONTRACT)),
    Row("P1-SES-1/TOKENIZER", "P1-SES-1",
        "The verifier SHOULD also refuse a tokenizer digest that does not match its tokenizer (422).",
        Level.SHOULD, V, refusal=refusal(P.BAD_CONTRACT, (422, None))),
    Row("R-6.1-OPEN", "6.1",
        "The verifier validates the contract (it MUST refuse a contract whose target digest does not match its "
        "model), computes or loads the KV cache of the prompt, computes d[0], and answers with session-state "
        "(round 0, committed 0).",
        Level.MUST, V),
    # D-JUDGE-PATH-BODY: {id} in the path of PUT …/drafter and POST …/policy is the session the request is about
    # (P1-MSG-3); a body naming another session contradicts it, and neither reading (the path's session, the
    # body's) is safe to act on, as one session's drafter or profile would change through a request about the
    # other. The draft and the profile do not say so: refused with 400 sdcp-bad-message, or NON-STRICT.
    Row("P1-MSG-3/BODY-SESSION", "P1-MSG-3",
        "`{id}` in paths is base64url without padding of the 16-octet session id",
        Level.PROFILE, V, refusal=refusal(P.BAD_MESSAGE, (400, None))),
    Row("P1-MSG-5/IDEMPOTENT-OPEN", "P1-MSG-5",
        "Opening an existing session id with the same epoch and an identical contract returns its current "
        "session-state (idempotent retry)",
        Level.PROFILE, V),
    Row("P1-MSG-5/CONFLICT", "P1-MSG-5", "with a different contract it is 422 `sdcp-bad-contract`.",
        Level.PROFILE, V, refusal=refusal(P.BAD_CONTRACT)),
    Row("P1-MSG-5/FAILOVER", "P1-MSG-5",
        "A `session-open` with `resume` and a higher epoch is a failover (§6.9), not a conflict.",
        Level.PROFILE, V),
    Row("P1-SES-1/EMPTY-PROMPT", "P1-SES-1", "An empty prompt is 400 `sdcp-bad-message`.",
        Level.PROFILE, V, refusal=refusal(P.BAD_MESSAGE)),
    Row("P1-SES-1/HIGHER-EPOCH", "P1-SES-1",
        "A `session-open` with a higher epoch but no `resume` is 409 `sdcp-stale-epoch`.",
        Level.PROFILE, V, refusal=refusal(P.STALE_EPOCH)),
    Row("P1-SES-1/UNKNOWN-SESSION", "P1-SES-1", "A session id the verifier does not know: 404 on session resources",
        Level.PROFILE, V, refusal=Refusal(404, None)),
    Row("P1-SES-1/UNKNOWN-PROPOSAL", "P1-SES-1",
        "A session id the verifier does not know: 404 on session resources, 403 `sdcp-not-assigned` on proposals.",
        Level.PROFILE, V, refusal=refusal(P.NOT_ASSIGNED)),
    Row("P1-MLC-2/TOKEN-LIST", "P1-MLC-2",
        "Object contents: a token list (`prompt`, `committed_tokens`) is a CBOR array of uint",
        Level.PROFILE, V),
    Row("P1-RTR-3/STATE", "P1-EVT-1, P1-RTR-3",
        "The router learns the current round from the session-state returned by `PUT …/drafter`. ... `PUT "
        "…/drafter` carries the router's last known round, committed length and digest (the verifier does not "
        "rely on them)",
        Level.PROFILE, V),
    # ------------------------------------------------------------------ §6.3 step 1 authorization
    Row("R-6.3-AUTHORIZATION", "6.1, 6.3",
        "Authorization: the authenticated client MUST be the drafter named in the latest assignment the verifier "
        'received for the session; otherwise respond 403 with problem type "sdcp-not-assigned". ... The verifier '
        "accepts proposals only from the drafter named in the latest assignment it has received.",
        Level.MUST, V, refusal=refusal(P.NOT_ASSIGNED)),
    Row("P1-ID-1/MEMBER", "P1-ID-1",
        "it must equal the drafter named in the latest assignment, and the proposal's `drafter` member must equal "
        "it too.",
        Level.PROFILE, V, refusal=refusal(P.NOT_ASSIGNED)),
    Row("P1-ID-2/ROUTER-ONLY", "P1-ID-2",
        "Router-only resources (`POST sessions`, `PUT sessions/{id}/drafter`, `POST sessions/{id}/policy`) are "
        "accepted only from identities in the verifier's configured router list; others get 403 with "
        "`sdcp-not-assigned`. (Draft silent: checked as SHOULD.)",
        Level.SHOULD, V, refusal=refusal(P.NOT_ASSIGNED)),
    Row("P1-EVT-1/OLD-DRAFTER", "P1-EVT-1",
        "After `switch` or the start of self-decoding, the old drafter's proposals get 403 `sdcp-not-assigned` "
        "until a new assignment arrives.",
        Level.PROFILE, V, refusal=refusal(P.NOT_ASSIGNED)),
    # D-JUDGE-ASSIGN-SELF: a PUT …/drafter that arrives during self-decoding ends the period (the reference's
    # D-VER-6): the drafter it names is served from the committed prefix, and the verifier appends no more tokens
    # of its own (the one whose append was under way completes). §6.5.2 has the period end on self_max or load
    # only; P1-EVT-1's "until a new assignment arrives" is the only word on it, so a deviation is NON-STRICT.
    Row("P1-EVT-1/NEW-ASSIGNMENT", "P1-EVT-1", "until a new assignment arrives.", Level.PROFILE, V),
    # ------------------------------------------------------------------ §6.3 step 2 fencing, §6.8, §6.9
    Row("R-6.3-FENCING", "6.3, 6.9",
        'Fencing: if epoch differs from the session epoch, respond 409 with problem type "sdcp-stale-epoch". ... '
        "Proposals carrying an older epoch are rejected",
        Level.MUST, V, refusal=refusal(P.STALE_EPOCH)),
    Row("R-6.3-FENCED-APPEND", "6.3",
        "If the append fails because the log has been fenced, the verifier MUST discard the round, release no "
        "output, and stop serving the session.",
        Level.MUST, V),
    Row("R-6.8-READ-BACK", "6.8",
        "If the MLC cannot enforce this rule, the verifier MUST read the log after its conditional append and treat "
        "its append as failed if a fence record with a higher epoch precedes its own record.",
        Level.MUST, V),
    Row("R-6.8-RECORD", "6.8",
        "A commit record appended by a verifier MUST carry the session's current epoch and follow the last record "
        "it wrote.",
        Level.MUST, V),
    Row("R-6.3-RECORD-FIRST", "6.3",
        "appends a commit record (epoch, round, emitted tokens, n, and d[n]) to the session's commit_log (Section "
        "6.8); only after that append succeeds does it send the verdict and make the tokens available as output.",
        Level.MUST, V),
    Row("R-6.7-ONLY-RECORDED", "6.7", "Only tokens whose commit record has been written are returned.",
        Level.MUST, V),
    Row("P1-LOG-1/RE-READ", "P1-LOG-1",
        "On 412 the writer re-reads: if a fence with a higher epoch is now present it stops serving the session",
        Level.PROFILE, V),
    Row("R-6.9-RESUME", "6.9",
        "it then reads the last commit record and opens the session at a new verifier with that epoch and the "
        "\"resume\" member carrying that round, committed length, digest, and the target KV cache from the MLC if "
        "available.",
        Level.MUST, V),
    # D-JUDGE-2: neither the draft nor the profile says what a verifier does with a resume whose committed
    # tokens do not reproduce its digest; refusing it with any 4xx is what a careful verifier does (SHOULD).
    Row("R-6.9-RESUME-CONSISTENT", "6.9",
        "opens the session at a new verifier with that epoch and the \"resume\" member carrying that round, "
        "committed length, digest",
        Level.SHOULD, V, refusal=Refusal(400, None, any_client_error=True)),
    # ------------------------------------------------------------------ §6.3 step 3 idempotency
    Row("R-6.3-IDEMPOTENCY", "6.3",
        "Idempotency: if a verdict for this round already exists, return it unchanged; if the round is being "
        "verified for an identical earlier request, wait for that verdict and return it.",
        Level.MUST, V),
    Row("R-6.3-ATOMIC", "6.3",
        "The commit and the recording of the verdict MUST be atomic with respect to concurrent proposals for the "
        "session.",
        Level.MUST, V),
    Row("R-6.9-LOST", "6.9",
        "Lost messages: proposals and their verdicts are idempotent per round, so a drafter retries a proposal "
        "whose verdict it did not receive.",
        Level.MUST, V),
    Row("P1-IDEM-1/IDENTICAL", "P1-IDEM-1",
        "\"Identical\" proposals are equal in every member except `status`.",
        Level.PROFILE, V),
    Row("P1-IDEM-1/IN-FLIGHT", "P1-IDEM-1",
        "A different proposal for a round whose verification is in flight gets 409 `sdcp-stale-base`",
        Level.PROFILE, V, refusal=refusal(P.STALE_BASE)),
    Row("P1-CTL-3/RETRY", "P1-CTL-3",
        "A retry of a round that already has a verdict still gets that verdict (idempotency comes first).",
        Level.MUST, V),
    # ------------------------------------------------------------------ §6.3 step 4 base and round
    Row("R-6.3-STALE-BASE", "6.3, 4.2",
        f"{STALE_BASE} ... Because d[n] depends on every committed token, a proposal built on a different or "
        "outdated prefix is detected without comparing token lists.",
        Level.MUST, V, refusal=refusal(P.STALE_BASE)),
    Row("R-6.3-STALE-ROUND", "6.3", "If round is not the last round plus one, respond 409 likewise.",
        Level.MUST, V, refusal=refusal(P.STALE_BASE)),
    # P1-JUDGE-1: "respond 409 with problem type sdcp-stale-base and the current session-state" requires the state.
    Row("R-6.3-STALE-STATE", "6.3",
        'respond 409 with problem type "sdcp-stale-base" and the current session-state, so that the drafter can '
        "resynchronize.",
        Level.MUST, V),
    # ------------------------------------------------------------------ limits
    Row("R-6.2-LIMIT", "6.2, Table 2",
        "generates M tokens, with 1 <= M <= min(m_max, m_cap), where m_cap is the limit from the last verdict "
        "(m_init before the first). ... sdcp-limit 422 Proposal violates m_cap or m_max",
        Level.MUST, V, refusal=refusal(P.LIMIT)),
    Row("P1-CTL-1/LATEST-ASSIGNMENT", "P1-CTL-1",
        "Before the first verdict of an assignment the limit is `min(m_max, m_init)` of the latest assignment the "
        "verifier received; after it, `min(m_max, m_cap)` of the last verdict. A proposal over the limit gets 422 "
        "`sdcp-limit` and changes nothing.",
        Level.PROFILE, V, refusal=refusal(P.LIMIT)),
    Row("R-6.2-EMPTY", "6.2, 5.2",
        "tokens: [+ uint], ; M proposed tokens ... with 1 <= M <= min(m_max, m_cap)",
        Level.MUST, V, refusal=refusal(P.BAD_MESSAGE, P.LIMIT, type_level=Level.PROFILE)),
    Row("P1-DRF-2/M-INIT-ZERO", "P1-DRF-2",
        "a drafter answers an assignment with `m_init` 0 with 400 `sdcp-bad-message`, and so does a verifier "
        "receiving one in `PUT sessions/{id}/drafter`.",
        Level.PROFILE, V, refusal=refusal(P.BAD_MESSAGE)),
    Row("R-6.5.1-M-CAP", "6.5.1",
        "Each verdict carries m_cap, the largest M the drafter may use in the next round, with 1 <= m_cap <= m_max.",
        Level.MUST, V),
    # ------------------------------------------------------------------ §6.3 step 5 preconditions, §6.4
    Row("R-6.3-Q-UNAVAILABLE", "6.3",
        "if the acceptance rule needs draft probabilities, the verifier MUST have obtained the rows for every "
        "proposed position ... If it cannot obtain them, it rejects the round with problem type "
        "\"sdcp-q-unavailable\" and commits nothing.",
        Level.MUST, V, refusal=refusal(P.Q_UNAVAILABLE)),
    Row("R-6.3-Q-EVERY-POSITION", "6.3",
        "the verifier MUST have obtained the rows for every proposed position ... an object of the wrong size or "
        "holding negative, NaN or infinite values gets 422 `sdcp-bad-proposal`.",
        Level.MUST, V, refusal=refusal(P.BAD_PROPOSAL, P.Q_UNAVAILABLE, type_level=Level.PROFILE)),
    Row("R-6.4-ZERO-Q", "6.3, 6.4",
        "checked that q[i](x[i]) is not zero for every position, before drawing any random value ... a proposal "
        "for which q[i](x[i]) is zero is rejected, before any random draw, with problem type \"sdcp-bad-proposal\".",
        Level.MUST, V, refusal=refusal(P.BAD_PROPOSAL)),
    Row("P1-Q-1/BAD-ROWS", "P1-Q-1",
        "an object of the wrong size or holding negative, NaN or infinite values gets 422 `sdcp-bad-proposal`.",
        Level.PROFILE, V, refusal=refusal(P.BAD_PROPOSAL)),
    Row("R-6.4-RULE1", "6.4",
        "x[i] is accepted if it equals argmax p[i], where ties are broken in favor of the smallest token "
        "identifier. Evaluation stops at the first position that is not accepted. The additional token is argmax "
        "p[a+1]. ... The output is identical to greedy decoding of the target model as computed by the verifier's "
        "scoring passes, whatever the drafter proposes.",
        Level.MUST, V),
    Row("P1-NUM-1/ABSENT-TEMPERATURE", "P1-NUM-1", "Under rule 2 an absent temperature means 1.0.",
        Level.PROFILE, V),
    Row("R-4.1-SAMPLING", "4.1",
        "p is the target model's next-token distribution after applying temperature, top-k, and top-p in that "
        "order; a temperature of zero selects the most probable token (ties broken in favor of the smallest token "
        "identifier).",
        Level.MUST, V),
    Row("R-6.4-RULE2", "6.4",
        "For each position, draw r uniformly from [0, 1). Accept x[i] if r < min(1, p[i](x[i]) / q[i](x[i])) ... "
        "At the first rejected position, the additional token is drawn from the normalized residual distribution "
        "max(0, p[i] - q[i]). If all M tokens are accepted, the additional token is drawn from p[M+1].",
        Level.MUST, V),
    Row("R-6.4-HMAC", "6.4",
        "When the sampling profile contains a seed, the verifier derives each value from HMAC-SHA-256 [RFC2104] "
        "keyed with the seed",
        Level.MUST, V),
    Row("R-6.4-INDEPENDENT", "6.4",
        "The verifier's random values MUST be independent of those the drafter used. ... Without a seed, the "
        "verifier uses a cryptographically secure random number generator.",
        Level.MUST, V),
    Row("P1-SAMP-2/DRAW", "P1-SAMP-2",
        "A token is drawn from a distribution d with a uniform u in [0,1) by inverse CDF in ascending token id",
        Level.PROFILE, V),
    Row("P1-CTL-5/ACCEPTED", "P1-CTL-5", "`accepted` is the rule's a before stop/max_new truncation",
        Level.PROFILE, V),
    # ------------------------------------------------------------------ truncation and closed sessions
    Row("R-6.3-TRUNCATE", "6.3, 6.5.2",
        "It truncates the emitted tokens after the first stop token and at max_new. ... finish (4):: Generation has "
        "ended because of a stop token or max_new.",
        Level.MUST, V),
    Row("R-6.5.2-ENDED", "6.5.2",
        "finish (4):: Generation has ended because of a stop token or max_new. ... fail (5):: The verifier ends the "
        "session with an error.",
        Level.MUST, V, refusal=refusal(P.SESSION_CLOSED, type_level=Level.PROFILE)),
    Row("P1-CTL-3/CLOSED", "P1-CTL-3",
        "After `finish` or `fail` every new proposal, drafter change and policy update gets 410 "
        "`sdcp-session-closed`; output stays readable.",
        Level.PROFILE, V, refusal=refusal(P.SESSION_CLOSED)),
    Row("P1-STATE-1", "P1-STATE-1",
        "`session-state.state`: 0 active, 3 self-decoding, 4 finished, 5 failed (the action codes).",
        Level.PROFILE, V),
    Row("P1-EVT-1/EVENTS", "P1-EVT-1",
        "Events: kind 2 when the verifier applies `switch`; kind 3 when it starts self-decoding; kind 0 when "
        "self-decoding ends and a drafter is needed again; 4 and 5 when the session finishes or fails.",
        Level.PROFILE, V),
    # ------------------------------------------------------------------ §6.5 control
    Row("R-6.5.2-LOW", "6.5.2",
        "A round is low if 100 * a < low_ratio * M, or, when low_ratio is zero or absent, if a = 0. ... after a "
        "round that is not low, c is reset and g incremented",
        Level.MUST, V),
    Row("P1-CTL-5/LOW", "P1-CTL-5", "`low` is c after any reset that this round caused", Level.PROFILE, V),
    Row("R-6.5.2-ESCALATE", "6.5.2",
        "When c reaches R, the verifier applies entry j of the fallback list (skipping entries that are not "
        "permitted, as described for self_decode, and advancing j past every entry it applies or skips), then "
        "resets c to zero. If no entry remains, it applies \"fail\".",
        Level.MUST, V),
    Row("R-6.5.2-REDUCE", "6.5.2",
        "reduce (1):: The verifier sets m_cap to max(1, floor(m_cap / 2)) and the drafter proceeds.",
        Level.MUST, V),
    Row("R-6.5.1-RESTORE", "6.5.1, P1-CTL-4",
        "It SHOULD restore m_cap gradually (for example by one per round) when rounds are no longer low and its "
        "load permits. ... After a reduction, m_cap is restored by one per round that is not low, up to "
        "min(m_max, m_init of the latest assignment).",
        Level.SHOULD, V),
    Row("R-6.5.2-SWITCH", "6.5.2",
        "switch (2):: The verifier sends an event to the router, which assigns the session to another drafter with "
        "a permitted model",
        Level.MUST, V),
    Row("R-6.5.2-SELF-PERMITTED", "6.5.2",
        "This action is permitted only if the contract contains self_load and the verifier's current load does not "
        "exceed it; otherwise the verifier skips it and applies the next entry of the fallback list.",
        Level.MUST, V),
    Row("R-6.5.2-SELF-RUN", "6.5.2",
        "Each token committed during self-decoding is recorded as a round of its own, with no proposal, so round "
        "numbers stay consecutive. During self-decoding the verifier commits tokens one at a time, publishes them "
        "as output, and stops after self_max tokens (if present) or when its load exceeds self_load; it then sends "
        "an event so that the router assigns a drafter again.",
        Level.MUST, V),
    Row("R-6.5.2-SELF-TARGET", "6.5.2",
        "self_decode (3):: The verifier decodes the session itself with the target model.",
        Level.MUST, V),
    Row("P1-SAMP-3/SELF", "P1-SAMP-3",
        "A self-decoded token is drawn with that round's number, i = 1 and purpose 1.",
        Level.PROFILE, V),
    Row("R-6.5.2-J-RESET", "6.5.2",
        "After a low round, c is incremented and g reset; after a round that is not low, c is reset and g "
        "incremented, and when g reaches R, where R is low_rounds, j is reset to zero.",
        Level.MUST, V),
    Row("R-6.5.2-J-PERSISTS", "6.5.2", "j persists across a change of drafter and across a self-decoding period.",
        Level.MUST, V),
    Row("P1-CTL-5/FINISH", "P1-CTL-5", "a round that both finishes the session and would escalate reports `finish`.",
        Level.PROFILE, V),
    # ------------------------------------------------------------------ §6.6 policy
    Row("R-6.6-APPLY", "6.6", "The verifier applies the new profile to rounds numbered from_round and later",
        Level.MUST, V),
    Row("R-6.6-OUTPUT", "6.6", "Committed output is never changed by a policy update.", Level.MUST, V),
    Row("R-6.6-RULE", "6.6", "The acceptance rule cannot be changed.", Level.MUST, V),
    Row("P1-POL-1/STALE", "P1-POL-1",
        "A policy whose `from_round` is not greater than the current round gets 409 `sdcp-stale-base` with the "
        "state.",
        Level.PROFILE, V, refusal=refusal(P.STALE_BASE)),
    Row("P1-POL-1/LATEST", "P1-POL-1",
        "A policy replaces the whole sampling profile from its round on; the latest applicable policy wins.",
        Level.PROFILE, V),
    # ------------------------------------------------------------------ §6.7 output
    Row("R-6.7-DELIVERY", "6.7",
        "Committed tokens are delivered with GET output?from=n, which returns the tokens committed at output "
        "indices n and later, waiting up to a server-chosen time if none are available.",
        Level.MUST, V),
    Row("R-6.7-STABLE", "6.7", "Indices are stable and every output message carries the session epoch",
        Level.MUST, V),
    # D-JUDGE-4: §6.7 serves "the tokens committed at output indices n and later" but does not say whether a
    # verifier that took over by resume serves the tokens committed before it; a careful one does (SHOULD).
    Row("R-6.7-RESUMED-PREFIX", "6.7, 6.9",
        "Committed tokens are delivered with GET output?from=n, which returns the tokens committed at output "
        "indices n and later ... committed_tokens: cache-ref",
        Level.SHOULD, V),
    Row("R-6.7-FINAL", "6.7",
        "The final output message has final set to true and finish set to \"finish\" or \"fail\".", Level.MUST, V),
    Row("P1-OUT-1/WAIT", "P1-OUT-1",
        "`GET output?from=n` waits up to a server-chosen time (the harness allows 30 s) and then returns whatever "
        "is committed from n on, possibly no tokens. `from` greater than the committed length waits",
        Level.PROFILE, V),
    Row("P1-OUT-1/AFTER-FINAL", "P1-OUT-1", "after the final output it returns `final: true` with no tokens.",
        Level.PROFILE, V),
    # ------------------------------------------------------------------ §6.1 status reports (role 2)
    Row("R-5.2-STATUS-REPORT", "5.2, 5.1",
        "status = { instance: tstr, role: 1 / 2, ; 1 drafter, 2 verifier load: uint .le 100, queue: uint, ... "
        "Router PUT instances/{id}/status status none (204)",
        Level.MUST, V),
    Row("P1-RTR-1/VERIFIER", "P1-RTR-1",
        "In `PUT instances/{id}/status`, `{id}` is the base64url (no padding) of the instance's base URI.",
        Level.PROFILE, V),
)

__all__ = ["ROWS"]
