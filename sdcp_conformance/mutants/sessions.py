"""Session-machine mutants: each subclass overrides the smallest method that holds its one bug."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from sdcp_conformance.mutants.base import MutantSession
from sdcp_conformance.mutants.faulty import (
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

# ---------------------------------------------------------------------- authorization


class AcceptAnyDrafter(MutantSession):
    def _authorize(self, proposal: Proposal, peer: str | None) -> None:
        """Bug: any authenticated client may propose (mTLS is taken as enough)."""


class IgnoreReassignment(MutantSession):
    def assign(self, assignment: Assignment) -> SessionState:
        """Bug: the first drafter stays authorised; a later assignment only updates m_init."""
        first = self.drafter
        state = super().assign(assignment)
        if first is not None:
            self.drafter = first
        return state


class TrustDrafterMember(MutantSession):
    def _authorize(self, proposal: Proposal, peer: str | None) -> None:
        """Bug: the proposal's own ``drafter`` member is checked, not the client certificate."""
        if self.drafter is None or proposal.drafter != self.drafter:
            raise ProtocolError(ProblemType.NOT_ASSIGNED, f"{proposal.drafter!r} is not the assigned drafter")


# ---------------------------------------------------------------------- fencing


class SkipEpochCheck(MutantSession):
    def _require_epoch(self, epoch: int) -> None:
        """Bug: a message's epoch is never compared with the session epoch."""


# ---------------------------------------------------------------------- idempotency


class ReverifyRetriedRound(MutantSession):
    def stored_verdict(self, round_number: int) -> Verdict | None:
        """Bug: no verdict store is consulted; a retry is checked like a new proposal."""
        return None


class ConcurrentDuplicatesCommitted(MutantSession):
    def concurrent(self, proposal: Proposal) -> WaitForRound | None:
        """Bug: an identical copy that arrives while its round is verified is verified again."""
        return None

    def _require_current(self, ticket: Ticket) -> None:
        """(No single in-flight ticket is tracked, so every ticket is current.)"""

    def check_commit_order(self, record: CommitRecord) -> None:
        """(The commit is not serialised: both copies commit.)"""


class StoredVerdictRefreshed(MutantSession):
    def stored_verdict(self, round_number: int) -> Verdict | None:
        """Bug: a retry gets the stored verdict rebuilt with the current m_cap, low and load."""
        stored = super().stored_verdict(round_number)
        if stored is None:
            return None
        return stored.replace(m_cap=self.control.limit(), low=self.control.c, load=self.last_load)


# ---------------------------------------------------------------------- base and round


class SkipBaseDigestCheck(MutantSession):
    def _check_base(self, proposal: Proposal) -> None:
        """Bug: only the base length is compared, never base_digest."""
        if proposal.base != len(self.output):
            raise self._stale_base(f"base {proposal.base} is not {len(self.output)}")
        if proposal.round != self.round + 1:
            raise self._stale_base(f"round {proposal.round} is not {self.round + 1}")


class SkipRoundCheck(MutantSession):
    def _check_base(self, proposal: Proposal) -> None:
        """Bug: the proposal's round is trusted; only base and base_digest are checked."""
        if proposal.base != len(self.output) or proposal.base_digest != self.digest:
            raise self._stale_base(f"base {proposal.base} does not match the committed prefix")

    def check_commit_order(self, record: CommitRecord) -> None:
        """(Rounds are whatever the drafter says.)"""


class StaleBaseWithoutState(MutantSession):
    def _stale_base(self, detail: str) -> ProtocolError:
        """Bug: the 409 carries no ``state`` member (P1-ERR-2)."""
        return ProtocolError(ProblemType.STALE_BASE, detail)


# ---------------------------------------------------------------------- limits


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


class IgnoreMInit(MutantSession):
    def assign(self, assignment: Assignment) -> SessionState:
        """Bug: before the first verdict the limit is m_max; the assignment's m_init is not used."""
        state = super().assign(assignment)
        self.control.m_cap = self.contract.m_max
        return state


class AcceptMInitZero(MutantSession):
    def assign(self, assignment: Assignment) -> SessionState:
        """Bug: m_init 0 is taken like any other value (no P1-DRF-2 check): the limit becomes min(m_max, 0) = 0,
        so every proposal gets 422 sdcp-limit until a valid assignment replaces it."""
        if assignment.m_init >= 1:
            return super().assign(assignment)
        state = super().assign(assignment.replace(m_init=1))
        self.control.m_cap = self.control.m_ceiling = 0
        return state


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


class _LenientQ(MutantSession):
    """Checks the rows' size and values up front, but not q[i](x[i]) = 0."""

    def check_q(self, ticket: Ticket, q_blob: bytes) -> FloatRows:
        self._require_current(ticket)
        return lenient_q_rows(q_blob, len(ticket.proposal.tokens), self.vocab_size)


class DrawBeforeQCheck(_LenientQ):
    def accept(self, ticket: Ticket, p_rows: FloatRows, q_rows: FloatRows | None,
               uniforms: UniformSource) -> RuleOutcome:
        """Bug: q[i](x[i]) = 0 is found only when position i is evaluated, after r was drawn."""
        if not ticket.needs_q or q_rows is None:
            return super().accept(ticket, p_rows, q_rows, uniforms)
        return faulty_rule2(p_rows, q_rows, list(ticket.proposal.tokens), uniforms, Rule2Fault.LAZY_Q_CHECK)


class AcceptZeroQ(_LenientQ):
    def accept(self, ticket: Ticket, p_rows: FloatRows, q_rows: FloatRows | None,
               uniforms: UniformSource) -> RuleOutcome:
        """Bug: q[i](x[i]) = 0 gives an infinite ratio and the token is accepted."""
        if not ticket.needs_q or q_rows is None:
            return super().accept(ticket, p_rows, q_rows, uniforms)
        return faulty_rule2(p_rows, q_rows, list(ticket.proposal.tokens), uniforms, Rule2Fault.ZERO_Q_ACCEPTED)


# ---------------------------------------------------------------------- rules 1 and 2


def _rule1_mutant(fault: Rule1Fault) -> type[MutantSession]:
    class _Rule1(MutantSession):
        def accept(self, ticket: Ticket, p_rows: FloatRows, q_rows: FloatRows | None,
                   uniforms: UniformSource) -> RuleOutcome:
            if ticket.needs_q:
                return super().accept(ticket, p_rows, q_rows, uniforms)
            return faulty_rule1(p_rows, list(ticket.proposal.tokens), fault)

    _Rule1.__name__ = _Rule1.__qualname__ = f"Rule1{fault.name.title().replace('_', '')}"
    _Rule1.__doc__ = f"Bug (rule 1): {fault.value}."
    return _Rule1


def _rule2_mutant(fault: Rule2Fault) -> type[MutantSession]:
    class _Rule2(MutantSession):
        def accept(self, ticket: Ticket, p_rows: FloatRows, q_rows: FloatRows | None,
                   uniforms: UniformSource) -> RuleOutcome:
            if not ticket.needs_q or q_rows is None:
                return super().accept(ticket, p_rows, q_rows, uniforms)
            return faulty_rule2(p_rows, q_rows, list(ticket.proposal.tokens), uniforms, fault)

    _Rule2.__name__ = _Rule2.__qualname__ = f"Rule2{fault.name.title().replace('_', '')}"
    _Rule2.__doc__ = f"Bug (rule 2): {fault.value}."
    return _Rule2


TiesToLargerId = _rule1_mutant(Rule1Fault.TIES_TO_LARGER_ID)
BonusFromPA = _rule1_mutant(Rule1Fault.BONUS_FROM_P_A)
AcceptExtraPosition = _rule1_mutant(Rule1Fault.EXTRA_POSITION)
UniformIndexOffByOne = _rule2_mutant(Rule2Fault.INDEX_OFF_BY_ONE)
PurposeSwapped = _rule2_mutant(Rule2Fault.PURPOSE_SWAPPED)
ResidualFromP = _rule2_mutant(Rule2Fault.RESIDUAL_FROM_P)


# ---------------------------------------------------------------------- digests


class DigestLittleEndian(MutantSession):
    def _record(self, round_number: int, emitted: Sequence[int]) -> CommitRecord:
        """Bug: d[k] hashes uint32(o[k]) in little-endian order."""
        return CommitRecord(epoch=self.epoch, round=round_number, emitted=tuple(emitted),
                            committed=len(self.output) + len(emitted),
                            digest=little_endian_extend(self.digest, emitted))


class D0WithoutDomain(MutantSession):
    def __init__(self, opening: SessionOpen, prompt: Sequence[int], *, vocab_size: int,
                 committed_output: Sequence[int] = ()) -> None:
        """Bug: d[0] omits the "SDCP-PREFIX-1" || 0x00 domain separator."""
        super().__init__(opening, prompt, vocab_size=vocab_size, committed_output=committed_output)
        self.rebase(self.contract_digest, prefix_digest_without_domain(self.contract_digest, self.prompt))


# ---------------------------------------------------------------------- truncation


class NoStopTruncation(MutantSession):
    def truncate_emitted(self, emitted: Sequence[int]) -> tuple[list[int], bool]:
        """Bug: stop tokens are ignored; only max_new truncates."""
        kept = list(emitted)[: self.contract.max_new - len(self.output)]
        return kept, len(self.output) + len(kept) == self.contract.max_new


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


class AcceptedAfterTruncation(MutantSession):
    def reported_accepted(self, outcome: RuleOutcome, emitted: Sequence[int]) -> int:
        """Bug: a is counted after stop/max_new truncation (P1-CTL-5 says before)."""
        return min(outcome.accepted, len(emitted))


# ---------------------------------------------------------------------- output


class OutputFromOffByOne(MutantSession):
    def output_from(self, start: int) -> Output | None:
        """Bug: ``from`` is read as a 1-based index."""
        output = super().output_from(max(0, start - 1))
        return None if output is None else output.replace(from_=start)


class OutputWithoutFinal(MutantSession):
    def output_from(self, start: int) -> Output | None:
        """Bug: the final output never says ``final: true`` nor ``finish``."""
        output = super().output_from(start)
        return None if output is None else output.replace(final=False, finish=None)


# ---------------------------------------------------------------------- escalation


class _NeverEscalates(SpeculationControl):
    def _escalate(self, load: int) -> Action:
        return Action.CONTINUE


class NeverEscalate(MutantSession):
    """Bug: reaching R low rounds changes nothing; the fallback list is never applied."""

    control_class = _NeverEscalates


class _HalvesToZero(SpeculationControl):
    def _adjust_m_cap(self, action: Action, low: bool) -> None:
        if action is Action.REDUCE:
            self.m_cap = self.limit() // 2
            return
        super()._adjust_m_cap(action, low)


class ReduceToZero(MutantSession):
    """Bug: reduce sets m_cap to floor(m_cap / 2) without max(1, …), so 1 becomes 0."""

    control_class = _HalvesToZero


class _HalvesRoundingUp(SpeculationControl):
    def _adjust_m_cap(self, action: Action, low: bool) -> None:
        if action is Action.REDUCE:
            self.m_cap = max(1, -(-self.limit() // 2))
            return
        super()._adjust_m_cap(action, low)


class ReduceRoundsUp(MutantSession):
    """Bug: reduce halves m_cap rounding up (ceil), so 3 becomes 2, not 1; even m_caps halve as they should."""

    control_class = _HalvesRoundingUp


class _RestoresToMMax(SpeculationControl):
    def on_assignment(self, m_init: int) -> None:
        super().on_assignment(m_init)
        self.m_ceiling = self.policy.m_max


class RestorePastMInit(MutantSession):
    """Bug: after a reduce, good rounds restore m_cap up to m_max, past the assignment's m_init."""

    control_class = _RestoresToMMax


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


class SelfDecodingStateActive(MutantSession):
    """Bug: session-state says 0 (active) during self-decoding, not 3 (P1-STATE-1)."""

    def state(self) -> SessionState:
        state = super().state()
        return dataclasses.replace(state, state=0) if self.self_decoding else state


@dataclasses.dataclass(frozen=True)
class _LoadBlindPolicy(EscalationPolicy):
    def self_decode_permitted(self, load: int) -> bool:
        return self.self_load is not None


class SelfDecodeDespiteLoad(MutantSession):
    """Bug: self_decode is applied whenever the contract has self_load, whatever the load."""

    policy_class = _LoadBlindPolicy


class _KeepsJ(SpeculationControl):
    def _count(self, low: bool) -> None:
        if low:
            self.c, self.g = self.c + 1, 0
        else:
            self.c, self.g = 0, self.g + 1


class JNotReset(MutantSession):
    """Bug: g reaching R does not reset j, so the ladder never starts over."""

    control_class = _KeepsJ


class NoSwitchEvent(MutantSession):
    def _apply(self, action: Action) -> list[Event]:
        """Bug: switch stops the drafter but the router is never sent the event."""
        events = super()._apply(action)
        return [] if action is Action.SWITCH else events


# ---------------------------------------------------------------------- policy and closed sessions


class PolicyImmediate(MutantSession):
    def sampling_for(self, round_number: int) -> Sampling | None:
        """Bug: the latest policy applies at once, whatever its from_round."""
        return self._policies[-1].sampling if self._policies else self.contract.sampling


class _ReopensOnRound(SpeculationControl):
    def on_round(self, accepted: int, proposed: int, finished: bool, load: int) -> RoundControl:
        self.closed = False
        return super().on_round(accepted, proposed, finished, load)


class AcceptAfterFinish(MutantSession):
    """Bug: a finished or failed session keeps accepting (and committing) proposals."""

    control_class = _ReopensOnRound

    def _require_open(self) -> None:
        pass


class AbsentTemperatureGreedy(MutantSession):
    """Bug: a rule-2 profile without temperature_milli is taken as temperature 0 (one-hot p), the rule-1 default
    carried over; P1-NUM-1 says 1.0."""

    def target_rows(self, logits: npt.ArrayLike, sampling: Sampling | None) -> FloatRows:
        profile = sampling.to_obj() if sampling is not None else {}
        if self.contract.rule == RULE_SPECULATIVE_SAMPLING and "temperature_milli" not in profile:
            profile = {**profile, "temperature_milli": 0}
        return np.stack([target_distribution(row, profile, self.contract.rule) for row in np.asarray(logits)])


class SelfBudgetNotReset(MutantSession):
    """Bug: self_max counted over the session, not per period: the count is never reset when a period starts, so a
    second period stops before its first token."""

    def start_self_decoding(self) -> None:
        self.phase = Phase.SELF_DECODING


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
