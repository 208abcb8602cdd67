"""What the played verifier checks on every proposal it receives, from first principles.

Pure functions of the session's account (:class:`~.played_session.PlayedSession`),
the arrival and a few facts about the drafter; each finding is an
:class:`~.played_session.Observation` naming its row, which the case context
(or the fuzzer) routes to the judge. Expectations are the harness's own:
round, base and base_digest are what the harness last told the drafter, the
digest chain is recomputed from the committed tokens (§4.2), greedy tokens
come from the draft model's closed form, or its float32 runtime within
D-JUDGE-GREEDY-TOLERANCE (:mod:`sdcp_conformance.oracle.greedy`),
and the q_rows object is read from the harness's own MLC.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from sdcp_conformance.harness.roles.played_cache import CacheEvent
from sdcp_conformance.harness.roles.played_session import Arrival, Observation, Outcome, PlayedSession
from sdcp_conformance.oracle.greedy import greedy_any_tie, greedy_continuation, greedy_tolerance
from sdcp_conformance.protocol.codec import decode, encode
from sdcp_conformance.protocol.messages import ROLE_DRAFTER, Proposal
from sdcp_conformance.protocol.problems import SDCP_MEDIA_TYPE
from sdcp_conformance.transport.types import media_type

ROW_SUM_TOLERANCE = 1e-3
"""D-JUDGE-D4: a published row is a distribution when its binary32 entries sum to 1 within this (V = 128 entries
of binary32 carry ~1e-7 relative error each; a row normalised in bfloat16 is off by at most ~4e-3 in the worst
case, which is still far from a row that is not a distribution at all)."""


@dataclass(frozen=True)
class DrafterFacts:
    """What the checks need to know about the drafter under test and the harness around it."""

    iut_uri: str
    vocab_size: int
    draft_model: str
    proposal_timeout_s: float | None
    cache_events: Callable[[str], list[CacheEvent]]
    """Cache events for an object (by URI)."""
    stored: Callable[[str], bytes | None]
    """An object's bytes as the harness's MLC holds it now."""


def review(session: PlayedSession, arrival: Arrival, facts: DrafterFacts) -> list[Observation]:
    """Every observation on ``arrival``, judged against the session's state when it arrived."""
    found: list[Observation] = []
    found += _encoding(arrival)
    proposal = arrival.proposal
    if proposal is None:
        return [*found, Observation("R-5.2-PROPOSAL", f"the body of POST proposals is not a proposal: {arrival.error}",
                                    "a proposal (§5.2)", arrival.error)]
    found += _members(session, arrival, proposal, facts)
    found += _exchange(session, arrival)
    if session.stopped is not None:
        row, why = session.stopped
        found.append(Observation(row, f"a proposal for round {proposal.round} arrived after {why}",
                                 "no proposal for the session", arrival.describe()))
    found += _position(session, proposal)
    found += _forged_resync(session, proposal)
    if session.rule == 1:
        found += _rule1(session, proposal, facts)
    else:
        found += _rule2(session, arrival, proposal, facts)
    return found


def _encoding(arrival: Arrival) -> list[Observation]:
    found = []
    media = media_type(arrival.content_type)
    if media != SDCP_MEDIA_TYPE:
        found.append(Observation("R-5.1-MEDIA-TYPE", f"the proposal is labelled {arrival.content_type!r}",
                                 SDCP_MEDIA_TYPE, str(arrival.content_type)))
    if arrival.proposal is not None:
        try:
            deterministic = encode(decode(arrival.body)) == arrival.body
        except Exception:
            deterministic = False
        if not deterministic:
            found.append(Observation("P1-MSG-1/DETERMINISTIC", "the proposal is not in core deterministic encoding",
                                     "RFC 8949 §4.2.1 encoding", arrival.body[:32].hex()))
    return found


def _members(session: PlayedSession, arrival: Arrival, proposal: Proposal, facts: DrafterFacts) -> list[Observation]:
    found = []
    if proposal.epoch != session.epoch:
        found.append(Observation("R-5.2-PROPOSAL", f"the proposal carries epoch {proposal.epoch}, not the assignment's "
                                 f"{session.epoch}", str(session.epoch), str(proposal.epoch)))
    if proposal.drafter != facts.iut_uri:
        # D-JUDGE-D19: a member that differs from the base URI only by its trailing "/" still names this drafter
        # (§5.2: "drafter base URI"); that the "/" is part of it is P1-ID-1's, so only the profile is broken.
        slash_only = proposal.drafter.rstrip("/") == facts.iut_uri.rstrip("/")
        found.append(Observation("P1-ID-1/PROPOSAL" if slash_only else "R-5.2-PROPOSAL",
                                 f"the proposal's drafter member {proposal.drafter!r} is not the drafter's base URI"
                                 + (" (only the trailing '/' differs, which P1-ID-1 includes)" if slash_only else ""),
                                 facts.iut_uri, proposal.drafter))
    if arrival.peer != proposal.drafter:
        found.append(Observation("P1-ID-1/PROPOSAL", f"the client certificate's URI SAN {arrival.peer!r} is not the "
                                 "proposal's drafter member", proposal.drafter, str(arrival.peer)))
    if any(token >= facts.vocab_size for token in proposal.tokens):
        found.append(Observation("R-5.2-PROPOSAL", "a proposed token lies outside the shared vocabulary (P1-DRF-3)",
                                 f"ids below {facts.vocab_size}", str(list(proposal.tokens))))
    status = proposal.status
    if status.role != ROLE_DRAFTER:  # the CDDL's "role: 1 / 2, ; 1 drafter, 2 verifier"
        found.append(Observation("R-5.2-STATUS-MEMBER", f"the status member names role {status.role}",
                                 "role 1 (drafter)", f"role {status.role}"))
    if status.instance != facts.iut_uri:  # D-JUDGE-STATUS-INSTANCE: the value is the profile's
        found.append(Observation("P1-ID-1/STATUS-INSTANCE", f"the status member names instance {status.instance!r}, "
                                 "not the drafter's base URI", facts.iut_uri, status.instance))
    return found


def _exchange(session: PlayedSession, arrival: Arrival) -> list[Observation]:
    """One outstanding proposal (§6.2), identical retries (§6.9, P1-DRF-5), final 4xx (P1-DRF-5)."""
    found = []
    earlier = session.open
    if earlier is not None and earlier.proposal is not None:
        if arrival.key != earlier.key:
            if earlier.outcome is Outcome.PENDING:
                found.append(Observation("R-6.2-ONE-OUTSTANDING", f"proposal {arrival.describe()} arrived while "
                                         f"{earlier.describe()} was still unanswered", "one outstanding proposal",
                                         "two"))
            else:
                found.append(Observation("R-6.9-RETRY", f"after {earlier.describe()} got no verdict "
                                         f"({earlier.answer}), the drafter sent a different proposal "
                                         f"{arrival.describe()} instead of retrying it",
                                         "the same proposal again", arrival.describe()))
        elif arrival.body != earlier.body:
            found.append(Observation("P1-DRF-5/RETRY", f"the retry {arrival.describe()} is not the identical body "
                                     "(it differs in its status member)", "the identical body", "another body"))
    refused = session.finals.get(arrival.key)
    if refused is not None:
        # A status with no SDCP problem type (its text is the bare code) is final by its class (§5.1), a listed
        # one by P1-DRF-5: the same row whether the resend comes within the case's quiet window or after it.
        row = "R-5.1-BY-CLASS" if refused.isdigit() else "P1-DRF-5/FINAL"
        found.append(Observation(row, f"the drafter sent {arrival.describe()} again after it was "
                                 f"refused with {refused}", "no resend after a 4xx", arrival.describe()))
    return found


def _position(session: PlayedSession, proposal: Proposal) -> list[Observation]:
    """Round, base, base_digest (§6.2, §4.2) and M (§6.2, P1-CTL-1) against what the drafter was told."""
    learned = session.learned
    if learned is None:
        return []
    found = []
    if proposal.round != learned.round + 1:
        found.append(Observation("R-6.2-ROUND", f"round {proposal.round} is not the last verdict's round plus one "
                                 f"({learned.source} round {learned.round})", str(learned.round + 1),
                                 str(proposal.round)))
    if (proposal.base, proposal.base_digest) != (learned.committed, learned.digest):
        found.append(Observation("R-6.2-BASE", f"base {proposal.base} / base_digest {proposal.base_digest.hex()[:16]}… "
                                 f"is not what the drafter last learned ({learned.source}: {learned.committed} / "
                                 f"{learned.digest.hex()[:16]}…)", f"{learned.committed} {learned.digest.hex()}",
                                 f"{proposal.base} {proposal.base_digest.hex()}"))
        on_chain = proposal.base <= len(session.output) and session.digest_at(proposal.base) == proposal.base_digest
        if not on_chain:
            found.append(Observation("R-4.2-CHAIN", f"(base {proposal.base}, base_digest "
                                     f"{proposal.base_digest.hex()[:16]}…) is not a prefix of the committed chain: "
                                     "d[n] recomputed from the committed tokens differs", "a (n, d[n]) of the session",
                                     f"{proposal.base} {proposal.base_digest.hex()}"))
    m = len(proposal.tokens)
    if not 1 <= m <= session.limit:
        what = "m_init of the assignment" if learned.source == "assignment" else "m_cap of the last verdict"
        found.append(Observation("R-6.2-M-BOUNDS", f"M = {m} is outside 1..min(m_max, {what}) = 1..{session.limit}",
                                 f"1..{session.limit}", str(m)))
    return found


def _forged_resync(session: PlayedSession, proposal: Proposal) -> list[Observation]:
    """P1-DRF-6: committed tokens read back that do not reproduce the state's digest must not be adopted."""
    if session.forged_after is None or proposal.base <= session.forged_after:
        return []
    return [Observation("P1-DRF-6/RESYNC", f"the drafter proposes on base {proposal.base}, beyond the "
                        f"{session.forged_after} tokens it could check: the output it read does not reproduce the "
                        "state's digest", f"no proposal beyond base {session.forged_after}", str(proposal.base))]


def _rule1(session: PlayedSession, proposal: Proposal, facts: DrafterFacts) -> list[Observation]:
    found = []
    if proposal.q_rows is not None:
        found.append(Observation("P1-DRF-4", "a rule-1 proposal carries q_rows", "no q_rows", proposal.q_rows))
    if proposal.base <= len(session.output) and session.digest_at(proposal.base) == proposal.base_digest:
        context = session.context(proposal.base)
        expected = greedy_continuation(facts.draft_model, context, len(proposal.tokens))
        if list(proposal.tokens) != expected and not _within_tolerance(facts.draft_model, context, proposal.tokens):
            found.append(Observation("P1-DRF-4", f"the proposed tokens are not the draft model's greedy tokens after "
                                     f"the committed prefix of {proposal.base}", str(expected),
                                     str(list(proposal.tokens))))
    return found


def _within_tolerance(model: str, context: Sequence[int], tokens: Sequence[int]) -> bool:
    """D-JUDGE-GREEDY-TOLERANCE: a model without a closed form is judged greedy within the numeric tolerance."""
    return greedy_tolerance(model) > 0 and greedy_any_tie(model, context, tokens)


def _rule2(session: PlayedSession, arrival: Arrival, proposal: Proposal, facts: DrafterFacts) -> list[Observation]:
    if proposal.q_rows is None:
        return [Observation("R-6.4-CARRY-Q-ROWS", "a rule-2 proposal carries no q_rows", "q_rows", "none")]
    uri = proposal.q_rows
    found = []
    puts = [event for event in facts.cache_events(uri) if event.method == "PUT" and event.ok]
    before = [event for event in puts if event.sequence < arrival.sequence]
    if not before:
        found.append(Observation("R-6.2-ARTIFACTS", f"no successful PUT of {uri} to the MLC preceded the proposal",
                                 "q_rows written before the proposal", f"{len(puts)} PUT(s), none before"))
    else:
        found += _lease(before[-1], facts)
    data = facts.stored(uri)
    if data is None:
        found.append(Observation("R-6.2-ARTIFACTS", f"{uri} is not in the MLC when the proposal arrives",
                                 "q_rows fetchable", "missing"))
        return found
    found += _rows(arrival, proposal, data, facts.vocab_size)
    return found


def _lease(put: CacheEvent, facts: DrafterFacts) -> list[Observation]:
    if put.lease_ms is None:
        return [Observation("P1-MLC-3/LEASE", f"the PUT of {put.path} carries no SDCP-Lease header "
                            f"({put.lease_header!r})", "SDCP-Lease: <ms>", str(put.lease_header))]
    timeout = facts.proposal_timeout_s
    if timeout is not None and put.lease_ms < 1000 * timeout:
        return [Observation("P1-DRF-8/LEASE", f"the lease of {put.lease_ms} ms is shorter than the drafter's proposal "
                            f"timeout of {timeout:g} s", f">= {1000 * timeout:.0f} ms", f"{put.lease_ms} ms")]
    return []


def _rows(arrival: Arrival, proposal: Proposal, data: bytes, vocab: int) -> list[Observation]:
    """§5.2: M rows of V binary32 LE, each the distribution its token was sampled from; q[i](x[i]) > 0."""
    m = len(proposal.tokens)
    if len(data) != 4 * m * vocab:
        return [Observation("R-5.2-Q-ROWS", f"the q_rows object holds {len(data)} bytes, not M x V x 4 = "
                            f"{m} x {vocab} x 4", str(4 * m * vocab), str(len(data)))]
    rows = np.frombuffer(data, dtype="<f4").astype(np.float64).reshape(m, vocab)
    arrival.rows = rows
    found = []
    if not np.isfinite(rows).all() or (rows < 0).any():
        found.append(Observation("R-5.2-Q-ROWS", "a q_rows row holds negative, NaN or infinite values",
                                 "distributions", "not a distribution"))
        return found
    sums = rows.sum(axis=1)
    off = [int(i) + 1 for i in np.flatnonzero(np.abs(sums - 1.0) > ROW_SUM_TOLERANCE)]
    if off:
        found.append(Observation("R-5.2-Q-ROWS", f"q_rows rows {off} do not sum to 1 (sums {sums.round(6).tolist()})",
                                 "each row a distribution", str(sums.round(6).tolist())))
    zero = [i + 1 for i, token in enumerate(proposal.tokens) if rows[i, token] <= 0.0]
    if zero:
        found.append(Observation("R-5.2-EXACT-ROW", f"q[i](x[i]) is zero at positions {zero}: a token its own "
                                 "published row cannot produce", "q[i](x[i]) > 0", f"zero at {zero}"))
    return found


__all__ = ["ROW_SUM_TOLERANCE", "DrafterFacts", "review"]
