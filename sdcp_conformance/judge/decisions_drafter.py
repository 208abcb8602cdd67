"""Judging decisions that shape a drafter's verdicts: what the played verifier waits for, forgives and refuses.

Data only, gathered into :data:`sdcp_conformance.judge.decisions.DECISIONS`: each entry is
``(id, reading, rows, where)`` as :class:`~sdcp_conformance.judge.decisions.Decision` names them.
"""

from __future__ import annotations

STOP_ROWS = ("R-6.5.2-STOP-ON-SWITCH", "R-6.5.2-STOP-ON-SELF-DECODE", "R-6.5.2-STOP-ON-END", "P1-DRF-9")

ENTRIES: tuple[tuple[str, str, tuple[str, ...], str], ...] = (
    # ------------------------------------------------------------------ levels of the drafter's rows
    ("D-JUDGE-D1",
     "§6.2's keyword is MAY, but what it allows is bounded: a speculative proposal \"sends it only after the "
     "verdict confirms that assumption\". Sending one otherwise is judged at MUST.",
     ("R-6.2-SPECULATIVE",), "judge.requirements.drafter"),
    ("D-JUDGE-D2",
     "The verdict actions self_decode, finish and fail say that the session is no longer the drafter's (the "
     "verifier decodes it itself, or it has ended): proposing on after one of them is judged like proposing after "
     "switch, at MUST.",
     ("R-6.5.2-STOP-ON-SELF-DECODE", "R-6.5.2-STOP-ON-END"), "judge.requirements.drafter"),
    ("D-JUDGE-D3",
     "No sentence makes a drafter draft under the current sampling profile: §5.2's assignment carries it "
     "(\"current profile, if updated\") for the drafter's benefit, so whether the rows it publishes follow an "
     "assignment's sampling member is observed only (MAY).",
     ("R-5.2-SAMPLING-MEMBER",), "judge.requirements.drafter"),
    ("D-JUDGE-D11",
     "After every continue (and reduce) verdict a proposal must follow; it is judged wherever the harness waits "
     "for one: five quiet windows, at least 2 s (10 s for a session's first proposal).",
     ("R-6.5.2-CONTINUE",), "judge.requirements.drafter"),
    # ------------------------------------------------------------------ how long the harness waits
    ("D-JUDGE-D5",
     "\"Stops proposing\" is judged over a quiet window: four times the 90th percentile of the "
     "verdict-to-next-proposal times seen in this certification (the last 200), within 0.6 s and 5 s (1.5 s "
     "before any was seen); times measured while a case slows the drafter down on purpose are not its pace. A "
     "proposal inside the window is refused as a verifier would (403 after switch or self_decode, 410 after "
     "finish or fail) and judged; a proposal that must come is waited for five windows, at least 2 s.",
     (*STOP_ROWS, "R-6.5.2-CONTINUE"), "harness.roles.played_verifier"),
    ("D-JUDGE-D9",
     "The drafter fuzzer's quiet window is a fixed 0.2 s, shorter than the suite's (D-JUDGE-D5): a campaign "
     "waits it after every stop of thousands of examples, and a drafter that goes on proposing does so within "
     "milliseconds of the verdict, so a campaign against a slow drafter finds fewer stop bugs, never false "
     "ones. A step waits for the proposal it answers at least 1 s, or 2.5 quiet windows of the drafter's pace.",
     (*STOP_ROWS, "P1-DRF-6/STOP"), "fuzz.drafter_executor"),
    # ------------------------------------------------------------------ lost and refused proposals (§6.9, P1-DRF-5)
    ("D-JUDGE-D7",
     "\"With backoff\" (P1-DRF-5) is judged as no more than one attempt per 50 ms on average over an outage "
     "(5 s in which every attempt is answered 503).",
     ("P1-DRF-5/RETRY",), "suites.drafter.lost"),
    ("D-JUDGE-D14",
     "A 429 is a 4xx by class (§5.1: \"clients handle unlisted status codes by class\"), and a 4xx is final; only "
     "P1-DRF-5 makes a 429 a lost verdict to retry, so a drafter that stops on it deviates from the profile alone "
     "(P1-DRF-5/RETRY), not from §6.9.",
     ("P1-DRF-5/RETRY", "R-6.9-RETRY"), "suites.drafter.lost"),
    ("D-JUDGE-D17",
     "A final answer (a 4xx) that reached no one, because the drafter had given up on the request (its own "
     "timeout, a reset stream) before it was given, is not final: the drafter's identical retry gets it, and "
     "only then is it final. That retry is not judged as a resend after a 4xx (P1-DRF-5) or as a proposal after "
     "a stop: it is what P1-DRF-5 has a drafter do when no answer came.",
     ("P1-DRF-5/FINAL", "P1-DRF-5/RETRY", *STOP_ROWS), "harness.roles.played_verifier"),
    ("D-JUDGE-D13",
     "When a case ends its sessions are closed: a proposal for a session of an earlier case gets 410 "
     "sdcp-session-closed (the session is over for the harness), one for a session the harness never played 403 "
     "sdcp-not-assigned (§6.3 step 1). Both are final for the drafter, so no case inherits another's traffic.",
     ("P1-DRF-5/FINAL",), "harness.roles.played_verifier"),
    # ------------------------------------------------------------------ assignments replaced (P1-DRF-7)
    ("D-JUDGE-D10",
     "A proposal that follows the replaced assignment exactly and arrives within 1 s of the answer that accepted "
     "the new one was on its way before the drafter received it (P1-DRF-7 abandons it \"first\", but the bytes "
     "may already be on the wire): it is refused as a verifier would refuse it (409 sdcp-stale-epoch or "
     "sdcp-stale-base) and not judged.",
     ("P1-DRF-7/REPLACE", "R-6.2-BASE", "R-6.2-ONE-OUTSTANDING"), "harness.roles.played_verifier"),
    ("D-JUDGE-D-LATE-LIMIT",
     "When the drafter proposed under its assignment after the harness had answered another proposal with a "
     "verdict (a late proposal refused as D-JUDGE-D10 says), that verdict may have answered a request the "
     "drafter abandoned (P1-DRF-7), so its m_cap may never have reached it: until the next verdict, M may go up "
     "to the assignment's limit as well (§6.2: \"m_init before the first\").",
     ("R-6.2-M-BOUNDS",), "harness.roles.played_session"),
    ("D-JUDGE-D16",
     "When an assignment's committed_tokens object does not give its digest while the verifier's output holds "
     "the right tokens, the drafter may refuse the assignment (then it must not propose) or draft from the "
     "prefix the digest names; drafting from the object's tokens is what is judged.",
     ("R-6.9-NEW-DRAFTER", "P1-DRF-4"), "suites.drafter.proposal"),
    ("D-JUDGE-D18",
     "Verdicts whose m_cap is above m_max break §6.5.1 on purpose (a faulty verifier's): a drafter that stops "
     "proposing after one breaks nothing; only a proposal with M above min(m_max, m_cap) does.",
     ("R-6.2-M-BOUNDS",), "suites.drafter.proposal"),
    # ------------------------------------------------------------------ what a proposal carries
    ("D-JUDGE-D19",
     "A proposal's drafter member that differs from the drafter's base URI only by its trailing \"/\" still "
     "names this drafter (§5.2: \"drafter base URI\"); that the \"/\" is part of it is P1-ID-1's, so only the "
     "profile is broken (P1-ID-1/PROPOSAL); any other difference is judged on R-5.2-PROPOSAL.",
     ("P1-ID-1/PROPOSAL", "R-5.2-PROPOSAL"), "harness.roles.proposal_checks"),
    ("D-JUDGE-D4",
     "A published q_rows row is a distribution when its binary32 entries sum to 1 within 1e-3 (V = 128 entries "
     "of binary32 carry about 1e-7 relative error each); a row further off is judged on R-5.2-Q-ROWS.",
     ("R-5.2-Q-ROWS",), "harness.roles.proposal_checks"),
    ("D-JUDGE-D20",
     "When no proposal follows a stale-base whose state carries an unknown member, the case sends the same "
     "stale-base without it in another session: if that one is not followed either, the drafter does not "
     "resynchronise at all (P1-DRF-6/RESYNC) and whether it ignores unknown members cannot be told; only if it "
     "is followed is the unknown member blamed (R-5.2-UNKNOWN-KEYS).",
     ("R-5.2-UNKNOWN-KEYS", "P1-DRF-6/RESYNC"), "suites.drafter.resync"),
    # ------------------------------------------------------------------ greedy drafting and kept state (rule 1)
    ("D-JUDGE-GREEDY-TOLERANCE",
     "With a model without a closed form, a token counts as greedy when its logit is within 0.25 of the largest: "
     "another runtime computes other logits (mock_models/README.md measured at most 0.102 between bfloat16 and "
     "float32 for one logit, so two logits that swap places differ by about 0.2 at most). The closed-form "
     "bigram models are exact in either precision: only exact ties count there.",
     ("P1-DRF-4", "R-6.3-DISCARD"), "oracle.greedy"),
    ("D-JUDGE-KEPT-STATE",
     "Kept draft state (§6.3's MUST discard) is blamed only on its own evidence: the next proposal's first token "
     "is a greedy continuation of a kept context (the drafter's own tokens up to a rejected position, or those "
     "followed by the additional token) and not of the committed prefix. A proposal that continues neither was "
     "drafted from some other prefix: under rule 1 that is P1-DRF-4's deviation, not §6.3's.",
     ("R-6.3-DISCARD", "P1-DRF-4"), "suites.drafter.discard"),
    # ------------------------------------------------------------------ sampling from the published row (rule 2)
    ("D-JUDGE-D6",
     "In the sampling cases the played verifier accepts every token and emits as the additional token one of "
     "the 8 tokens after which the draft row and the target row differ most (KL(p || q)), so the first position "
     "of every proposal is drawn where a drafter sampling the target's p instead of its row is most visible.",
     ("R-5.2-EXACT-ROW", "R-6.4-NOT-HMAC"), "oracle.drafter_simulation"),
    ("D-JUDGE-D12",
     "The sequential sampling tests allow an entry-wise relative tolerance of 2^-10 (twice half precision's "
     "rounding) on the law a token is drawn from, around its published row, so a drafter that draws from its "
     "own binary64 or half-precision distribution and publishes it rounded to binary32 is within the null; it "
     "costs the test 2^-10 nats per draw.",
     ("R-5.2-EXACT-ROW", "R-6.4-NOT-HMAC"), "oracle.drafter_sampling"),
)

__all__ = ["ENTRIES", "STOP_ROWS"]
