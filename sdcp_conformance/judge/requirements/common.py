"""Rows that bind every party: transport, message encoding, problem details, and the ambient rows.

Ambient rows are judged in every conversation whatever a case is about: a
valid request must be served as Table 1 says, every digest must be the
chain of §4.2 recomputed from the tokens, every success body must be the
message its resource names. A case never declares them.
"""

from __future__ import annotations

from sdcp_conformance.judge.levels import Level
from sdcp_conformance.judge.rows import Row, refusal
from sdcp_conformance.protocol.problems import ProblemType

MTLS = ("HTTP/2 [RFC9113] or HTTP/3 [RFC9114] over TLS 1.3 [RFC8446] with mutual certificate authentication "
        "is REQUIRED.")

CLAIM_QUOTE = "The implementation offers every optional feature its declaration claims."
"""Not the draft's or the profile's words: the vendor's own claim (``certify --declaration``, D-JUDGE-DECL-1), the one
row whose source is the declaration."""

ROWS: tuple[Row, ...] = (
    # ------------------------------------------------------------------ the vendor's declaration (D-JUDGE-DECL-1)
    Row("DECL-CLAIM", "declaration", CLAIM_QUOTE, Level.MUST, "any", ambient=True),
    # ------------------------------------------------------------------ ambient
    Row("R-5.1-RESOURCES", "5.1",
        "Table 1: SDCP Resources ... A client treats any 2xx as success (RFC 9110 classes).",
        Level.MUST, "any", ambient=True),
    Row("R-4.2-CHAIN", "4.2",
        "The verifier maintains a digest over the committed prefix. ... A proposal states the length n and digest "
        "d[n] of the prefix it extends.",
        Level.MUST, "any", ambient=True),
    Row("R-6.3-COMMIT", "6.3",
        "Commit: it appends the emitted tokens to the committed prefix, updates n and d[n]",
        Level.MUST, "verifier", ambient=True),
    # A refused proposal commits nothing and leaves the session as it was; a valid one is then verified
    # (P1-JUDGE-2: "a refusal that commits anyway is FAILED").
    Row("R-6.3-STEPS", "6.3", "On receiving a proposal, the verifier performs these steps:",
        Level.MUST, "verifier", ambient=True),
    # D-JUDGE-REFUSED-CLIENT (harness/refused_clients.py): the IUT as a client of the parties the harness plays —
    # a case that stops while the harness's servers refused the IUT's TLS handshakes, HTTP/1.1 or HTTP/2 frames
    # is judged here, with the refusals as evidence, not on the sentence it was waiting to judge.
    Row("R-5.1-MTLS-CLIENT", "5.1", MTLS, Level.REQUIRED, "any", ambient=True),
    # P1-JUDGE-6 (harness/iut.py sends the request again): a server that ends a connection with requests it admitted
    # and never answers (hypercorn's keep-alive limit does) does what HTTP/2 allows — RFC 9113 §6.8: streams up to
    # the last stream identifier "might still complete successfully" — and SDCP makes every request safe to resend.
    # An observation, never a deviation (D-JUDGE-LOST-1).
    Row("P1-JUDGE-6/LOST-ANSWER", "P1-JUDGE-6",
        "The lost answer itself is an `INFORMATIONAL` transport finding (RFC 9113 §6.8), except in a case whose "
        "subject is that exchange.",
        Level.MAY, "any", ambient=True),
    # ------------------------------------------------------------------ transport
    Row("R-5.1-MTLS", "5.1", MTLS, Level.REQUIRED, "any"),
    Row("P1-TLS-1/HANDSHAKE", "P1-TLS-1",
        "A handshake without a client certificate, with one from an unknown CA, or at TLS 1.2 must fail.",
        Level.PROFILE, "any"),
    Row("P1-TLS-1/H2", "P1-TLS-1", "HTTP/2 over TLS 1.3 with a required client certificate.", Level.PROFILE, "any"),
    # D-TLS-3: a server's certificate must name its base URI: P1-ID-1 identifies every party so, and the parties that
    # call it check who answered by that name. The draft requires mutual authentication but not this mapping, so a
    # certificate of the CA naming another URI (the hostname still matches) is a profile deviation, NON-STRICT.
    Row("P1-ID-1/OWN-CERTIFICATE", "P1-ID-1",
        "Every party is identified by the URI SAN of its TLS certificate, which equals its base URI (scheme, host, "
        "port, path, trailing `/`).",
        Level.PROFILE, "any"),
    Row("P1-TLS-1/HTTP1", "P1-TLS-1",
        "HTTP/1.1 requests (if ALPN lets them through) are refused with 505 or the connection is closed.",
        Level.PROFILE, "any"),
    Row("R-5.1-MEDIA-TYPE", "5.1",
        'Message bodies use the media type "application/sdcp+cbor". ... Request and success bodies are '
        "`application/sdcp+cbor`.",
        Level.MUST, "any", ambient=True),
    Row("R-5.1-PROBLEM-DETAILS", "5.1", "Errors use Problem Details [RFC9457]", Level.MUST, "any"),
    Row("P1-ERR-1", "P1-ERR-1",
        "Errors are RFC 9457 `application/problem+json`. `type` is `urn:ietf:params:sdcp:problem:<suffix>` with "
        "the suffix from Table 2",
        Level.PROFILE, "any", ambient=True),
    # ------------------------------------------------------------------ messages
    Row("R-5.2-UNKNOWN-KEYS", "5.2", "Unknown map keys MUST be ignored, except in the contract (Section 4.1).",
        Level.MUST, "any"),
    Row("R-5.2-UNKNOWN-ACTION", "5.2", 'A receiver that encounters an unknown action value MUST treat it as "fail".',
        Level.MUST, "any"),
    # D-JUDGE-1: acting on a message that is not an instance of its CDDL type breaks the message definitions
    # of §5.2 (FAILED); refusing it with another 4xx than the profile's 400 sdcp-bad-message is NON-STRICT.
    Row("R-5.2-WELL-FORMED", "5.2",
        "Message Definitions ... Receivers reject malformed CBOR, wrong types, out-of-range values, and missing "
        "required members with 400 (`sdcp-bad-message`, a profile problem type)",
        Level.MUST, "any", refusal=refusal(ProblemType.BAD_MESSAGE, type_level=Level.PROFILE)),
    Row("P1-MSG-1/DETERMINISTIC", "P1-MSG-1",
        "Senders use core deterministic encoding (RFC 8949 §4.2.1) for every message", Level.PROFILE, "any"),
    Row("P1-MSG-1/ANY-ENCODING", "P1-MSG-1",
        "receivers accept any well-formed encoding, and compute the contract digest over their own deterministic "
        "re-encoding of the decoded contract.",
        Level.PROFILE, "any"),
    Row("P1-MSG-3/PATH-ID", "P1-MSG-3",
        "`{id}` in paths is base64url without padding of the 16-octet session id; any other length or alphabet is "
        "400.",
        Level.PROFILE, "any", refusal=refusal(ProblemType.BAD_MESSAGE, (400, None))),
    Row("P1-ERR-2/ENCODING", "P1-ERR-2",
        "with `session` and `digest` as base64url strings without padding and the other members as numbers.",
        Level.PROFILE, "any",
        not_judged_by=(("router", "a router answers no request with a session-state (409 sdcp-stale-base is the "
                                  "verifier's answer); the router suite judges the state it relays in P1-RTR-3"),)),
    # D-JUDGE-VOCAB: a token id at or above the model's vocab_size (P1-HASH-2's V) in a prompt or a proposal (at a
    # verifier) or in an assignment's prompt (at a drafter) is one of P1-MSG-2's "out-of-range values", although the
    # CDDL says only uint: refused with 400 sdcp-bad-message, or with 422 sdcp-bad-proposal for a proposed token
    # (the reference's D-VER-1). Only the profile says so (NON-STRICT), except where the draft speaks: under rule 1
    # no such token is ever accepted (R-6.4-RULE1), under rule 2 it has no draft probability, so q[i](x[i]) is zero
    # (R-6.4-ZERO-Q).
    Row("P1-MSG-2/TOKEN-RANGE", "P1-MSG-2, P1-HASH-2",
        "Receivers reject malformed CBOR, wrong types, out-of-range values, and missing required members with 400 "
        "(`sdcp-bad-message`, a profile problem type) ... `V`, the vocabulary size used for `q_rows`, is the model "
        "config's `vocab_size`.",
        Level.PROFILE, "any", refusal=refusal(ProblemType.BAD_MESSAGE, ProblemType.BAD_PROPOSAL),
        not_judged_by=(("router", "a router knows no vocabulary (P1-RTR-2 gives it the drafters' model digests "
                                  "only): it relays a prompt, and the verifier it opens the session at judges it"),)),
    # ------------------------------------------------------------------ §6.8 appends to a commit log: the verifier's
    # commit records, the router's fences
    Row("R-6.8-CONDITIONAL", "6.8",
        "The commit_log is an MLC object to which records are appended with a conditional operation, for example an "
        "HTTP PUT with If-Match on the current entity tag [RFC9110], so that an append succeeds only if no other "
        "append has happened since the writer last read the log.",
        Level.MUST, "any",
        not_judged_by=(("drafter", "a drafter never writes a commit log"),)),
    # ------------------------------------------------------------------ status reports (§6.1): drafters and verifiers
    Row("R-6.1-STATUS-INTERVAL", "6.1", "Each instance reports status at intervals shorter than its ttl_ms.",
        Level.MUST, "any",
        not_judged_by=(("router", "a router is not an instance: it receives status reports and sends none (the "
                                  "router suite judges what it makes of them under P1-RTR-2)"),)),
)

__all__ = ["MTLS", "ROWS"]
