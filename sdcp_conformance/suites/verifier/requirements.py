"""Every requirement sentence of the draft (MUST, MUST NOT, REQUIRED, SHOULD, SHOULD NOT, RECOMMENDED).

Extracted mechanically (a test re-runs the extraction over the shipped draft
and checks that this list holds every sentence it finds), then decided by hand:
``binds`` says which party the sentence binds. Sentences that bind the
verifier are this suite's; the others carry the reason no verifier case covers
them. :mod:`sdcp_conformance.report.coverage` maps each requirement to the
cases whose ``quote`` contains one of its ``match`` passages.

This module declares no cases: the suite package skips it when importing its
case modules.
"""

from __future__ import annotations

from dataclasses import dataclass

from sdcp_conformance.harness.case import Level

VERIFIER = "verifier"


@dataclass(frozen=True)
class Requirement:
    """One requirement sentence of the draft and how the suite covers it."""

    id: str
    """Stable forever, ``R-<section>-<NN>``."""
    section: str
    level: Level
    sentence: str
    """Verbatim from the draft (whitespace-insensitive)."""
    binds: str = VERIFIER
    """The party the sentence binds: verifier, drafter, router or MLC."""
    match: tuple[str, ...] = ()
    """Passages of the sentence a covering case quotes (any one suffices); default: the sentence itself."""
    reason: str = ""
    """Why no case of this suite covers it (required when none does)."""

    @property
    def passages(self) -> tuple[str, ...]:
        return self.match or (self.sentence,)


_DRAFTER = "binds the drafter, not the verifier: the drafter suite's to check"
_ROUTER = "binds the router, not the verifier: the router suite's to check"

REQUIREMENTS: tuple[Requirement, ...] = (
    Requirement(
        "R-4.1-01", "4.1", Level.MUST,
        'A contract that contains a key not defined by this document MUST be rejected with problem type '
        '"sdcp-bad-contract", so that all parties compute the contract digest over the same content.',
        match=("A contract that contains a key not defined by this document MUST be rejected",),
    ),
    Requirement(
        "R-5.1-01", "5.1", Level.REQUIRED,
        "HTTP/2 [RFC9113] or HTTP/3 [RFC9114] over TLS 1.3 [RFC8446] with mutual certificate authentication "
        "is REQUIRED.",
        match=("over TLS 1.3 [RFC8446] with mutual certificate authentication is REQUIRED",),
    ),
    Requirement(
        "R-5.2-01", "5.2", Level.MUST,
        "Unknown map keys MUST be ignored, except in the contract (Section 4.1).",
        match=("Unknown map keys MUST be ignored",),
    ),
    Requirement(
        "R-5.2-02", "5.2", Level.MUST,
        'A receiver that encounters an unknown action value MUST treat it as "fail".',
        # Binds every receiver; the verifier receives action values only as the contract's fallback entries.
        match=("A receiver that encounters an unknown action value MUST treat it as",),
    ),
    Requirement(
        "R-5.2-03", "5.2", Level.MUST,
        "The drafter MUST sample each proposed token from exactly the row it publishes.",
        binds="drafter", reason=_DRAFTER,
    ),
    Requirement(
        "R-6.1-01", "6.1", Level.MUST,
        "The verifier validates the contract (it MUST refuse a contract whose target digest does not match its "
        "model), computes or loads the KV cache of the prompt, computes d[0], and answers with session-state "
        "(round 0, committed 0).",
        match=("it MUST refuse a contract whose target digest does not match its model",),
    ),
    Requirement(
        "R-6.1-02", "6.1", Level.MUST_NOT,
        "The router MUST NOT assign sessions to an instance whose status has expired.",
        binds="router", reason=_ROUTER,
    ),
    Requirement(
        "R-6.2-01", "6.2", Level.MUST_NOT,
        "A drafter MUST NOT have more than one outstanding proposal per session.",
        binds="drafter", reason=_DRAFTER,
    ),
    Requirement(
        "R-6.2-02", "6.2", Level.RECOMMENDED,
        "The following rule is RECOMMENDED.",
        binds="drafter", reason=_DRAFTER + " (the choice of M is local to the drafter)",
    ),
    Requirement(
        "R-6.3-01", "6.3", Level.MUST,
        "Authorization: the authenticated client MUST be the drafter named in the latest assignment the "
        'verifier received for the session; otherwise respond 403 with problem type "sdcp-not-assigned".',
        match=("the authenticated client MUST be the drafter named in the latest assignment",),
    ),
    Requirement(
        "R-6.3-02", "6.3", Level.MUST,
        "Preconditions of the rule: if the acceptance rule needs draft probabilities, the verifier MUST have "
        "obtained the rows for every proposed position, and checked that q[i](x[i]) is not zero for every "
        "position, before drawing any random value.",
        match=("the verifier MUST have obtained the rows for every proposed position",
               "checked that q[i](x[i]) is not zero for every position, before drawing any random value"),
    ),
    Requirement(
        "R-6.3-03", "6.3", Level.MUST,
        "If the append fails because the log has been fenced, the verifier MUST discard the round, release no "
        "output, and stop serving the session.",
        match=("the verifier MUST discard the round, release no output, and stop serving the session",),
    ),
    Requirement(
        "R-6.3-04", "6.3", Level.MUST,
        "The commit and the recording of the verdict MUST be atomic with respect to concurrent proposals for "
        "the session.",
        match=("The commit and the recording of the verdict MUST be atomic",),
    ),
    Requirement(
        "R-6.3-05", "6.3", Level.MUST,
        "After the verdict, the drafter MUST discard its draft state for proposed positions beyond the accepted "
        "ones and MAY release its leases.",
        binds="drafter", reason=_DRAFTER,
    ),
    Requirement(
        "R-6.4-01", "6.4", Level.MUST,
        "The proposal MUST carry q_rows; a proposal for which q[i](x[i]) is zero is rejected, before any random "
        'draw, with problem type "sdcp-bad-proposal".',
        match=("The proposal MUST carry q_rows",
               "a proposal for which q[i](x[i]) is zero is rejected, before any random draw"),
    ),
    Requirement(
        "R-6.4-02", "6.4", Level.MUST,
        "The verifier's random values MUST be independent of those the drafter used.",
    ),
    Requirement(
        "R-6.4-03", "6.4", Level.MUST_NOT,
        "Drafters MUST NOT use this derivation for their own sampling.",
        binds="drafter", reason=_DRAFTER,
    ),
    Requirement(
        "R-6.5.1-01", "6.5.1", Level.SHOULD,
        "It SHOULD restore m_cap gradually (for example by one per round) when rounds are no longer low and its "
        "load permits.",
        match=("It SHOULD restore m_cap gradually",),
    ),
    Requirement(
        "R-6.5.2-01", "6.5.2", Level.MUST,
        "The fallback list MUST contain only the actions reduce, switch, self_decode, and fail; j persists "
        "across a change of drafter and across a self-decoding period.",
        match=("The fallback list MUST contain only the actions reduce, switch, self_decode, and fail",),
    ),
    Requirement(
        "R-6.5.2-02", "6.5.2", Level.MUST,
        "The fallback list MUST contain only the actions reduce, switch, self_decode, and fail; j persists "
        "across a change of drafter and across a self-decoding period.",
        match=("j persists across a change of drafter and across a self-decoding period",),
    ),
    Requirement(
        "R-6.5.2-03", "6.5.2", Level.MUST,
        "The verifier sends an event to the router, which assigns the session to another drafter with a "
        "permitted model; the current drafter MUST stop proposing for the session.",
        binds="drafter",
        match=("the current drafter MUST stop proposing for the session",),
        reason=_DRAFTER + "; the verifier's side (the event, and 403 to the old drafter) is P1-EVT-1's",
    ),
    Requirement(
        "R-6.8-01", "6.8", Level.MUST,
        "A commit record appended by a verifier MUST carry the session's current epoch and follow the last "
        "record it wrote.",
        match=("A commit record appended by a verifier MUST carry the session's current epoch",),
    ),
    Requirement(
        "R-6.8-02", "6.8", Level.MUST,
        "A fence record carries only an epoch; after a fence record with epoch E+1, appends carrying an epoch "
        "lower than E+1 MUST fail.",
        binds="MLC",
        match=("appends carrying an epoch lower than E+1 MUST fail",),
        reason="binds the MLC (the harness plays it, enforcing and non-enforcing, P1-LOG-2); the verifier's "
               "reaction to a fenced append is R-6.3-03",
    ),
    Requirement(
        "R-6.8-03", "6.8", Level.MUST,
        "If the MLC cannot enforce this rule, the verifier MUST read the log after its conditional append and "
        "treat its append as failed if a fence record with a higher epoch precedes its own record.",
        match=("the verifier MUST read the log after its conditional append",),
    ),
)


__all__ = ["REQUIREMENTS", "VERIFIER", "Requirement"]
