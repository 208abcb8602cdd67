"""Judging decisions that shape every role's verdicts: time, lost answers, the run, transport, messages, status.

Data only, gathered into :data:`sdcp_conformance.judge.decisions.DECISIONS`: each entry is
``(id, reading, rows, where)`` as :class:`~sdcp_conformance.judge.decisions.Decision` names them.
"""

from __future__ import annotations

ENTRIES: tuple[tuple[str, str, tuple[str, ...], str], ...] = (
    # ------------------------------------------------------------------ time (P1-JUDGE-5)
    ("D-JUDGE-TIME-1",
     "A request's deadline is the target's request_timeout_s or four times the 90th percentile of the IUT's "
     "last 64 answer times in this run, whichever is longer (at most twelve times request_timeout_s): a "
     "deadline follows the IUT's own pace, measured from the sanity case on (P1-JUDGE-5).",
     ("P1-JUDGE-5", "R-5.1-RESOURCES"), "harness.patience"),
    ("D-JUDGE-TIME-2",
     "A deadline that comes while the harness's own event loop could not run (its CPU work, or a machine "
     "that gave it none) is moved on by that stall: if the harness is the bottleneck, it waits, it does not "
     "judge (P1-JUDGE-5). So is the wait for a status report due, and the gap between two reports' arrivals "
     "is shortened by the stall in between (a report is stamped when the harness's loop gets to it).",
     ("P1-JUDGE-5", "R-6.1-STATUS-INTERVAL"), "harness.patience"),
    ("D-JUDGE-TIME-3",
     "A case that missed a deadline (or a 429/503, D-JUDGE-TIME-4) and did not pass runs again, alone, after "
     "the other cases, with every deadline and its own timeout three times longer; its first verdict is not "
     "reported. Missed again, the findings the misses caused become one FAILED 'too slow: no answer in N s, "
     "twice' with the stage, beside the findings that do not come from time (P1-JUDGE-5).",
     ("P1-JUDGE-5", "R-5.1-RESOURCES"), "harness.runner"),
    ("D-JUDGE-TIME-4",
     "429 and 503 say the IUT is busy, not that it refuses (P1-DRF-5 has a drafter retry both): like a missed "
     "deadline, they are evidence of load and make a case that did not pass run again.",
     ("P1-JUDGE-5", "P1-DRF-5"), "harness.iut"),
    ("D-JUDGE-SLOW-IUT",
     "A case whose timeout passes while the IUT answered one of its requests within the last 15 s is given 15 s "
     "more, again and again, up to three times its timeout: a slow engine that answers is not a hung one (a "
     "verifier taking 3 s a round cannot finish a statistical case's rounds in its 120 s, and was reported as "
     "hung).",
     ("P1-JUDGE-5",), "harness.runner"),
    # ------------------------------------------------------------------ lost answers (P1-JUDGE-6)
    ("D-JUDGE-LOST-1",
     "A request whose connection ended (GOAWAY of any code, a close, a reset connection) before any of its "
     "answer came is sent again on a new connection: while the IUT answers other requests meanwhile, for up "
     "to 30 s (P1-DRF-5's retry span); while it answers nothing, three times. The case judges the answer to "
     "the resend; the losses are one INFORMATIONAL finding per case (RFC 9113 §6.8 allows a server to leave "
     "the streams its GOAWAY names unanswered).",
     ("P1-JUDGE-6", "P1-JUDGE-6/LOST-ANSWER"), "harness.iut"),
    ("D-JUDGE-LOST-2",
     "A lost answer whose resend is refused (4xx) — as the draft allows once the lost request was processed: a "
     "proposal whose lost verdict said switch is refused 403 to the same drafter afterwards (§6.3 step 1 "
     "comes before idempotency) — cannot be known. A case that then did not pass runs again alone after the "
     "others; if the same happens again it is INCOMPLETE, naming the exchange (P1-JUDGE-4, P1-JUDGE-6).",
     ("P1-JUDGE-6", "P1-JUDGE-4"), "harness.runner"),
    # ------------------------------------------------------------------ the run (P1-JUDGE-3) and its rule-2 worker
    ("D-JUDGE-SANITY",
     "P1-JUDGE-3's \"its sanity case passed\" means that its conversation ran to its end with no deviation from "
     "the draft: PASSED (or XPASS), or NON-STRICT or INFORMATIONAL after running to its end, since the profile's "
     "deviations are the report's to show (P1-JUDGE-1). A sanity case that stopped early on a finding that left "
     "nothing to check next did not pass.",
     ("P1-JUDGE-3",), "harness.runner"),
    ("D-JUDGE-PROC",
     "The rule-2 statistical tests are computed in a worker process when the harness may use at least 2 CPUs, "
     "inline otherwise (a second process on a single CPU only adds the cost of moving the rounds); the "
     "environment variable SDCP_RULE2_JUDGE (process or inline) forces either.",
     ("R-6.4-RULE2",), "harness.rule2_judging"),
    ("D-JUDGE-NICE",
     "The worker computing the rule-2 tests runs at a lower priority (niceness 10) than the harness and the IUT, "
     "whose exchanges make up a round: the test of a round is never on a round's path, so on a busy machine it "
     "takes the CPU they leave idle instead of delaying the next exchange.",
     ("R-6.4-RULE2",), "harness.rule2_judging"),
    # ------------------------------------------------------------------ transport (§5.1, P1-TLS-1)
    ("D-JUDGE-5",
     "A transport case that passes on a refusal (a handshake without a client certificate, at TLS 1.2, over "
     "HTTP/1.1) first sends a control: a valid request from a client with a valid certificate, over the "
     "harness's HTTP/2 client, must get an HTTP answer (any status); D-JUDGE-CONTROL-1 says how a control "
     "that gets none is judged.",
     ("R-5.1-MTLS", "P1-TLS-1/HANDSHAKE"), "suites.transport_judging"),
    ("D-JUDGE-CONTROL-1",
     "A transport case's valid-client control fails the case on R-5.1-MTLS only when the IUT refused that "
     "valid client's handshake (an alert, a broken-off handshake, no ALPN h2) or the harness could not "
     "verify the IUT's certificate (said so); any other failure of the control (no TCP, a stalled handshake, "
     "a hang, a reset, a GOAWAY, a bad body) makes the case INCOMPLETE, naming it (P1-JUDGE-4).",
     ("P1-JUDGE-4", "R-5.1-MTLS"), "suites.transport_judging"),
    ("D-JUDGE-REFUSED-CLIENT",
     "A case that stops on a finding while the servers of the parties the harness plays have refused the IUT's "
     "connections since the case began (a TLS handshake failed on TLS grounds, HTTP/1.1, an HTTP/2 protocol "
     "error; never a timeout or a dropped socket) is judged on the ambient row R-5.1-MTLS-CLIENT with the "
     "refusals as evidence, not on the sentence it was waiting to judge: §5.1's \"HTTP/2 or HTTP/3 over TLS 1.3 "
     "with mutual certificate authentication is REQUIRED\" is what broke. Findings already on a transport row "
     "are left as they are.",
     ("R-5.1-MTLS-CLIENT",), "harness.judging"),
    # ------------------------------------------------------------------ messages (§5.2, P1-MSG-2)
    ("D-JUDGE-1",
     "Acting on a message that is not an instance of its CDDL type breaks the message definitions of §5.2 and "
     "is FAILED; refusing it with another 4xx than the profile's 400 sdcp-bad-message deviates only from "
     "P1-MSG-2 (NON-STRICT).",
     ("R-5.2-WELL-FORMED",), "judge.requirements.common"),
    ("D-JUDGE-VOCAB",
     "A token id at or above the model's vocab_size (P1-HASH-2's V) in a prompt or a proposal (at a verifier) "
     "or in an assignment's prompt (at a drafter) is one of P1-MSG-2's \"out-of-range values\", although the "
     "CDDL says only uint: it is to be refused with 400 sdcp-bad-message (422 sdcp-bad-proposal for a proposed "
     "token), and only the profile says so (NON-STRICT), except where the draft speaks: under rule 1 no such "
     "token is ever accepted (R-6.4-RULE1), under rule 2 its q[i](x[i]) is zero (R-6.4-ZERO-Q).",
     ("P1-MSG-2/TOKEN-RANGE", "R-6.4-RULE1", "R-6.4-ZERO-Q"), "judge.requirements.common"),
    # ------------------------------------------------------------------ status reports (§6.1, §5.2, P1-RTR-1)
    ("D-JUDGE-STATUS-TTL",
     "The status-report cases wait for reports for at most 40 s, so a long ttl_ms has fewer intervals timed. "
     "When not even two intervals fit (a ttl_ms over 20000), the case judges the first report and, if nothing "
     "is wrong with it, is SKIPPED naming the ttl_ms that would let it run: a long ttl_ms is no fault, but it "
     "cannot be timed within a case.",
     ("R-6.1-STATUS-INTERVAL",), "suites.status_judging"),
    ("D-JUDGE-STATUS-INSTANCE",
     "§5.2 types a status's `instance` as a tstr and gives it no value; only the profile makes it the "
     "instance's base URI (P1-RTR-1's \"{id} ... of the instance's base URI\"). So a status report naming "
     "another instance is judged on the report's path row, and a proposal's status member naming another on "
     "P1-ID-1/STATUS-INSTANCE: profile deviations (NON-STRICT).",
     ("P1-RTR-1/DRAFTER", "P1-RTR-1/VERIFIER", "P1-ID-1/STATUS-INSTANCE"), "suites.status_judging"),
    ("D-JUDGE-D8",
     "An interval between status reports is measured between their arrivals at the harness, so it may exceed "
     "the instance's own by the transport's jitter: each gap is judged against ttl_ms plus 0.1 s.",
     ("R-6.1-STATUS-INTERVAL",), "suites.status_judging"),
    ("D-JUDGE-D15",
     "Besides each gap, the span of the reports from the second on is judged without slack: its mean gap must "
     "be under ttl_ms. Over n gaps the arrival jitter cancels but for (delay of the last - delay of the first) "
     "/ n, so an interval of ttl_ms itself, which no slack per gap tells from jitter, shows; the first report is "
     "left out, as it may have been stamped while the harness was busy with the case before.",
     ("R-6.1-STATUS-INTERVAL",), "suites.status_judging"),
)

__all__ = ["ENTRIES"]
