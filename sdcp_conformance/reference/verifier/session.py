"""The reference verifier's session state machine (draft §6.1, §6.3–§6.9), sans I/O.

One :class:`VerifierSession` holds everything a verifier knows about one
session and decides every request about it. It never fetches, scores, appends
or sleeps: the I/O layer brings the draft rows, the target logits, the
uniforms and the verifier's load in, and carries the commit record out. The
§6.3 steps for a proposal are split where I/O must happen between them:

1. :meth:`VerifierSession.admit` — authorization, fencing, idempotency, base
   and round checks, limits, and whether the rule needs draft rows;
2. :meth:`VerifierSession.check_q` — rule 2's preconditions on the fetched rows;
3. :meth:`VerifierSession.decide` — acceptance, truncation and control, giving
   a :class:`PendingCommit` (nothing is visible yet);
4. :meth:`VerifierSession.commit` after the commit-log append succeeded, or
   :meth:`VerifierSession.abandon` / :meth:`VerifierSession.fence` when it did not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from sdcp_conformance.cache.commit_log import CommitRecord
from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.protocol.chain import extend_digest, prefix_digest
from sdcp_conformance.protocol.contract import RULE_SPECULATIVE_SAMPLING, digest_of
from sdcp_conformance.protocol.control import Action, EscalationPolicy, Phase, SpeculationControl
from sdcp_conformance.protocol.errors import ProtocolError
from sdcp_conformance.protocol.messages import (
    Assignment,
    Contract,
    Event,
    Output,
    Policy,
    Proposal,
    Sampling,
    SessionOpen,
    SessionState,
    Verdict,
)
from sdcp_conformance.protocol.problems import ProblemType
from sdcp_conformance.protocol.rng import PURPOSE_DRAW, UniformSource
from sdcp_conformance.protocol.rules import RuleOutcome, check_q_rows, parse_q_rows, rule1, rule2, truncate
from sdcp_conformance.protocol.sampling import draw_token, greedy_token, target_distribution
from sdcp_conformance.reference.verifier.decisions import (
    ASSIGNMENT_ENDS_SELF_DECODING,
    FENCED_SESSION_PROBLEM,
    M_INIT_ZERO,
    PROMPT_OUT_OF_VOCABULARY,
    RESUME_MISMATCH,
    TOKEN_OUT_OF_VOCABULARY,
)

FloatRows = npt.NDArray[np.float64]


@dataclass(frozen=True)
class StoredVerdict:
    """§6.3 Idempotency: "if a verdict for this round already exists, return it unchanged"."""

    verdict: Verdict


@dataclass(frozen=True)
class WaitForRound:
    """§6.3: "if the round is being verified for an identical earlier request, wait for that verdict"."""

    round: int


@dataclass(frozen=True)
class Ticket:
    """An admitted proposal: its round is now in flight until committed or abandoned."""

    proposal: Proposal
    sampling: Sampling | None
    needs_q: bool


Admission = StoredVerdict | WaitForRound | Ticket


@dataclass(frozen=True)
class PendingCommit:
    """A decided round waiting for its commit-log append; nothing is released before it."""

    record: CommitRecord
    verdict: Verdict | None  # None for a self-decoded round (no proposal, no verdict)
    action: Action
    self_decoded: bool
    proposed: int = 0
    """M of the proposal (0 for a self-decoded round)."""


@dataclass(frozen=True)
class Committed:
    """The result of a successful commit: the verdict to send and the events to post."""

    verdict: Verdict | None
    events: tuple[Event, ...]


class VerifierSession:
    """Everything one verifier decides about one session."""

    def __init__(
        self,
        opening: SessionOpen,
        prompt: Sequence[int],
        *,
        vocab_size: int,
        committed_output: Sequence[int] = (),
    ) -> None:
        self.session = opening.session
        self.epoch = opening.epoch
        self.contract: Contract = opening.contract
        self.contract_digest = digest_of(opening.contract)
        self.vocab_size = vocab_size
        self.prompt = tuple(prompt)
        if not self.prompt or any(not 0 <= token < vocab_size for token in self.prompt):
            # P1-SES-1: "An empty prompt is 400 sdcp-bad-message"; D-VER-2.
            raise ProtocolError(PROMPT_OUT_OF_VOCABULARY, "the prompt is empty or leaves the vocabulary")
        self._d0 = prefix_digest(self.contract_digest, self.prompt)
        self.output: list[int] = list(committed_output)
        self.digest = extend_digest(self._d0, self.output)
        self.round = opening.resume.round if opening.resume else 0
        if opening.resume is not None:
            self._check_resume(opening)
        self.phase = Phase.ACTIVE
        self.fenced = False
        self.drafter: str | None = None
        self.control = SpeculationControl(EscalationPolicy.from_contract(self.contract.to_obj()))
        self._verdicts: dict[int, Verdict] = {}
        self.proposed: dict[int, int] = {}
        """M of each verified round, for measurements."""
        self._in_flight: Ticket | None = None
        self._policies: list[Policy] = []
        self.self_decoded_in_period = 0  # D-VER-4: counters start afresh on resume
        if self.output and len(self.output) >= self.contract.max_new:
            self.phase = Phase.FINISHED

    def _check_resume(self, opening: SessionOpen) -> None:
        resume = opening.resume
        assert resume is not None
        if resume.committed != len(self.output) or resume.digest != self.digest:
            raise ProtocolError(
                RESUME_MISMATCH,
                f"resume names {resume.committed} committed tokens and a digest that the "
                f"{len(self.output)} tokens of committed_tokens do not reproduce",
            )

    # ------------------------------------------------------------------ state

    def state(self) -> SessionState:
        return SessionState(
            session=self.session,
            epoch=self.epoch,
            round=self.round,
            committed=len(self.output),
            digest=self.digest,
            state=int(self.phase),
        )

    @property
    def self_decoding(self) -> bool:
        return self.phase is Phase.SELF_DECODING

    @property
    def closed(self) -> bool:
        return self.phase in (Phase.FINISHED, Phase.FAILED)

    def verdicts(self) -> dict[int, Verdict]:
        """Every stored verdict by round (what idempotent retries are answered with)."""
        return dict(self._verdicts)

    def digest_at(self, n: int) -> bytes:
        """d[n] recomputed from the committed tokens (§4.2)."""
        return extend_digest(self._d0, self.output[:n])

    def _stale_base(self, detail: str) -> ProtocolError:
        # P1-ERR-2: the 409 carries the current session-state.
        return ProtocolError(ProblemType.STALE_BASE, detail, state=self.state().to_obj())

    def _require_serving(self) -> None:
        # §6.3 Commit: after a fenced append the verifier "MUST ... stop serving
        # the session". D-VER-7: every later request gets 409 sdcp-stale-epoch.
        if self.fenced:
            raise ProtocolError(FENCED_SESSION_PROBLEM, "this verifier was fenced off the session")

    def _require_open(self) -> None:
        if self.closed:
            raise ProtocolError(ProblemType.SESSION_CLOSED, f"session is {self.phase.name.lower()}")

    def _require_epoch(self, epoch: int) -> None:
        if epoch != self.epoch:
            raise ProtocolError(
                ProblemType.STALE_EPOCH, f"epoch {epoch} is not the session epoch {self.epoch}"
            )

    # ------------------------------------------------------------------ router resources

    def assign(self, assignment: Assignment) -> SessionState:
        """PUT sessions/{id}/drafter (§6.1): the latest assignment names the drafter."""
        self._require_serving()
        self._require_epoch(assignment.epoch)
        self._require_open()
        if assignment.m_init < 1:
            raise ProtocolError(M_INIT_ZERO, "m_init must be at least 1 (P1-DRF-2)")
        self.control.on_assignment(assignment.m_init)
        self.drafter = assignment.drafter
        if self.phase is Phase.SELF_DECODING and ASSIGNMENT_ENDS_SELF_DECODING:
            self.phase = Phase.ACTIVE
        return self.state()

    def set_policy(self, policy: Policy) -> SessionState:
        """POST sessions/{id}/policy (§6.6, P1-POL-1)."""
        self._require_serving()
        self._require_open()
        if policy.from_round <= self.round:
            raise self._stale_base(
                f"from_round {policy.from_round} is not greater than the current round {self.round}"
            )
        self._policies.append(policy)
        return self.state()

    def sampling_for(self, round_number: int) -> Sampling | None:
        """§6.6: the profile of a round; P1-POL-1: "the latest applicable policy wins"."""
        sampling = self.contract.sampling
        for policy in self._policies:
            if policy.from_round <= round_number:
                sampling = policy.sampling
        return sampling

    # ------------------------------------------------------------------ proposals

    def admit(self, proposal: Proposal, peer: str | None) -> Admission:
        """§6.3 steps 1–4 and the limit check, in the draft's order."""
        self._authorize(proposal, peer)
        self._require_serving()
        self._require_epoch(proposal.epoch)
        stored = self.stored_verdict(proposal.round)
        if stored is not None:
            return StoredVerdict(stored)
        waiting = self.concurrent(proposal)
        if waiting is not None:
            return waiting
        self._require_open()
        self._check_base(proposal)
        self._check_limits(proposal)
        needs_q = self.contract.rule == RULE_SPECULATIVE_SAMPLING
        if needs_q and proposal.q_rows is None:
            # P1-Q-1: "a proposal without q_rows ... gets 409 sdcp-q-unavailable".
            raise ProtocolError(ProblemType.Q_UNAVAILABLE, "rule 2 needs q_rows and the proposal has none")
        ticket = Ticket(proposal, self.sampling_for(proposal.round), needs_q)
        self._in_flight = ticket
        return ticket

    def stored_verdict(self, round_number: int) -> Verdict | None:
        """§6.3 Idempotency: "if a verdict for this round already exists, return it unchanged"."""
        return self._verdicts.get(round_number)

    def concurrent(self, proposal: Proposal) -> WaitForRound | None:
        """§6.3: an identical request for the round in flight waits; P1-IDEM-1: a different one is refused."""
        in_flight = self._in_flight
        if in_flight is None or in_flight.proposal.round != proposal.round:
            return None
        if in_flight.proposal.identity_key() == proposal.identity_key():
            return WaitForRound(proposal.round)
        raise self._stale_base(f"round {proposal.round} is being verified for another proposal")

    def _authorize(self, proposal: Proposal, peer: str | None) -> None:
        # §6.3 Authorization: "the authenticated client MUST be the drafter named
        # in the latest assignment"; P1-ID-1: the proposal's drafter member too.
        if self.drafter is None or peer != self.drafter or proposal.drafter != self.drafter:
            raise ProtocolError(
                ProblemType.NOT_ASSIGNED, f"{peer!r} is not the drafter assigned to the session"
            )

    def _check_base(self, proposal: Proposal) -> None:
        # §6.3 Base check: "if base is not the committed length or base_digest is
        # not d[base], respond 409 ... If round is not the last round plus one,
        # respond 409 likewise."
        if proposal.base != len(self.output) or proposal.base_digest != self.digest:
            raise self._stale_base(
                f"base {proposal.base} does not match the committed prefix of {len(self.output)} tokens"
            )
        if proposal.round != self.round + 1:
            raise self._stale_base(f"round {proposal.round} is not {self.round + 1}")

    def _check_limits(self, proposal: Proposal) -> None:
        m = len(proposal.tokens)
        limit = min(self.contract.m_max, self.control.limit())
        if m > limit:
            # P1-CTL-1: "A proposal over the limit gets 422 sdcp-limit and changes nothing."
            raise ProtocolError(ProblemType.LIMIT, f"M = {m} exceeds the limit {limit}")
        outside = [token for token in proposal.tokens if not 0 <= token < self.vocab_size]
        if outside:
            raise ProtocolError(TOKEN_OUT_OF_VOCABULARY, f"tokens {outside} are outside the vocabulary")

    def check_q(self, ticket: Ticket, q_blob: bytes) -> FloatRows:
        """§6.3 Preconditions of the rule, on the fetched rows, before any random value."""
        self._require_current(ticket)
        tokens = ticket.proposal.tokens
        rows = parse_q_rows(q_blob, len(tokens), self.vocab_size)
        return check_q_rows(rows, tokens, self.vocab_size)

    def abandon(self, ticket: Ticket) -> None:
        """The round ends without a verdict (q unavailable or bad, scoring or append failed)."""
        if self._in_flight is ticket:
            self._in_flight = None

    def _require_current(self, ticket: Ticket) -> None:
        if self._in_flight is not ticket:
            raise InvalidArgument("ticket is not the round in flight")

    def target_rows(self, logits: npt.ArrayLike, sampling: Sampling | None) -> FloatRows:
        """p rows from logits rows under a sampling profile (§4.1)."""
        profile = sampling.to_obj() if sampling is not None else None
        return np.stack([target_distribution(row, profile, self.contract.rule) for row in np.asarray(logits)])

    def decide(
        self,
        ticket: Ticket,
        logits: npt.ArrayLike,
        uniforms: UniformSource,
        load: int,
        q_rows: FloatRows | None = None,
    ) -> PendingCommit:
        """§6.3 Acceptance, truncation and Control for an admitted proposal.

        ``logits`` holds the target's M+1 rows after the committed prefix:
        after o[n] and after each proposed x[i].
        """
        self._require_current(ticket)
        tokens = list(ticket.proposal.tokens)
        p_rows = self.target_rows(logits, ticket.sampling)
        outcome = self.accept(ticket, p_rows, q_rows, uniforms)
        emitted, finished = self.truncate_emitted(outcome.emitted)
        accepted = self.reported_accepted(outcome, emitted)
        control = self.control.on_round(accepted, len(tokens), finished, load)
        record = self._record(ticket.proposal.round, emitted)
        verdict = Verdict(
            session=self.session,
            epoch=self.epoch,
            round=ticket.proposal.round,
            accepted=accepted,
            emitted=tuple(emitted),
            committed=record.committed,
            digest=record.digest,
            action=control.action,
            m_cap=control.m_cap,
            low=control.low,
            load=load,
        )
        return PendingCommit(record, verdict, control.action, self_decoded=False, proposed=len(tokens))

    def accept(
        self, ticket: Ticket, p_rows: FloatRows, q_rows: FloatRows | None, uniforms: UniformSource
    ) -> RuleOutcome:
        """§6.4: the contract's acceptance rule."""
        tokens = list(ticket.proposal.tokens)
        if not ticket.needs_q:
            return rule1(p_rows, tokens)
        if q_rows is None:
            raise InvalidArgument("rule 2 needs the checked q rows")
        return rule2(p_rows, q_rows, tokens, uniforms)

    def truncate_emitted(self, emitted: Sequence[int]) -> tuple[list[int], bool]:
        """§6.3: "It truncates the emitted tokens after the first stop token and at max_new"."""
        return truncate(emitted, self.contract.stop, self.contract.max_new, len(self.output))

    def reported_accepted(self, outcome: RuleOutcome, emitted: Sequence[int]) -> int:
        """P1-CTL-5: a before truncation, for the verdict and the low-round test alike."""
        return outcome.accepted

    def _record(self, round_number: int, emitted: Sequence[int]) -> CommitRecord:
        return CommitRecord(
            epoch=self.epoch,
            round=round_number,
            emitted=tuple(emitted),
            committed=len(self.output) + len(emitted),
            digest=extend_digest(self.digest, emitted),
        )

    # ------------------------------------------------------------------ self-decoding

    def start_self_decoding(self) -> None:
        self.phase = Phase.SELF_DECODING
        self.self_decoded_in_period = 0

    def self_decode(self, logits_row: npt.ArrayLike, uniforms: UniformSource) -> PendingCommit:
        """§6.5.2 self_decode: one token, "recorded as a round of its own, with no proposal".

        P1-SAMP-3: "A self-decoded token is drawn with that round's number, i = 1 and purpose 1."
        """
        if self.phase is not Phase.SELF_DECODING:
            raise InvalidArgument("the session is not self-decoding")
        round_number = self.round + 1
        p_row = self.target_rows(np.asarray(logits_row)[None, :], self.sampling_for(round_number))[0]
        if self.contract.rule == RULE_SPECULATIVE_SAMPLING:
            token = draw_token(p_row, uniforms.uniform(1, PURPOSE_DRAW))
        else:
            token = greedy_token(p_row)
        emitted, finished = truncate([token], self.contract.stop, self.contract.max_new, len(self.output))
        action = Action.FINISH if finished else Action.SELF_DECODE
        return PendingCommit(self._record(round_number, emitted), None, action, self_decoded=True)

    def self_decoding_should_stop(self, load: int) -> bool:
        """§6.5.2: self-decoding "stops after self_max tokens (if present) or when its load exceeds self_load"."""
        return not self.control.policy.self_decode_continues(self.self_decoded_in_period, load)

    def end_self_decoding(self) -> Event:
        """P1-EVT-1: "kind 0 when self-decoding ends and a drafter is needed again"."""
        self.phase = Phase.ACTIVE
        self.drafter = None
        return self._event(Action.CONTINUE)

    # ------------------------------------------------------------------ commit

    def commit(self, pending: PendingCommit) -> Committed:
        """Apply a round whose commit record was appended (§6.3 Commit, Control)."""
        record = pending.record
        self.check_commit_order(record)
        self.output.extend(record.emitted)
        self.digest = record.digest
        self.round = record.round
        if pending.verdict is not None:
            self._verdicts[record.round] = pending.verdict
            self.proposed[record.round] = pending.proposed
            self._in_flight = None
        else:
            self.self_decoded_in_period += 1
            if pending.action is Action.SELF_DECODE:
                # One more token of the period, which an assignment may have ended while this token's append was
                # under way (D-VER-6): it must not start a new period (nor take the new drafter's assignment away).
                return Committed(None, ())
        return Committed(pending.verdict, tuple(self._apply(pending.action)))

    def check_commit_order(self, record: CommitRecord) -> None:
        if record.round != self.round + 1 or record.epoch != self.epoch:
            raise InvalidArgument("pending commit does not follow the session's last round")

    def _apply(self, action: Action) -> list[Event]:
        # P1-EVT-1: events for switch (2), start of self-decoding (3), finish (4), fail (5).
        if action is Action.FINISH:
            self.phase = Phase.FINISHED
            return [self._event(Action.FINISH)]
        if action is Action.FAIL:
            self.phase = Phase.FAILED
            return [self._event(Action.FAIL)]
        if action is Action.SWITCH:
            self.drafter = None  # "the current drafter MUST stop proposing for the session"
            return [self._event(Action.SWITCH)]
        if action is Action.SELF_DECODE and self.phase is not Phase.SELF_DECODING:
            self.drafter = None
            self.start_self_decoding()
            return [self._event(Action.SELF_DECODE)]
        return []

    def fence(self) -> None:
        """§6.3: "If the append fails because the log has been fenced, the verifier
        MUST discard the round, release no output, and stop serving the session"."""
        self.fenced = True
        self._in_flight = None

    def _event(self, kind: Action) -> Event:
        return Event(
            session=self.session, epoch=self.epoch, kind=kind, committed=len(self.output), digest=self.digest
        )

    # ------------------------------------------------------------------ output

    def output_from(self, start: int) -> Output | None:
        """§6.7 GET output?from=n; None means "nothing yet: wait" (P1-OUT-1)."""
        self._require_serving()
        available = self.output[start:]
        if not available and not self.closed:
            return None
        final = self.closed
        return Output(
            session=self.session,
            epoch=self.epoch,
            from_=start,
            tokens=tuple(available),
            final=final,
            finish=(Action.FINISH if self.phase is Phase.FINISHED else Action.FAIL) if final else None,
        )


__all__ = [
    "Admission",
    "CommitRecord",
    "Committed",
    "PendingCommit",
    "Phase",
    "StoredVerdict",
    "Ticket",
    "VerifierSession",
    "WaitForRound",
]
