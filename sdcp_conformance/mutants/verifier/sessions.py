"""Session-machine mutants: each declared above the subclass that overrides the smallest method holding its one bug.

The sentences quoted by more than one mutant (:mod:`.judging`'s too) are named here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from sdcp_conformance.mutants.base import MutantSession
from sdcp_conformance.mutants.verifier import CATALOGUE
from sdcp_conformance.mutants.verifier.faulty import (
    Rule1Fault,
    Rule2Fault,
    faulty_rule1,
    faulty_rule2,
    lenient_q_rows,
    little_endian_extend,
    prefix_digest_without_domain,
)
from sdcp_conformance.protocol.contract import RULE_SPECULATIVE_SAMPLING
from sdcp_conformance.protocol.control import Action, EscalationPolicy, RoundControl, SpeculationControl
from sdcp_conformance.protocol.errors import ProtocolError
from sdcp_conformance.protocol.messages import (
    Assignment,
    Event,
    Output,
    Proposal,
    Sampling,
    SessionOpen,
    SessionState,
    Verdict,
)
from sdcp_conformance.protocol.problems import ProblemType
from sdcp_conformance.protocol.rng import UniformSource
from sdcp_conformance.protocol.rules import RuleOutcome, truncate
from sdcp_conformance.protocol.sampling import greedy_token, target_distribution
from sdcp_conformance.reference.verifier.decisions import TOKEN_OUT_OF_VOCABULARY
from sdcp_conformance.reference.verifier.session import (
    CommitRecord,
    Committed,
    FloatRows,
    PendingCommit,
    Phase,
    Ticket,
    WaitForRound,
)

AUTH = "the authenticated client MUST be the drafter named in the latest assignment the verifier received"
FENCE = 'Fencing: if epoch differs from the session epoch, respond 409 with problem type "sdcp-stale-epoch".'
_IDEM = "if a verdict for this round already exists, return it unchanged"
BASE = "if base is not the committed length or base_digest is not d[base], respond 409"
_LIMIT = "1 <= M <= min(m_max, m_cap), where m_cap is the limit from the last verdict (m_init before the first)"
Q_ZERO = "a proposal for which q[i](x[i]) is zero is rejected, before any random draw"
_TRUNCATE = "It truncates the emitted tokens after the first stop token and at max_new."
_FINAL = 'The final output message has final set to true and finish set to "finish" or "fail".'
_REDUCE = "The verifier sets m_cap to max(1, floor(m_cap / 2)) and the drafter proceeds."
_RULE2_DRAW = ('over "SDCP-VERIFY-1" || 0x00 || session || uint32(round) || uint32(i) || uint8(purpose), where '
               "purpose is 0 for the acceptance test and 1 for drawing the additional token")

# ---------------------------------------------------------------------- authorization


@CATALOGUE.mutant("accept-any-drafter", "authorization", "any authenticated client may propose for any session", "6.3",
                  AUTH)
class AcceptAnyDrafter(MutantSession):
    def _authorize(self, proposal: Proposal, peer: str | None) -> None:
        """Bug: any authenticated client may propose (mTLS is taken as enough)."""


@CATALOGUE.mutant("ignore-reassignment", "authorization", "the first assigned drafter stays authorised after a "
                  "reassignment", "6.1, 6.3", "The verifier accepts proposals only from the drafter named in the "
                  "latest assignment it has received.")
class IgnoreReassignment(MutantSession):
    def assign(self, assignment: Assignment) -> SessionState:
        """Bug: the first drafter stays authorised; a later assignment only updates m_init."""
        first = self.drafter
        state = super().assign(assignment)
        if first is not None:
            self.drafter = first
        return state


@CATALOGUE.mutant("trust-drafter-member", "authorization", "authorises by the proposal's drafter member instead of "
                  "the client certificate", "6.3, P1-ID-1", AUTH)
class TrustDrafterMember(MutantSession):
    def _authorize(self, proposal: Proposal, peer: str | None) -> None:
        """Bug: the proposal's own ``drafter`` member is checked, not the client certificate."""
        if self.drafter is None or proposal.drafter != self.drafter:
            raise ProtocolError(ProblemType.NOT_ASSIGNED, f"{proposal.drafter!r} is not the assigned drafter")


# ---------------------------------------------------------------------- fencing


@CATALOGUE.mutant("skip-epoch-check", "fencing", "never compares a message's epoch with the session epoch", "6.3",
                  FENCE)
class SkipEpochCheck(MutantSession):
    def _require_epoch(self, epoch: int) -> None:
        """Bug: a message's epoch is never compared with the session epoch."""


# ---------------------------------------------------------------------- idempotency


@CATALOGUE.mutant("reverify-retried-round", "idempotency", "keeps no verdicts: a retry is checked again and refused "
                  "as stale", "6.3", _IDEM)
class ReverifyRetriedRound(MutantSession):
    def stored_verdict(self, round_number: int) -> Verdict | None:
        """Bug: no verdict store is consulted; a retry is checked like a new proposal."""
        return None


@CATALOGUE.mutant("concurrent-duplicates-committed", "idempotency", "an identical copy arriving during verification "
                  "is verified and committed again", "6.3", "The commit and the recording of the verdict MUST be "
                  "atomic with respect to concurrent proposals")
class ConcurrentDuplicatesCommitted(MutantSession):
    def concurrent(self, proposal: Proposal) -> WaitForRound | None:
        """Bug: an identical copy that arrives while its round is verified is verified again."""
        return None

    def _require_current(self, ticket: Ticket) -> None:
        """(No single in-flight ticket is tracked, so every ticket is current.)"""

    def check_commit_order(self, record: CommitRecord) -> None:
        """(The commit is not serialised: both copies commit.)"""


@CATALOGUE.mutant("stored-verdict-refreshed", "idempotency", "a retry gets the stored verdict with the current m_cap, "
                  "low and load", "6.3", _IDEM)
class StoredVerdictRefreshed(MutantSession):
    def stored_verdict(self, round_number: int) -> Verdict | None:
        """Bug: a retry gets the stored verdict rebuilt with the current m_cap, low and load."""
        stored = super().stored_verdict(round_number)
        if stored is None:
            return None
        return stored.replace(m_cap=self.control.limit(), low=self.control.c, load=self.last_load)


# ---------------------------------------------------------------------- base and round


@CATALOGUE.mutant("skip-base-digest-check", "stale-base", "compares base with the committed length but never "
                  "base_digest", "6.3", BASE)
class SkipBaseDigestCheck(MutantSession):
    def _check_base(self, proposal: Proposal) -> None:
        """Bug: only the base length is compared, never base_digest."""
        if proposal.base != len(self.output):
            raise self._stale_base(f"base {proposal.base} is not {len(self.output)}")
        if proposal.round != self.round + 1:
            raise self._stale_base(f"round {proposal.round} is not {self.round + 1}")


@CATALOGUE.mutant("skip-round-check", "stale-base", "trusts the proposal's round", "6.3",
                  "If round is not the last round plus one, respond 409 likewise.")
class SkipRoundCheck(MutantSession):
    def _check_base(self, proposal: Proposal) -> None:
        """Bug: the proposal's round is trusted; only base and base_digest are checked."""
        if proposal.base != len(self.output) or proposal.base_digest != self.digest:
            raise self._stale_base(f"base {proposal.base} does not match the committed prefix")

    def check_commit_order(self, record: CommitRecord) -> None:
        """(Rounds are whatever the drafter says.)"""


@CATALOGUE.mutant("stale-base-without-state", "stale-base", "the 409 sdcp-stale-base carries no state member",
                  "6.3, P1-ERR-2", 'respond 409 with problem type "sdcp-stale-base" and the current session-state',
                  profile_only=True)
class StaleBaseWithoutState(MutantSession):
    def _stale_base(self, detail: str) -> ProtocolError:
        """Bug: the 409 carries no ``state`` member (P1-ERR-2)."""
        return ProtocolError(ProblemType.STALE_BASE, detail)


# ---------------------------------------------------------------------- limits


@CATALOGUE.mutant("limit-off-by-one", "limits", "a proposal of M = limit + 1 is accepted", "6.2, P1-CTL-1", _LIMIT,
                  profile_only=True)
class LimitOffByOne(MutantSession):
    def _check_limits(self, proposal: Proposal) -> None:
        """Bug: the limit is compared with ``>`` against limit + 1 (M = limit + 1 passes)."""
        m = len(proposal.tokens)
        limit = min(self.contract.m_max, self.control.limit())
        if m > limit + 1:
            raise ProtocolError(ProblemType.LIMIT, f"M = {m} exceeds the limit {limit}")
        outside = [token for token in proposal.tokens if not 0 <= token < self.vocab_size]
        if outside:
            raise ProtocolError(TOKEN_OUT_OF_VOCABULARY, f"tokens {outside} are outside the vocabulary")


@CATALOGUE.mutant("ignore-m-init", "limits", "before the first verdict the limit is m_max, not m_init", "6.2, P1-CTL-1",
                  _LIMIT, profile_only=True)
class IgnoreMInit(MutantSession):
    def assign(self, assignment: Assignment) -> SessionState:
        """Bug: before the first verdict the limit is m_max; the assignment's m_init is not used."""
        state = super().assign(assignment)
        self.control.m_cap = self.contract.m_max
        return state


@CATALOGUE.mutant("accept-m-init-zero", "limits", "an assignment with m_init 0 is accepted (limit 0: every proposal "
                  "gets 422 sdcp-limit until a valid assignment)", "P1-DRF-2", "a drafter answers an assignment with "
                  "`m_init` 0 with 400 `sdcp-bad-message`, and so does a verifier receiving one in `PUT "
                  "sessions/{id}/drafter`.", profile_only=True)
class AcceptMInitZero(MutantSession):
    def assign(self, assignment: Assignment) -> SessionState:
        """Bug: m_init 0 is taken like any other value (no P1-DRF-2 check): the limit becomes min(m_max, 0) = 0,
        so every proposal gets 422 sdcp-limit until a valid assignment replaces it."""
        if assignment.m_init >= 1:
            return super().assign(assignment)
        state = super().assign(assignment.replace(m_init=1))
        self.control.m_cap = self.control.m_ceiling = 0
        return state


@CATALOGUE.mutant("limit-keeps-m-init", "limits", "after a reduce the limit enforced stays min(m_max, m_init); the "
                  "verdict's lower m_cap is reported, not enforced", "6.2, 6.5.2", _LIMIT)
class LimitKeepsMInit(MutantSession):
    def _check_limits(self, proposal: Proposal) -> None:
        """Bug: the limit enforced stays min(m_max, m_init) of the assignment; the lower m_cap a reduce set (and
        each restore step after it) is reported in the verdicts but never enforced."""
        reported = self.control.m_cap
        self.control.m_cap = self.control.m_ceiling
        try:
            super()._check_limits(proposal)
        finally:
            self.control.m_cap = reported


# ---------------------------------------------------------------------- q preconditions


class _FaultyRule(MutantSession):
    """A session deciding by a rule with one mistake, which a subclass names: ``class X(_Rule1, fault=…)``."""

    fault: ClassVar[Any]

    def __init_subclass__(cls, fault: Rule1Fault | Rule2Fault | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if fault is not None:
            cls.fault = fault


class _Rule2(_FaultyRule):
    """Rule 2 with one mistake (:func:`~.faulty.faulty_rule2`); rule 1 as the reference has it."""

    def accept(self, ticket: Ticket, p_rows: FloatRows, q_rows: FloatRows | None,
               uniforms: UniformSource) -> RuleOutcome:
        if not ticket.needs_q or q_rows is None:
            return super().accept(ticket, p_rows, q_rows, uniforms)
        return faulty_rule2(p_rows, q_rows, list(ticket.proposal.tokens), uniforms, self.fault)


class _LenientQ(_Rule2):
    """Checks the rows' size and values up front, but not q[i](x[i]) = 0."""

    def check_q(self, ticket: Ticket, q_blob: bytes) -> FloatRows:
        self._require_current(ticket)
        return lenient_q_rows(q_blob, len(ticket.proposal.tokens), self.vocab_size)


@CATALOGUE.mutant("draw-before-q-check", "q-preconditions", "checks q[i](x[i]) = 0 lazily, after drawing r for "
                  "position i (positions after a rejection never)", "6.3", "checked that q[i](x[i]) is not zero for "
                  "every position, before drawing any random value")
class DrawBeforeQCheck(_LenientQ, fault=Rule2Fault.LAZY_Q_CHECK):
    """Bug: q[i](x[i]) = 0 is found only when position i is evaluated, after r was drawn."""


@CATALOGUE.mutant("accept-zero-q", "q-preconditions", "q[i](x[i]) = 0 is not refused; the token is accepted", "6.4",
                  Q_ZERO)
class AcceptZeroQ(_LenientQ, fault=Rule2Fault.ZERO_Q_ACCEPTED):
    """Bug: q[i](x[i]) = 0 gives an infinite ratio and the token is accepted."""


# ---------------------------------------------------------------------- rules 1 and 2


class _Rule1(_FaultyRule):
    """Rule 1 with one mistake (:func:`~.faulty.faulty_rule1`); rule 2 as the reference has it."""

    def accept(self, ticket: Ticket, p_rows: FloatRows, q_rows: FloatRows | None,
               uniforms: UniformSource) -> RuleOutcome:
        if ticket.needs_q:
            return super().accept(ticket, p_rows, q_rows, uniforms)
        return faulty_rule1(p_rows, list(ticket.proposal.tokens), self.fault)


@CATALOGUE.mutant("ties-to-larger-id", "rule-1", "argmax ties go to the larger token id", "6.4",
                  "x[i] is accepted if it equals argmax p[i], where ties are broken in favor of the smallest token "
                  "identifier.")
class TiesToLargerId(_Rule1, fault=Rule1Fault.TIES_TO_LARGER_ID):
    """Bug (rule 1): argmax ties go to the larger id (a reversed or non-stable argmax)."""


@CATALOGUE.mutant("bonus-from-p-a", "rule-1", "the additional token is argmax p[a] instead of p[a+1] (rows[a - 1])",
                  "6.4", "The additional token is argmax p[a+1].")
class BonusFromPA(_Rule1, fault=Rule1Fault.BONUS_FROM_P_A):
    """Bug (rule 1): the additional token is argmax p[a] (rows[a - 1]) instead of p[a+1]."""


@CATALOGUE.mutant("accept-extra-position", "rule-1", "the first mismatching position is accepted as well", "6.4",
                  "Evaluation stops at the first position that is not accepted.")
class AcceptExtraPosition(_Rule1, fault=Rule1Fault.EXTRA_POSITION):
    """Bug (rule 1): the first mismatching position is accepted too (an inclusive bound)."""


@CATALOGUE.mutant("uniform-index-off-by-one", "rule-2", "the HMAC position i is 0-based", "6.4, P1-SAMP-3", _RULE2_DRAW,
                  profile_only=True)
class UniformIndexOffByOne(_Rule2, fault=Rule2Fault.INDEX_OFF_BY_ONE):
    """Bug (rule 2): HMAC position i is 0-based (0..M-1 and a) instead of 1-based (P1-SAMP-3)."""


@CATALOGUE.mutant("purpose-bytes-swapped", "rule-2", "purpose 1 for acceptance tests, 0 for the additional token",
                  "6.4", _RULE2_DRAW)
class PurposeSwapped(_Rule2, fault=Rule2Fault.PURPOSE_SWAPPED):
    """Bug (rule 2): purpose 1 for the acceptance test and 0 for the additional token."""


@CATALOGUE.mutant("residual-from-p", "rule-2", "after a rejection the additional token is drawn from p[i], not the "
                  "residual", "6.4", "the additional token is drawn from the normalized residual distribution max(0, "
                  "p[i] - q[i])")
class ResidualFromP(_Rule2, fault=Rule2Fault.RESIDUAL_FROM_P):
    """Bug (rule 2): after a rejection the additional token is drawn from p[i], not max(0, p[i] - q[i])."""


# ---------------------------------------------------------------------- digests


@CATALOGUE.mutant("digest-little-endian", "stale-base", "d[k] hashes emitted tokens as little-endian uint32", "4.2",
                  "uint32() is four octets in network byte order")
class DigestLittleEndian(MutantSession):
    def _record(self, round_number: int, emitted: Sequence[int]) -> CommitRecord:
        """Bug: d[k] hashes uint32(o[k]) in little-endian order."""
        return CommitRecord(epoch=self.epoch, round=round_number, emitted=tuple(emitted),
                            committed=len(self.output) + len(emitted),
                            digest=little_endian_extend(self.digest, emitted))


@CATALOGUE.mutant("d0-without-domain", "session", 'd[0] omits the "SDCP-PREFIX-1" || 0x00 domain separator', "4.2",
                  'd[0] = SHA-256( "SDCP-PREFIX-1" || 0x00 || contract_digest || uint32(P) ||')
class D0WithoutDomain(MutantSession):
    def __init__(self, opening: SessionOpen, prompt: Sequence[int], *, vocab_size: int,
                 committed_output: Sequence[int] = ()) -> None:
        """Bug: d[0] omits the "SDCP-PREFIX-1" || 0x00 domain separator."""
        super().__init__(opening, prompt, vocab_size=vocab_size, committed_output=committed_output)
        self.rebase(self.contract_digest, prefix_digest_without_domain(self.contract_digest, self.prompt))


# ---------------------------------------------------------------------- truncation


@CATALOGUE.mutant("no-stop-truncation", "truncation", "stop tokens are ignored; only max_new truncates", "6.3",
                  _TRUNCATE)
class NoStopTruncation(MutantSession):
    def truncate_emitted(self, emitted: Sequence[int]) -> tuple[list[int], bool]:
        """Bug: stop tokens are ignored; only max_new truncates."""
        kept = list(emitted)[: self.contract.max_new - len(self.output)]
        return kept, len(self.output) + len(kept) == self.contract.max_new


@CATALOGUE.mutant("max-new-off-by-one", "truncation", "the output may reach max_new + 1 tokens", "6.3", _TRUNCATE)
class MaxNewOffByOne(MutantSession):
    def truncate_emitted(self, emitted: Sequence[int]) -> tuple[list[int], bool]:
        """Bug: the output may reach max_new + 1 tokens (``<=`` where ``<`` was meant)."""
        stops = set(self.contract.stop)
        kept = list(emitted)
        for index, token in enumerate(kept):
            if token in stops:
                kept = kept[: index + 1]
                break
        kept = kept[: self.contract.max_new - len(self.output) + 1]
        finished = any(token in stops for token in kept) or len(self.output) + len(kept) >= self.contract.max_new
        return kept, finished


@CATALOGUE.mutant("accepted-after-truncation", "truncation", "accepted (and the low test) use a after truncation",
                  "P1-CTL-5", "`accepted` is the rule's a before stop/max_new truncation", profile_only=True)
class AcceptedAfterTruncation(MutantSession):
    def reported_accepted(self, outcome: RuleOutcome, emitted: Sequence[int]) -> int:
        """Bug: a is counted after stop/max_new truncation (P1-CTL-5 says before)."""
        return min(outcome.accepted, len(emitted))


# ---------------------------------------------------------------------- output


@CATALOGUE.mutant("output-from-off-by-one", "output", "from=n is read as a 1-based index", "6.7",
                  "GET output?from=n, which returns the tokens committed at output indices n and later")
class OutputFromOffByOne(MutantSession):
    def output_from(self, start: int) -> Output | None:
        """Bug: ``from`` is read as a 1-based index."""
        output = super().output_from(max(0, start - 1))
        return None if output is None else output.replace(from_=start)


@CATALOGUE.mutant("output-without-final", "output", "the final output message lacks final: true and finish", "6.7",
                  _FINAL)
class OutputWithoutFinal(MutantSession):
    def output_from(self, start: int) -> Output | None:
        """Bug: the final output never says ``final: true`` nor ``finish``."""
        output = super().output_from(start)
        return None if output is None else output.replace(final=False, finish=None)


# ---------------------------------------------------------------------- escalation


class _NeverEscalates(SpeculationControl):
    def _escalate(self, load: int) -> Action:
        return Action.CONTINUE


@CATALOGUE.mutant("never-escalate", "escalation", "reaching R low rounds never applies the fallback list", "6.5.2",
                  "When c reaches R, the verifier applies entry j of the fallback list")
class NeverEscalate(MutantSession):
    """Bug: reaching R low rounds changes nothing; the fallback list is never applied."""

    control_class = _NeverEscalates


class _HalvesToZero(SpeculationControl):
    def _adjust_m_cap(self, action: Action, low: bool) -> None:
        if action is Action.REDUCE:
            self.m_cap = self.limit() // 2
            return
        super()._adjust_m_cap(action, low)


@CATALOGUE.mutant("reduce-to-zero", "escalation", "reduce halves m_cap without max(1, …): 1 becomes 0", "6.5.2",
                  _REDUCE)
class ReduceToZero(MutantSession):
    """Bug: reduce sets m_cap to floor(m_cap / 2) without max(1, …), so 1 becomes 0."""

    control_class = _HalvesToZero


class _HalvesRoundingUp(SpeculationControl):
    def _adjust_m_cap(self, action: Action, low: bool) -> None:
        if action is Action.REDUCE:
            self.m_cap = max(1, -(-self.limit() // 2))
            return
        super()._adjust_m_cap(action, low)


@CATALOGUE.mutant("reduce-rounds-up", "escalation", "reduce halves m_cap rounding up: an odd m_cap keeps one too many",
                  "6.5.2", _REDUCE)
class ReduceRoundsUp(MutantSession):
    """Bug: reduce halves m_cap rounding up (ceil), so 3 becomes 2, not 1; even m_caps halve as they should."""

    control_class = _HalvesRoundingUp


class _RestoresToMMax(SpeculationControl):
    def on_assignment(self, m_init: int) -> None:
        super().on_assignment(m_init)
        self.m_ceiling = self.policy.m_max


@CATALOGUE.mutant("restore-past-m-init", "escalation", "after a reduce, good rounds restore m_cap up to m_max, past "
                  "m_init", "P1-CTL-4", "After a reduction, m_cap is restored by one per round that is not low, up to "
                  "min(m_max, m_init of the latest assignment).", profile_only=True)
class RestorePastMInit(MutantSession):
    """Bug: after a reduce, good rounds restore m_cap up to m_max, past the assignment's m_init."""

    control_class = _RestoresToMMax


@CATALOGUE.mutant("self-decode-greedy-under-rule-2", "escalation", "self-decoding under rule 2 takes p's argmax, not "
                  "a draw from p", "6.5.2, P1-SAMP-3", "The verifier decodes the session itself with the target model.",
                  profile_only=True)
class SelfDecodeGreedyUnderRule2(MutantSession):
    """Bug: self-decoding takes p's most probable token under rule 2 too, where it should draw from p."""

    def self_decode(self, logits_row: npt.ArrayLike, uniforms: UniformSource) -> PendingCommit:
        pending = super().self_decode(logits_row, uniforms)
        if self.contract.rule != RULE_SPECULATIVE_SAMPLING:
            return pending
        round_number = pending.record.round
        p_row = self.target_rows(np.asarray(logits_row)[None, :], self.sampling_for(round_number))[0]
        emitted, finished = truncate([greedy_token(p_row)], self.contract.stop, self.contract.max_new,
                                     len(self.output))
        action = Action.FINISH if finished else Action.SELF_DECODE
        return PendingCommit(self._record(round_number, emitted), None, action, self_decoded=True)


@CATALOGUE.mutant("self-decoding-state-active", "escalation", "session-state says active (0) during self-decoding",
                  "P1-STATE-1", "`session-state.state`: 0 active, 3 self-decoding, 4 finished, 5 failed (the action "
                  "codes).", profile_only=True)
class SelfDecodingStateActive(MutantSession):
    """Bug: session-state says 0 (active) during self-decoding, not 3 (P1-STATE-1)."""

    def state(self) -> SessionState:
        state = super().state()
        return dataclasses.replace(state, state=0) if self.self_decoding else state


@dataclasses.dataclass(frozen=True)
class _LoadBlindPolicy(EscalationPolicy):
    def self_decode_permitted(self, load: int) -> bool:
        return self.self_load is not None


@CATALOGUE.mutant("self-decode-despite-load", "escalation", "self_decode is applied (and kept up) whatever the load",
                  "6.5.2", "This action is permitted only if the contract contains self_load and the verifier's "
                  "current load does not exceed it")
class SelfDecodeDespiteLoad(MutantSession):
    """Bug: self_decode is applied whenever the contract has self_load, whatever the load."""

    policy_class = _LoadBlindPolicy


class _KeepsJ(SpeculationControl):
    def _count(self, low: bool) -> None:
        if low:
            self.c, self.g = self.c + 1, 0
        else:
            self.c, self.g = 0, self.g + 1


@CATALOGUE.mutant("j-not-reset", "escalation", "R rounds that are not low do not reset j", "6.5.2",
                  "when g reaches R, where R is low_rounds, j is reset to zero.")
class JNotReset(MutantSession):
    """Bug: g reaching R does not reset j, so the ladder never starts over."""

    control_class = _KeepsJ


@CATALOGUE.mutant("no-switch-event", "escalation", "switch drops the drafter but never tells the router", "6.5.2",
                  "The verifier sends an event to the router, which assigns the session to another drafter")
class NoSwitchEvent(MutantSession):
    def _apply(self, action: Action) -> list[Event]:
        """Bug: switch stops the drafter but the router is never sent the event."""
        events = super()._apply(action)
        return [] if action is Action.SWITCH else events


# ---------------------------------------------------------------------- policy and closed sessions


@CATALOGUE.mutant("policy-immediate", "policy", "a policy applies from the next round, whatever its from_round", "6.6",
                  "The verifier applies the new profile to rounds numbered from_round and later")
class PolicyImmediate(MutantSession):
    def sampling_for(self, round_number: int) -> Sampling | None:
        """Bug: the latest policy applies at once, whatever its from_round."""
        return self._policies[-1].sampling if self._policies else self.contract.sampling


class _ReopensOnRound(SpeculationControl):
    def on_round(self, accepted: int, proposed: int, finished: bool, load: int) -> RoundControl:
        self.closed = False
        return super().on_round(accepted, proposed, finished, load)


@CATALOGUE.mutant("accept-after-finish", "closed", "a finished or failed session keeps accepting and committing "
                  "proposals", "P1-CTL-3", "After `finish` or `fail` every new proposal, drafter change and policy "
                  "update gets 410 `sdcp-session-closed`", profile_only=True)
class AcceptAfterFinish(MutantSession):
    """Bug: a finished or failed session keeps accepting (and committing) proposals."""

    control_class = _ReopensOnRound

    def _require_open(self) -> None:
        pass


@CATALOGUE.mutant("absent-temperature-greedy", "rule-2", "a rule-2 profile without a temperature is taken as "
                  "temperature 0", "P1-NUM-1", "Under rule 2 an absent temperature means 1.0.", profile_only=True)
class AbsentTemperatureGreedy(MutantSession):
    """Bug: a rule-2 profile without temperature_milli is taken as temperature 0 (one-hot p), the rule-1 default
    carried over; P1-NUM-1 says 1.0."""

    def target_rows(self, logits: npt.ArrayLike, sampling: Sampling | None) -> FloatRows:
        profile = sampling.to_obj() if sampling is not None else {}
        if self.contract.rule == RULE_SPECULATIVE_SAMPLING and "temperature_milli" not in profile:
            profile = {**profile, "temperature_milli": 0}
        return np.stack([target_distribution(row, profile, self.contract.rule) for row in np.asarray(logits)])


@CATALOGUE.mutant("self-budget-not-reset", "escalation", "self_max counts over the session, not per period: a second "
                  "period stops before its first token", "6.5.2", "self_max:  uint, ; max tokens per self-decode "
                  "period")
class SelfBudgetNotReset(MutantSession):
    """Bug: self_max counted over the session, not per period: the count is never reset when a period starts, so a
    second period stops before its first token."""

    def start_self_decoding(self) -> None:
        self.phase = Phase.SELF_DECODING


@CATALOGUE.mutant("self-decoded-token-restarts-period", "escalation", "an assignment during self-decoding is undone: "
                  "the commit of the token under way starts a new period and drops the new drafter", "P1-EVT-1",
                  "until a new assignment arrives.", profile_only=True)
class SelfDecodedTokenRestartsPeriod(MutantSession):
    """Bug: the commit of a self-decoded token applies its action like a verdict's, so the token whose append was
    under way when an assignment ended the period starts a new period (and drops the new drafter). The reference
    had it until VER-6.5-ESC-020 found it."""

    def commit(self, pending: PendingCommit) -> Committed:
        if pending.verdict is not None or pending.action is not Action.SELF_DECODE:
            return super().commit(pending)
        self.check_commit_order(pending.record)
        self.output.extend(pending.record.emitted)
        self.digest = pending.record.digest
        self.round = pending.record.round
        self.self_decoded_in_period += 1
        return Committed(None, tuple(self._apply(pending.action)))


@CATALOGUE.mutant("final-while-self-decoding", "escalation", "output read during self-decoding says final", "6.7",
                  _FINAL)
class FinalWhileSelfDecoding(MutantSession):
    """Bug: output read during self-decoding says final (the period taken for the session's end)."""

    def output_from(self, start: int) -> Output | None:
        output = super().output_from(start)
        if output is not None and self.phase is Phase.SELF_DECODING:
            return dataclasses.replace(output, final=True)
        return output


__all__ = [
    "AbsentTemperatureGreedy",
    "AcceptAfterFinish",
    "AcceptAnyDrafter",
    "AcceptExtraPosition",
    "AcceptMInitZero",
    "AcceptZeroQ",
    "AcceptedAfterTruncation",
    "BonusFromPA",
    "ConcurrentDuplicatesCommitted",
    "D0WithoutDomain",
    "DigestLittleEndian",
    "DrawBeforeQCheck",
    "FinalWhileSelfDecoding",
    "IgnoreMInit",
    "IgnoreReassignment",
    "JNotReset",
    "LimitKeepsMInit",
    "LimitOffByOne",
    "MaxNewOffByOne",
    "NeverEscalate",
    "NoStopTruncation",
    "NoSwitchEvent",
    "OutputFromOffByOne",
    "OutputWithoutFinal",
    "PolicyImmediate",
    "PurposeSwapped",
    "ReduceRoundsUp",
    "ReduceToZero",
    "ResidualFromP",
    "RestorePastMInit",
    "ReverifyRetriedRound",
    "SelfBudgetNotReset",
    "SelfDecodeDespiteLoad",
    "SelfDecodeGreedyUnderRule2",
    "SelfDecodedTokenRestartsPeriod",
    "SelfDecodingStateActive",
    "SkipBaseDigestCheck",
    "SkipEpochCheck",
    "SkipRoundCheck",
    "StaleBaseWithoutState",
    "StoredVerdictRefreshed",
    "TiesToLargerId",
    "TrustDrafterMember",
    "UniformIndexOffByOne",
]
