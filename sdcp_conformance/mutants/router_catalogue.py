"""The router mutant catalogue: named faulty variants of the reference router, one realistic bug each.

Names are stable forever: ``killers-router.json`` and the test IDs use them.
"""

from __future__ import annotations

from sdcp_conformance.mutants import router_faults as faults
from sdcp_conformance.mutants.router_base import RouterMutant
from sdcp_conformance.reference.router.app import RouterParts
from sdcp_conformance.reference.router.session import RouterSession

_FENCE_FIRST = ("Verifier failure: the router first appends a fence record with the new epoch to the commit_log, so "
                "that the old verifier, even if it is only partitioned, can no longer commit or release output;")
_RESUME = ('it then reads the last commit record and opens the session at a new verifier with that epoch and the '
           '"resume" member carrying that round, committed length, digest')
_RTR6 = "after appending the fence, the router ignores commit records that follow a fence of a higher epoch"
_REASSIGN = "It then informs the verifier of the drafter and sends a new assignment."
_CONDITIONAL = ("The commit_log is an MLC object to which records are appended with a conditional operation, for "
                "example an HTTP PUT with If-Match on the current entity tag [RFC9110]")
_LOG3 = "The router names the commit log; the object need not exist yet."
_NOT_EXPIRED = "The router MUST NOT assign sessions to an instance whose status has expired."
_PERMITTED = "The router then selects a drafter whose model is permitted by the contract."
_STATUS = "It accepts a status report only from the instance it names"
_DRAFTER_FAILURE = "Drafter failure: when a drafter's status expires, the router reassigns its sessions."
_ORDER = ("It first informs the verifier with PUT sessions/{id}/drafter, and then sends the assignment, carrying the "
          "current round, committed length, and digest, to the drafter.")
_TOKENS = ("The assignment the router sends to the drafter (`POST assignments`) always carries `committed_tokens` "
           "when committed > 0.")
_STATE = "the assignment sent to the drafter carries the values of the session-state that PUT returned."
_SAMPLING = 'the router includes it in the "sampling" member of subsequent assignments'
_M_INIT = "the router sends max(1, min(m_max, m_init))"
_CONTRACT = ("such updates are carried separately from the contract, which, including the acceptance rule, is never "
             "modified.")
_EVENT_SENDER = "and an event only from the session's current verifier (else 403)."
_SWITCH = ("switch (2):: The verifier sends an event to the router, which assigns the session to another drafter with "
           "a permitted model")
_SELF = "kind 3 when it starts self-decoding; kind 0 when self-decoding ends and a drafter is needed again"
_UNKNOWN = 'A receiver that encounters an unknown action value MUST treat it as "fail".'
_FROM_ROUND = "It sends a policy message with from_round greater than the current round."
_RETRY = "on 409 it retries with `state.round + 1`."
_OLD_EPOCH = ("Proposals carrying an older epoch are rejected, and front ends discard output carrying an older epoch, "
              "so a recovered old verifier cannot extend the session.")
_FRONT = "so a front end that retries never duplicates or loses tokens"


def _session(machine: type[RouterSession]) -> RouterParts:
    return RouterParts(session=machine)


ROUTER_MUTANTS: tuple[RouterMutant, ...] = (
    # failover (§6.9, §6.8, P1-RTR-6)
    RouterMutant("resume-before-fence", "failover", "opens the session at the new verifier before appending the fence",
                 "6.9", _FENCE_FIRST, parts=RouterParts(driver=faults.ResumeBeforeFence)),
    RouterMutant("resume-ignores-fences", "failover",
                 "replays every commit record, also those a fence with a higher epoch precedes", "6.9, P1-RTR-6",
                 _RTR6, parts=_session(faults.ReplayIgnoresFences)),
    RouterMutant("resume-from-previous-record", "failover", "resumes from the record before the last one", "6.9",
                 _RESUME, parts=_session(faults.ResumeFromPreviousRecord)),
    RouterMutant("no-reassign-after-failover", "failover", "resumes the session but assigns no drafter there", "6.9",
                 _REASSIGN, parts=RouterParts(driver=faults.NoReassignAfterFailover)),
    RouterMutant("unconditional-fence", "failover", "appends the fence with a PUT that has no If-Match", "6.8",
                 _CONDITIONAL, wrap_cache=faults.UnconditionalFence),
    RouterMutant("shared-commit-log", "session-open", "names one commit log for all its sessions", "P1-LOG-3",
                 _LOG3, parts=RouterParts(driver=faults.SharedCommitLog)),
    # eligibility (§6.1, P1-RTR-2)
    RouterMutant("assign-expired-drafter", "drafter-expiry", "assigns drafters whose status has expired", "6.1",
                 _NOT_EXPIRED, parts=RouterParts(registry=faults.DrafterExpiryIgnored)),
    RouterMutant("open-at-expired-verifier", "session-open",
                 "opens and resumes sessions at verifiers whose status has expired", "6.1", _NOT_EXPIRED,
                 parts=RouterParts(registry=faults.VerifierExpiryIgnored)),
    RouterMutant("unpermitted-drafter", "assignment", "ignores the contract's drafters list", "6.1", _PERMITTED,
                 parts=RouterParts(registry=faults.AnyDrafterPermitted)),
    RouterMutant("status-from-anyone", "events", "accepts a status report for an instance from any party",
                 "P1-RTR-2", _STATUS, parts=RouterParts(registry=faults.StatusFromAnyone), profile_only=True),
    RouterMutant("expired-drafter-kept", "drafter-expiry", "never replaces a drafter whose status expired", "6.9",
                 _DRAFTER_FAILURE, parts=RouterParts(driver=faults.DrafterNeverReplaced)),
    # assignments (§6.1, P1-RTR-3, P1-DRF-2, §4.1)
    RouterMutant("assign-before-put", "assignment", "sends the assignment before PUT sessions/{id}/drafter", "6.1",
                 _ORDER, parts=RouterParts(driver=faults.AssignBeforePut)),
    RouterMutant("no-committed-tokens", "assignment", "leaves committed_tokens out of its assignments", "P1-RTR-3",
                 _TOKENS, parts=_session(faults.NoCommittedTokens), profile_only=True),
    RouterMutant("assignment-from-own-state", "assignment",
                 "assigns with the round it knew before the PUT, not the session-state the PUT returned",
                 "6.1, P1-RTR-3", _STATE, parts=_session(faults.AssignmentFromOwnKnowledge)),
    RouterMutant("sampling-forgotten", "policy", "later assignments lose the accepted sampling profile", "6.6",
                 _SAMPLING, parts=_session(faults.SamplingForgotten)),
    RouterMutant("m-init-unclamped", "assignment", "sends its configured m_init above the contract's m_max",
                 "P1-DRF-2", _M_INIT, parts=_session(faults.MInitUnclamped), profile_only=True),
    RouterMutant("contract-with-defaults", "session-open", "fills in low_ratio 0 when the contract omits it", "4.1",
                 _CONTRACT, parts=_session(faults.ContractWithDefaults)),
    # events (§6.5.2, §5.2, P1-EVT-1, P1-RTR-2)
    RouterMutant("events-from-anyone", "events", "accepts events from any party", "P1-RTR-2", _EVENT_SENDER,
                 parts=_session(faults.EventsFromAnyone), profile_only=True),
    RouterMutant("events-from-first-verifier", "failover",
                 "accepts events only from the verifier that first opened the session, refusing the current one",
                 "6.5.2, P1-RTR-2", _SWITCH, parts=_session(faults.EventsFromFirstVerifier)),
    RouterMutant("switch-keeps-drafter", "events", "reassigns the same drafter on switch", "6.5.2", _SWITCH,
                 parts=RouterParts(driver=faults.SwitchKeepsDrafter)),
    RouterMutant("assign-during-self-decode", "events", "assigns a drafter when self-decoding starts", "P1-EVT-1",
                 _SELF, parts=_session(faults.AssignDuringSelfDecode), profile_only=True),
    RouterMutant("unknown-kind-ignored", "events", "ignores events of a kind it does not know", "5.2", _UNKNOWN,
                 app=faults.UnknownKindIgnored),
    # policy (§6.6, P1-RTR-4)
    RouterMutant("policy-from-current-round", "policy", "starts a policy at the round it knows, not the next",
                 "6.6", _FROM_ROUND, parts=_session(faults.PolicyFromCurrentRound)),
    RouterMutant("policy-retry-same-round", "policy", "retries a 409'd policy with state.round", "P1-RTR-4", _RETRY,
                 parts=_session(faults.PolicyRetrySameRound), profile_only=True),
    # the front (§6.7, P1-FRONT-2)
    RouterMutant("front-lower-epoch", "front",
                 "the front keeps reading the verifier it first read from and passes on its older epoch", "6.7, 6.9",
                 _OLD_EPOCH, front=faults.StickyFront),
    RouterMutant("front-final-early", "front", "the front answers final as soon as the finish event arrived",
                 "6.7", _FRONT, front=faults.EarlyFinalFront),
)

ROUTER_MUTANTS_BY_NAME = {mutant.name: mutant for mutant in ROUTER_MUTANTS}


__all__ = ["ROUTER_MUTANTS", "ROUTER_MUTANTS_BY_NAME"]
