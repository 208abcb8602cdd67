"""Where the draft and profile leave the reference verifier a choice, decided once here.

Each decision has an ID (``D-VER-n``) that the code cites where it applies and
the closing notes list for folding into the profile.
"""

from __future__ import annotations

from sdcp_conformance.protocol.problems import ProblemType

TOKEN_OUT_OF_VOCABULARY = ProblemType.BAD_PROPOSAL
"""D-VER-1: a proposed token >= V is 422 sdcp-bad-proposal, under either rule.
The CDDL allows any uint; such a proposal is inconsistent with every draft
distribution over the vocabulary (§5.2: rows of V values)."""

PROMPT_OUT_OF_VOCABULARY = ProblemType.BAD_MESSAGE
"""D-VER-2: a prompt token >= V is 400 sdcp-bad-message, like the empty
prompt of P1-SES-1."""

RESUME_MISMATCH = ProblemType.BAD_MESSAGE
"""D-VER-3: a session-open whose resume.committed or resume.digest disagrees
with its committed_tokens object (recomputed over d[0]) is 400
sdcp-bad-message: the verifier cannot resume from an inconsistent prefix."""

RESUME_RESETS_COUNTERS = True
"""D-VER-4: after a failover (§6.9) the new verifier starts c, g and j at
zero: the commit log does not carry them, and the draft's resume member names
only round, committed, digest and caches."""

ASSIGNMENT_ENDS_SELF_DECODING = True
"""D-VER-6: a PUT sessions/{id}/drafter that arrives while the session is
self-decoding ends the self-decoding period: the router's choice wins."""

FENCED_SESSION_PROBLEM = ProblemType.STALE_EPOCH
"""D-VER-7: once an append was fenced (§6.3 "stop serving the session"), every
request about the session gets 409 sdcp-stale-epoch, output reads included."""

COMMIT_LOG_UNAVAILABLE_STATUS = 503
"""D-VER-8: a commit-log append that fails for any reason other than a fence
abandons the round (no verdict is stored) and answers 503, which P1-DRF-5
makes the drafter retry with the identical body."""

M_INIT_ZERO = ProblemType.BAD_MESSAGE
"""D-VER-5: an assignment with m_init 0 is 400 sdcp-bad-message at the
verifier too, as P1-DRF-2 has the drafter answer."""

SERVES_SEVERAL_MODELS = True
"""D-VER-9: one reference verifier may serve several target models (the
conformance harness uses ``bigram`` and ``ctx`` together); each session is
scored by the model whose SHA-256 its contract's ``target`` names, and a
contract naming none of them is refused (§6.1)."""

FORGET_AFTER_THE_PASS = True
"""D-VER-10: dropping a session's cached prefix (a reopened or replaced
session) is done by the model's batcher between scoring passes, never beside
one: the model is thread-confined, and a pass then running may hold an item
of that very session, whose cache would be dropped under it (the pass fails,
and with it every other session's item in it)."""
