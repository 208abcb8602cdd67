"""The mutant catalogue: named faulty variants of the reference verifier, one realistic bug each.

Names are stable forever: ``killers.json`` and the test IDs use them.
"""

from __future__ import annotations

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.mutants import apps, sessions
from sdcp_conformance.mutants.base import Mutant
from sdcp_conformance.mutants.faulty import (
    fence_blind,
    no_read_back,
    records_without_epoch,
    stale_kv,
    unconditional_append,
)
from sdcp_conformance.mutants.judging import LimitRefusedAfterCommit, answers_bad_message_for
from sdcp_conformance.mutants.rule2_stats import RULE2_STAT_MUTANTS
from sdcp_conformance.protocol.problems import ProblemType

_AUTH = "the authenticated client MUST be the drafter named in the latest assignment the verifier received"
_FENCE = "Fencing: if epoch differs from the session epoch, respond 409 with problem type \"sdcp-stale-epoch\"."
_FENCED_APPEND = ("If the append fails because the log has been fenced, the verifier MUST discard the round, "
                  "release no output, and stop serving the session.")
_READ_BACK = ("If the MLC cannot enforce this rule, the verifier MUST read the log after its conditional append "
              "and treat its append as failed if a fence record with a higher epoch precedes its own record.")
_CONDITIONAL = ("The commit_log is an MLC object to which records are appended with a conditional operation, for "
                "example an HTTP PUT with If-Match on the current entity tag [RFC9110], so that an append succeeds "
                "only if no other append has happened since the writer last read the log.")
_AFTER_APPEND = "only after that append succeeds does it send the verdict and make the tokens available as output."
_IDEM = "if a verdict for this round already exists, return it unchanged"
_ATOMIC = "The commit and the recording of the verdict MUST be atomic with respect to concurrent proposals"
_BASE = "if base is not the committed length or base_digest is not d[base], respond 409"
_ROUND = "If round is not the last round plus one, respond 409 likewise."
_LIMIT = "1 <= M <= min(m_max, m_cap), where m_cap is the limit from the last verdict (m_init before the first)"
_Q = ("checked that q[i](x[i]) is not zero for every position, before drawing any random value")
_Q_UNAVAILABLE = ("If it cannot obtain them, it rejects the round with problem type \"sdcp-q-unavailable\" and "
                  "commits nothing.")
_Q_ZERO = "a proposal for which q[i](x[i]) is zero is rejected, before any random draw"
_RULE1 = "x[i] is accepted if it equals argmax p[i], where ties are broken in favor of the smallest token identifier."
_BONUS = "The additional token is argmax p[a+1]."
_STOP_AT_FIRST = "Evaluation stops at the first position that is not accepted."
_GREEDY_EXACT = "The output is identical to greedy decoding of the target model"
_DIGEST = "uint32() is four octets in network byte order"
_D0 = "d[0] = SHA-256( \"SDCP-PREFIX-1\" || 0x00 || contract_digest || uint32(P) ||"
_CANONICAL = ("The contract digest is the SHA-256 of the contract encoded with the core deterministic encoding "
              "of Section 4.2.1 of [RFC8949]")
_TRUNCATE = "It truncates the emitted tokens after the first stop token and at max_new."
_RECORD = "A commit record appended by a verifier MUST carry the session's current epoch"
_OUTPUT = "GET output?from=n, which returns the tokens committed at output indices n and later"
_FINAL = "The final output message has final set to true and finish set to \"finish\" or \"fail\"."
_ESCALATE = "When c reaches R, the verifier applies entry j of the fallback list"
_REDUCE = "The verifier sets m_cap to max(1, floor(m_cap / 2)) and the drafter proceeds."
_SELF_TARGET = "The verifier decodes the session itself with the target model."
_STATE = "`session-state.state`: 0 active, 3 self-decoding, 4 finished, 5 failed (the action codes)."
_RESTORE = ("After a reduction, m_cap is restored by one per round that is not low, up to min(m_max, m_init of the "
            "latest assignment).")
_SELF = ("This action is permitted only if the contract contains self_load and the verifier's current load does "
         "not exceed it")
_J = "when g reaches R, where R is low_rounds, j is reset to zero."
_SWITCH = "The verifier sends an event to the router, which assigns the session to another drafter"
_POLICY = "The verifier applies the new profile to rounds numbered from_round and later"
_CLOSED = ("After `finish` or `fail` every new proposal, drafter change and policy update gets 410 "
           "`sdcp-session-closed`")
_RULE2_DRAW = ("over \"SDCP-VERIFY-1\" || 0x00 || session || uint32(round) || uint32(i) || uint8(purpose), where "
               "purpose is 0 for the acceptance test and 1 for drawing the additional token")
_RESIDUAL = "the additional token is drawn from the normalized residual distribution max(0, p[i] - q[i])"
_UNKNOWN_KEY = ('A contract that contains a key not defined by this document MUST be rejected with problem type '
                '"sdcp-bad-contract"')
_STATUS = "Each instance reports status at intervals shorter than its ttl_ms."
_STATUS_ROLE = "instance: tstr, role: 1 / 2, ; 1 drafter, 2 verifier"
_LIMIT_CHANGES_NOTHING = "A proposal over the limit gets 422 `sdcp-limit` and changes nothing."
_M_INIT_ZERO = ("a drafter answers an assignment with `m_init` 0 with 400 `sdcp-bad-message`, and so does a verifier "
                "receiving one in `PUT sessions/{id}/drafter`.")

MUTANTS_LIST: tuple[Mutant, ...] = (
    # authorization
    Mutant("accept-any-drafter", "authorization", "any authenticated client may propose for any session",
           "6.3", _AUTH, session=sessions.AcceptAnyDrafter),
    Mutant("ignore-reassignment", "authorization", "the first assigned drafter stays authorised after a reassignment",
           "6.1, 6.3", "The verifier accepts proposals only from the drafter named in the latest assignment it has "
           "received.", session=sessions.IgnoreReassignment),
    Mutant("trust-drafter-member", "authorization",
           "authorises by the proposal's drafter member instead of the client certificate",
           "6.3, P1-ID-1", _AUTH, session=sessions.TrustDrafterMember),
    # fencing
    Mutant("skip-epoch-check", "fencing", "never compares a message's epoch with the session epoch",
           "6.3", _FENCE, session=sessions.SkipEpochCheck),
    Mutant("ignore-fenced-append", "fencing", "takes a fenced commit-log append for a successful one",
           "6.3", _FENCED_APPEND, wrap_cache=fence_blind),
    Mutant("no-read-back", "fencing", "relies on the MLC to refuse fenced appends: never looks for fences itself",
           "6.8", _READ_BACK, wrap_cache=no_read_back),
    Mutant("unconditional-append", "fencing", "appends to the commit log with plain PUTs (no If-Match): a fence "
           "written between its read and its write is overwritten", "6.8", _CONDITIONAL,
           wrap_cache=unconditional_append),
    Mutant("output-before-append", "fencing", "commits in memory (verdict stored, output visible) before the append",
           "6.3", _AFTER_APPEND, app=apps.OutputBeforeAppend),
    # idempotency
    Mutant("reverify-retried-round", "idempotency", "keeps no verdicts: a retry is checked again and refused as stale",
           "6.3", _IDEM, session=sessions.ReverifyRetriedRound),
    Mutant("concurrent-duplicates-committed", "idempotency",
           "an identical copy arriving during verification is verified and committed again",
           "6.3", _ATOMIC, session=sessions.ConcurrentDuplicatesCommitted),
    Mutant("stored-verdict-refreshed", "idempotency",
           "a retry gets the stored verdict with the current m_cap, low and load",
           "6.3", _IDEM, session=sessions.StoredVerdictRefreshed),
    # base and round
    Mutant("skip-base-digest-check", "stale-base", "compares base with the committed length but never base_digest",
           "6.3", _BASE, session=sessions.SkipBaseDigestCheck),
    Mutant("skip-round-check", "stale-base", "trusts the proposal's round", "6.3", _ROUND,
           session=sessions.SkipRoundCheck),
    Mutant("stale-base-without-state", "stale-base", "the 409 sdcp-stale-base carries no state member",
           "6.3, P1-ERR-2", "respond 409 with problem type \"sdcp-stale-base\" and the current session-state",
           session=sessions.StaleBaseWithoutState, profile_only=True),
    # limits
    Mutant("limit-off-by-one", "limits", "a proposal of M = limit + 1 is accepted", "6.2, P1-CTL-1", _LIMIT,
           session=sessions.LimitOffByOne, profile_only=True),
    Mutant("ignore-m-init", "limits", "before the first verdict the limit is m_max, not m_init",
           "6.2, P1-CTL-1", _LIMIT, session=sessions.IgnoreMInit, profile_only=True),
    Mutant("limit-keeps-m-init", "limits", "after a reduce the limit enforced stays min(m_max, m_init); the "
           "verdict's lower m_cap is reported, not enforced", "6.2, 6.5.2", _LIMIT,
           session=sessions.LimitKeepsMInit),
    Mutant("accept-m-init-zero", "limits", "an assignment with m_init 0 is accepted (limit 0: every proposal gets "
           "422 sdcp-limit until a valid assignment)", "P1-DRF-2", _M_INIT_ZERO, session=sessions.AcceptMInitZero,
           profile_only=True),
    # q preconditions
    Mutant("draw-before-q-check", "q-preconditions",
           "checks q[i](x[i]) = 0 lazily, after drawing r for position i (positions after a rejection never)",
           "6.3", _Q, session=sessions.DrawBeforeQCheck),
    Mutant("commit-on-q-unavailable", "q-preconditions",
           "rows that cannot be fetched are replaced by a uniform draft distribution and the round commits",
           "6.3", _Q_UNAVAILABLE, app=apps.CommitOnQUnavailable),
    Mutant("accept-zero-q", "q-preconditions", "q[i](x[i]) = 0 is not refused; the token is accepted",
           "6.4", _Q_ZERO, session=sessions.AcceptZeroQ),
    # rule 1
    Mutant("ties-to-larger-id", "rule-1", "argmax ties go to the larger token id", "6.4", _RULE1,
           session=sessions.TiesToLargerId),
    Mutant("bonus-from-p-a", "rule-1", "the additional token is argmax p[a] instead of p[a+1] (rows[a - 1])",
           "6.4", _BONUS, session=sessions.BonusFromPA),
    Mutant("accept-extra-position", "rule-1", "the first mismatching position is accepted as well",
           "6.4", _STOP_AT_FIRST, session=sessions.AcceptExtraPosition),
    Mutant("kv-not-rolled-back", "rule-1",
           "the target's KV cache keeps the rejected positions (scoring forgets to truncate it)",
           "6.4", _GREEDY_EXACT, wrap_model=stale_kv),
    # digests
    Mutant("digest-little-endian", "stale-base", "d[k] hashes emitted tokens as little-endian uint32",
           "4.2", _DIGEST, session=sessions.DigestLittleEndian),
    Mutant("d0-without-domain", "session", "d[0] omits the \"SDCP-PREFIX-1\" || 0x00 domain separator",
           "4.2", _D0, session=sessions.D0WithoutDomain),
    Mutant("contract-digest-raw-bytes", "contract",
           "the contract digest is taken over the received bytes, not the deterministic re-encoding",
           "4.1, P1-MSG-1", _CANONICAL, app=apps.ContractDigestRawBytes),
    # truncation
    Mutant("no-stop-truncation", "truncation", "stop tokens are ignored; only max_new truncates", "6.3", _TRUNCATE,
           session=sessions.NoStopTruncation),
    Mutant("max-new-off-by-one", "truncation", "the output may reach max_new + 1 tokens", "6.3", _TRUNCATE,
           session=sessions.MaxNewOffByOne),
    Mutant("accepted-after-truncation", "truncation", "accepted (and the low test) use a after truncation",
           "P1-CTL-5", "`accepted` is the rule's a before stop/max_new truncation",
           session=sessions.AcceptedAfterTruncation, profile_only=True),
    # commit log
    Mutant("record-without-epoch", "commit-log", "commit records are appended without their epoch", "6.8", _RECORD,
           wrap_cache=records_without_epoch),
    Mutant("record-after-verdict", "commit-log", "write-behind log: the record is appended ~0.3 s after the verdict",
           "6.3", _AFTER_APPEND, app=apps.RecordAfterVerdict),
    # output
    Mutant("output-from-off-by-one", "output", "from=n is read as a 1-based index", "6.7", _OUTPUT,
           session=sessions.OutputFromOffByOne),
    Mutant("output-without-final", "output", "the final output message lacks final: true and finish", "6.7", _FINAL,
           session=sessions.OutputWithoutFinal),
    # escalation
    Mutant("never-escalate", "escalation", "reaching R low rounds never applies the fallback list", "6.5.2",
           _ESCALATE, session=sessions.NeverEscalate),
    Mutant("reduce-to-zero", "escalation", "reduce halves m_cap without max(1, …): 1 becomes 0", "6.5.2", _REDUCE,
           session=sessions.ReduceToZero),
    Mutant("reduce-rounds-up", "escalation", "reduce halves m_cap rounding up: an odd m_cap keeps one too many",
           "6.5.2", _REDUCE, session=sessions.ReduceRoundsUp),
    Mutant("restore-past-m-init", "escalation", "after a reduce, good rounds restore m_cap up to m_max, past m_init",
           "P1-CTL-4", _RESTORE, session=sessions.RestorePastMInit, profile_only=True),
    Mutant("self-decode-greedy-under-rule-2", "escalation", "self-decoding under rule 2 takes p's argmax, not a "
           "draw from p", "6.5.2, P1-SAMP-3", _SELF_TARGET, session=sessions.SelfDecodeGreedyUnderRule2,
           profile_only=True),
    Mutant("self-decoding-state-active", "escalation", "session-state says active (0) during self-decoding",
           "P1-STATE-1", _STATE, session=sessions.SelfDecodingStateActive, profile_only=True),
    Mutant("self-decode-despite-load", "escalation", "self_decode is applied (and kept up) whatever the load",
           "6.5.2", _SELF, session=sessions.SelfDecodeDespiteLoad),
    Mutant("j-not-reset", "escalation", "R rounds that are not low do not reset j", "6.5.2", _J,
           session=sessions.JNotReset),
    Mutant("no-switch-event", "escalation", "switch drops the drafter but never tells the router", "6.5.2", _SWITCH,
           session=sessions.NoSwitchEvent),
    Mutant("self-budget-not-reset", "escalation", "self_max counts over the session, not per period: a second "
           "period stops before its first token", "6.5.2", "self_max:  uint, ; max tokens per self-decode period",
           session=sessions.SelfBudgetNotReset),
    Mutant("self-decoded-token-restarts-period", "escalation", "an assignment during self-decoding is undone: the "
           "commit of the token under way starts a new period and drops the new drafter", "P1-EVT-1",
           "until a new assignment arrives.", session=sessions.SelfDecodedTokenRestartsPeriod, profile_only=True),
    Mutant("final-while-self-decoding", "escalation", "output read during self-decoding says final", "6.7", _FINAL,
           session=sessions.FinalWhileSelfDecoding),
    # policy, closed sessions
    Mutant("policy-immediate", "policy", "a policy applies from the next round, whatever its from_round", "6.6",
           _POLICY, session=sessions.PolicyImmediate),
    Mutant("accept-after-finish", "closed", "a finished or failed session keeps accepting and committing proposals",
           "P1-CTL-3", _CLOSED, session=sessions.AcceptAfterFinish, profile_only=True),
    # rule 2 (seeded exactness)
    Mutant("uniform-index-off-by-one", "rule-2", "the HMAC position i is 0-based", "6.4, P1-SAMP-3", _RULE2_DRAW,
           session=sessions.UniformIndexOffByOne, profile_only=True),
    Mutant("purpose-bytes-swapped", "rule-2", "purpose 1 for acceptance tests, 0 for the additional token", "6.4",
           _RULE2_DRAW, session=sessions.PurposeSwapped),
    Mutant("residual-from-p", "rule-2", "after a rejection the additional token is drawn from p[i], not the residual",
           "6.4", _RESIDUAL, session=sessions.ResidualFromP),
    # rule 2 (distribution: the statistical cases)
    *RULE2_STAT_MUTANTS,
    # the judge: draft-named refusals answered with the profile's catch-all type, a refusal that commits
    *(Mutant(f"{problem.suffix.removeprefix('sdcp-')}-as-bad-message", "judging",
             f"{problem.status} {problem.suffix} is answered 400 sdcp-bad-message (one catch-all error branch)",
             section, quote, app=answers_bad_message_for(problem))
      for problem, section, quote in (
          (ProblemType.STALE_EPOCH, "6.3", _FENCE),
          (ProblemType.STALE_BASE, "6.3", _BASE),
          (ProblemType.NOT_ASSIGNED, "6.3", _AUTH),
          (ProblemType.LIMIT, "6.2, Table 2", "sdcp-limit 422 Proposal violates m_cap or m_max"),
          (ProblemType.BAD_CONTRACT, "4.1, Table 2", _UNKNOWN_KEY),
          (ProblemType.BAD_PROPOSAL, "6.4", _Q_ZERO))),
    Mutant("limit-refused-after-commit", "judging", "an over-limit proposal gets 422 sdcp-limit, but only after its "
           "round was verified and committed", "6.2, P1-CTL-1", _LIMIT_CHANGES_NOTHING,
           session=LimitRefusedAfterCommit),
    Mutant("absent-temperature-greedy", "rule-2", "a rule-2 profile without a temperature is taken as temperature 0",
           "P1-NUM-1", "Under rule 2 an absent temperature means 1.0.", session=sessions.AbsentTemperatureGreedy,
           profile_only=True),
    # status reports
    Mutant("status-too-rare", "status", "reports status every 1.5 ttl_ms", "6.1", _STATUS, app=apps.StatusTooRare),
    Mutant("status-as-drafter", "status", "reports status with role 1 (drafter)", "5.2", _STATUS_ROLE,
           app=apps.StatusAsDrafter),
)

MUTANTS: dict[str, Mutant] = {mutant.name: mutant for mutant in MUTANTS_LIST}


def get_mutant(name: str) -> Mutant:
    try:
        return MUTANTS[name]
    except KeyError:
        raise InvalidArgument(f"no mutant named {name!r}; known: {', '.join(sorted(MUTANTS))}") from None


__all__ = ["MUTANTS", "MUTANTS_LIST", "get_mutant"]
