"""Rows that bind a drafter (§4.1, §5.1, §5.2, §6.1, §6.2, §6.3, §6.4, §6.5.2, §6.9 and P1-DRF-…, P1-MLC-…).

The drafter suite (``sdcp_conformance/suites/drafter``) judges them. Ambient
rows are judged by the harness's played verifier on every proposal it
receives, whatever the case is about: the proposal's members, its status
member, its round, base and M, one outstanding proposal per session, and
the identity it names. Where the draft demands a refusal of an assignment,
the row carries it; where only the profile names the status and type, the
row's level is PROFILE (P1-JUDGE-1).
"""

from __future__ import annotations

from sdcp_conformance.judge.levels import Level
from sdcp_conformance.judge.rows import Row, refusal
from sdcp_conformance.protocol.problems import ProblemType as P

D = "drafter"

PROPOSAL_CDDL = ("proposal = { session: session-id, epoch: uint, round: uint, drafter: tstr, ; drafter base URI "
                 "base: uint, base_digest: hash32, tokens: [+ uint], ; M proposed tokens")
STATUS_CDDL = ("status = { instance: tstr, role: 1 / 2, ; 1 drafter, 2 verifier load: uint .le 100, queue: uint, "
               "? accept_milli: uint .le 1000, ; EWMA of a/M x 1000")
BASE_SENTENCE = ("It then sends a proposal with base and base_digest equal to the committed length and digest it last "
                 "learned")
Q_ROWS_SENTENCE = ('The "q_rows" object holds, for each proposed position, the draft distribution from which the '
                   "proposed token was sampled, as a row of V IEEE 754 binary32 values in little-endian order, where V "
                   "is the vocabulary size; rows are concatenated in position order.")

ROWS: tuple[Row, ...] = (
    # ------------------------------------------------------------------ ambient: every proposal received
    Row("R-5.2-PROPOSAL", "5.2",
        f"{PROPOSAL_CDDL} ... drafter: tstr, ; drafter base URI",
        Level.MUST, D, ambient=True),
    Row("R-5.2-STATUS-MEMBER", "5.2", f"{STATUS_CDDL} ... status: status", Level.MUST, D, ambient=True),
    Row("R-6.2-ROUND", "6.2, 5.2",
        "and round equal to the last verdict's round plus one. ... round: uint, ; last round with a verdict",
        Level.MUST, D, ambient=True),
    Row("R-6.2-BASE", "6.2", BASE_SENTENCE, Level.MUST, D, ambient=True),
    Row("R-6.2-M-BOUNDS", "6.2",
        "generates M tokens, with 1 <= M <= min(m_max, m_cap), where m_cap is the limit from the last verdict "
        "(m_init before the first).",
        Level.MUST, D, ambient=True),
    Row("R-6.2-ONE-OUTSTANDING", "6.2", "A drafter MUST NOT have more than one outstanding proposal per session.",
        Level.MUST_NOT, D, ambient=True),
    # D-JUDGE-D11: after every continue (and reduce) verdict a proposal must follow; judged wherever the harness
    # waits for one (five quiet windows, at least 2 s; 10 s for a session's first proposal).
    Row("R-6.5.2-CONTINUE", "6.5.2", "continue (0):: The drafter proceeds with the next round.", Level.MUST, D,
        ambient=True),
    # D-JUDGE-STATUS-INSTANCE, for the status member of a proposal as for a status report: §5.2 types `instance` as
    # a tstr and gives it no value; only the profile makes it the instance's base URI.
    Row("P1-ID-1/STATUS-INSTANCE", "P1-ID-1",
        "Every party is identified by the URI SAN of its TLS certificate, which equals its base URI (scheme, host, "
        "port, path, trailing `/`).",
        Level.PROFILE, D, ambient=True),
    Row("P1-ID-1/PROPOSAL", "P1-ID-1",
        "The verifier's \"authenticated client\" in §6.3 step 1 is the client certificate's URI SAN; it must equal "
        "the drafter named in the latest assignment, and the proposal's `drafter` member must equal it too.",
        Level.PROFILE, D, ambient=True),
    # ------------------------------------------------------------------ §6.2, §6.3 drafting and proposing
    # D-JUDGE-D1: the sentence's keyword is MAY, but what it allows is bounded: a speculative proposal "sends it
    # only after the verdict confirms that assumption". Sending it otherwise is judged at MUST.
    Row("R-6.2-SPECULATIVE", "6.2",
        "It MAY prepare the next proposal speculatively, assuming full acceptance, but sends it only after the "
        "verdict confirms that assumption.",
        Level.MUST, D),
    Row("R-6.2-ARTIFACTS", "6.2",
        "It writes the draft artifacts the verifier may need to the MLC and holds leases on them until it receives "
        "the verdict of the round.",
        Level.MUST, D),
    Row("R-6.2-CHOICE-OF-M", "6.2",
        "The following rule is RECOMMENDED. ... the drafter chooses the M within its limits that maximizes that "
        "quantity divided by (M * t_d + t_v). A loaded drafter thereby proposes fewer tokens, and a drafter whose "
        "cache bandwidth is scarce does the same.",
        Level.RECOMMENDED, D),
    Row("R-6.3-DISCARD", "6.3",
        "After the verdict, the drafter MUST discard its draft state for proposed positions beyond the accepted "
        "ones and MAY release its leases.",
        Level.MUST, D),
    # ------------------------------------------------------------------ §5.2, §6.4 draft rows and sampling
    Row("R-5.2-EXACT-ROW", "5.2", "The drafter MUST sample each proposed token from exactly the row it publishes.",
        Level.MUST, D),
    Row("R-5.2-Q-ROWS", "5.2", Q_ROWS_SENTENCE, Level.MUST, D),
    Row("R-6.4-CARRY-Q-ROWS", "6.4", "The proposal MUST carry q_rows", Level.MUST, D),
    Row("R-6.4-NOT-HMAC", "6.4", "Drafters MUST NOT use this derivation for their own sampling.",
        Level.MUST_NOT, D),
    Row("P1-DRF-4", "P1-DRF-4", "Under rule 1 a drafter proposes its own greedy tokens and publishes no `q_rows`.",
        Level.PROFILE, D),
    Row("P1-MLC-3/LEASE", "P1-MLC-3",
        "a writer holding a lease sends `SDCP-Lease: <ms>` on its `PUT`; the MLC keeps the object at least that "
        "long. A drafter must keep its `q_rows` fetchable until the verdict of the round arrives.",
        Level.PROFILE, D),
    Row("P1-DRF-8/LEASE", "P1-DRF-8",
        "Leases on `q_rows` last at least the drafter's proposal timeout, and the drafter deletes the objects after "
        "the verdict.",
        Level.PROFILE, D),
    Row("P1-MLC-2/TOKEN-LISTS", "P1-MLC-2", "a token list (`prompt`, `committed_tokens`) is a CBOR array of uint",
        Level.PROFILE, D),
    # ------------------------------------------------------------------ §6.5.2 what each action means to it
    Row("R-6.5.2-REDUCE-PROCEEDS", "6.5.2",
        "reduce (1):: The verifier sets m_cap to max(1, floor(m_cap / 2)) and the drafter proceeds.",
        Level.MUST, D),
    Row("R-6.5.2-STOP-ON-SWITCH", "6.5.2", "the current drafter MUST stop proposing for the session.",
        Level.MUST, D),
    # D-JUDGE-D2: self_decode, finish and fail say that the session is no longer the drafter's (the verifier
    # decodes it itself, or it has ended); proposing on is judged like proposing after switch.
    Row("R-6.5.2-STOP-ON-SELF-DECODE", "6.5.2, P1-EVT-1",
        "self_decode (3):: The verifier decodes the session itself with the target model. ... After `switch` or the "
        "start of self-decoding, the old drafter's proposals get 403 `sdcp-not-assigned` until a new assignment "
        "arrives.",
        Level.MUST, D),
    Row("R-6.5.2-STOP-ON-END", "6.5.2",
        "finish (4):: Generation has ended because of a stop token or max_new. ... fail (5):: The verifier ends the "
        "session with an error.",
        Level.MUST, D),
    Row("P1-DRF-9", "P1-DRF-9", "An unknown action in a verdict stops the drafter", Level.PROFILE, D),
    # ------------------------------------------------------------------ §6.9, §5.1 lost and refused proposals
    Row("R-6.9-RETRY", "6.9",
        "Lost messages: proposals and their verdicts are idempotent per round, so a drafter retries a proposal whose "
        "verdict it did not receive.",
        Level.MUST, D),
    Row("P1-DRF-5/RETRY", "P1-DRF-5",
        "A lost verdict (transport error, timeout, 5xx, 429) is retried with the identical body, with backoff, for at "
        "least 30 s or until a new assignment for the session arrives",
        Level.PROFILE, D),
    Row("P1-DRF-5/FINAL", "P1-DRF-5", "a 4xx is final.", Level.PROFILE, D),
    Row("R-5.1-BY-CLASS", "5.1", "clients handle unlisted status codes by class [RFC9110].", Level.MUST, D),
    Row("P1-DRF-5/Q-UNAVAILABLE", "P1-DRF-5",
        "After `sdcp-q-unavailable` the round has no verdict, so the drafter may draft and publish again and send a "
        "different proposal for the same round.",
        Level.MAY, D),
    Row("P1-DRF-6/RESYNC", "P1-DRF-6",
        "On `sdcp-stale-base` a drafter resynchronises from `state`, reading the committed tokens it lacks with "
        "`GET …/output` (any authenticated party may read output) and checking them against the digest",
        Level.PROFILE, D),
    Row("P1-DRF-6/STOP", "P1-DRF-6", "a `state` of 3, 4 or 5 makes it stop instead.", Level.PROFILE, D),
    Row("R-6.9-NEW-DRAFTER", "6.9", "The new drafter starts from the committed prefix in the assignment.",
        Level.MUST, D),
    # ------------------------------------------------------------------ assignments (POST assignments)
    Row("R-4.1-UNKNOWN-KEY-DRAFTER", "4.1",
        'A contract that contains a key not defined by this document MUST be rejected with problem type '
        '"sdcp-bad-contract", so that all parties compute the contract digest over the same content.',
        Level.MUST, D, refusal=refusal(P.BAD_CONTRACT)),
    Row("P1-DRF-1", "P1-DRF-1",
        "it accepts `POST assignments` only from its routers (else 403 `sdcp-not-assigned`).",
        Level.PROFILE, D, refusal=refusal(P.NOT_ASSIGNED)),
    Row("P1-DRF-2/DRAFTER", "P1-DRF-2", "a drafter answers an assignment with `m_init` 0 with 400 `sdcp-bad-message`",
        Level.PROFILE, D, refusal=refusal(P.BAD_MESSAGE)),
    Row("P1-DRF-3", "P1-DRF-3",
        "A drafter refuses (422 `sdcp-bad-contract`) an assignment whose contract lists `drafters` without its "
        "model's digest or names another tokenizer.",
        Level.PROFILE, D, refusal=refusal(P.BAD_CONTRACT)),
    Row("P1-DRF-7/STALE-EPOCH", "P1-DRF-7",
        "An assignment with a lower epoch than the one a drafter holds gets 409 `sdcp-stale-epoch`",
        Level.PROFILE, D, refusal=refusal(P.STALE_EPOCH)),
    Row("P1-DRF-7/REPLACE", "P1-DRF-7",
        "an equal or higher epoch replaces the current assignment, abandoning any outstanding proposal first.",
        Level.PROFILE, D),
    # D-JUDGE-D3: no sentence makes a drafter draft under the current sampling profile; §5.2's assignment
    # carries it ("current profile, if updated") for the drafter's benefit, so following it is observed only.
    Row("R-5.2-SAMPLING-MEMBER", "5.2, 6.6",
        "? sampling: sampling, ; current profile, if updated ... the router includes it in the \"sampling\" member "
        "of subsequent assignments",
        Level.MAY, D),
    # ------------------------------------------------------------------ status reports (§6.1, P1-DRF-8, P1-RTR-1)
    Row("P1-DRF-8/ACCEPT-MILLI", "P1-DRF-8", "`accept_milli` in status is the EWMA of a/M.", Level.PROFILE, D),
    Row("P1-RTR-1/DRAFTER", "P1-RTR-1",
        "In `PUT instances/{id}/status`, `{id}` is the base64url (no padding) of the instance's base URI.",
        Level.PROFILE, D),
)

__all__ = ["ROWS"]
