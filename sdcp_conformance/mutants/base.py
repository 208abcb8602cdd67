"""The machinery of the mutant catalogue: a hookable copy of the reference verifier and the mutant record.

A mutant is the reference verifier with ONE planted bug. The bug lives in a
subclass of :class:`MutantSession` (the session machine) or :class:`MutantApp`
(the HTTP layer), or in a wrapper around the cache or the target model; the
reference files are never edited and no global is patched. The two base
classes behave exactly like the reference: they only split a few reference
methods at the points where a bug is planted (``decide``, ``admit``,
``commit`` and session construction), so an unmutated ``MutantApp`` passes
everything the reference passes — ``tests/mutants`` checks that.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from sdcp_conformance.errors import InvalidArgument, ProtocolError
from sdcp_conformance.harness.case import Verdict as CaseVerdict
from sdcp_conformance.protocol.chain import extend_digest
from sdcp_conformance.protocol.contract import RULE_SPECULATIVE_SAMPLING, validate_contract
from sdcp_conformance.protocol.control import EscalationPolicy, SpeculationControl
from sdcp_conformance.protocol.messages import Proposal, SessionOpen, Verdict
from sdcp_conformance.protocol.problems import ProblemType
from sdcp_conformance.protocol.rng import UniformSource
from sdcp_conformance.protocol.rules import RuleOutcome, rule1, rule2, truncate
from sdcp_conformance.reference.verifier.app import VerifierApp, VerifierConfig, _ok, _SessionSlot
from sdcp_conformance.reference.verifier.ports import Cache, RouterLink, TargetModel
from sdcp_conformance.reference.verifier.session import (
    Admission,
    CommitRecord,
    Committed,
    PendingCommit,
    StoredVerdict,
    Ticket,
    VerifierSession,
    WaitForRound,
)
from sdcp_conformance.transport.types import Request, Response

FloatRows = npt.NDArray[np.float64]


class MutantSession(VerifierSession):
    """The reference session machine with hooks where the catalogue plants its bugs.

    Every hook's default is the reference behaviour, copied from
    :class:`~sdcp_conformance.reference.verifier.session.VerifierSession`.
    """

    control_class: ClassVar[type[SpeculationControl]] = SpeculationControl
    policy_class: ClassVar[type[EscalationPolicy]] = EscalationPolicy

    def __init__(self, opening: SessionOpen, prompt: Sequence[int], *, vocab_size: int,
                 committed_output: Sequence[int] = ()) -> None:
        super().__init__(opening, prompt, vocab_size=vocab_size, committed_output=committed_output)
        self.last_load = 0
        policy = self.control.policy
        if self.control_class is not SpeculationControl or self.policy_class is not EscalationPolicy:
            fields = {field.name: getattr(policy, field.name) for field in dataclasses.fields(policy)}
            self.control = self.control_class(self.policy_class(**fields))

    def rebase(self, contract_digest: bytes, d0: bytes) -> None:
        """Replace the contract digest and d[0] (for mutants that compute them wrongly)."""
        self.contract_digest = contract_digest
        self._d0 = d0
        self.digest = extend_digest(d0, self.output)

    # ------------------------------------------------------------------ admit, split at its steps

    def admit(self, proposal: Proposal, peer: str | None) -> Admission:
        """The reference ``admit`` (§6.3 steps 1–4 and limits) with the idempotency steps as hooks."""
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
            raise ProtocolError(ProblemType.Q_UNAVAILABLE, "rule 2 needs q_rows and the proposal has none")
        ticket = Ticket(proposal, self.sampling_for(proposal.round), needs_q)
        self._in_flight = ticket
        return ticket

    def stored_verdict(self, round_number: int) -> Verdict | None:
        return self._verdicts.get(round_number)

    def concurrent(self, proposal: Proposal) -> WaitForRound | None:
        in_flight = self._in_flight
        if in_flight is not None and in_flight.proposal.round == proposal.round:
            if in_flight.proposal.identity_key() == proposal.identity_key():
                return WaitForRound(proposal.round)
            raise self._stale_base(f"round {proposal.round} is being verified for another proposal")
        return None

    # ------------------------------------------------------------------ decide, split at its steps

    def decide(self, ticket: Ticket, logits: npt.ArrayLike, uniforms: UniformSource, load: int,
               q_rows: FloatRows | None = None) -> PendingCommit:
        """The reference ``decide`` with acceptance, truncation and the reported a as hooks."""
        self._require_current(ticket)
        self.last_load = load
        tokens = list(ticket.proposal.tokens)
        p_rows = self.target_rows(logits, ticket.sampling)
        outcome = self.accept(ticket, p_rows, q_rows, uniforms)
        emitted, finished = self.truncate_emitted(outcome.emitted)
        accepted = self.reported_accepted(outcome, emitted)
        control = self.control.on_round(accepted, len(tokens), finished, load)
        record = self._record(ticket.proposal.round, emitted)
        verdict = Verdict(
            session=self.session, epoch=self.epoch, round=ticket.proposal.round, accepted=accepted,
            emitted=tuple(emitted), committed=record.committed, digest=record.digest, action=control.action,
            m_cap=control.m_cap, low=control.low, load=load,
        )
        return PendingCommit(record, verdict, control.action, self_decoded=False, proposed=len(tokens))

    def accept(self, ticket: Ticket, p_rows: FloatRows, q_rows: FloatRows | None,
               uniforms: UniformSource) -> RuleOutcome:
        tokens = list(ticket.proposal.tokens)
        if ticket.needs_q:
            if q_rows is None:
                raise InvalidArgument("rule 2 needs the checked q rows")
            return rule2(p_rows, q_rows, tokens, uniforms)
        return rule1(p_rows, tokens)

    def truncate_emitted(self, emitted: Sequence[int]) -> tuple[list[int], bool]:
        return truncate(emitted, self.contract.stop, self.contract.max_new, len(self.output))

    def reported_accepted(self, outcome: RuleOutcome, emitted: Sequence[int]) -> int:
        """P1-CTL-5: a before truncation, for the verdict and the low-round test alike."""
        return outcome.accepted

    # ------------------------------------------------------------------ commit

    def commit(self, pending: PendingCommit) -> Committed:
        """The reference ``commit`` with its order check as a hook."""
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
        return Committed(pending.verdict, tuple(self._apply(pending.action)))

    def check_commit_order(self, record: CommitRecord) -> None:
        if record.round != self.round + 1 or record.epoch != self.epoch:
            raise InvalidArgument("pending commit does not follow the session's last round")


class MutantApp(VerifierApp):
    """The reference HTTP layer, building its sessions with a :class:`MutantSession` subclass."""

    def __init__(self, config: VerifierConfig, model: TargetModel | Sequence[TargetModel], cache: Cache,
                 router: RouterLink, *, session_class: type[MutantSession] = MutantSession) -> None:
        super().__init__(config, model, cache, router)
        self.session_class = session_class

    def new_session(self, request: Request, opening: SessionOpen, prompt: Sequence[int], vocab_size: int,
                    committed: Sequence[int]) -> VerifierSession:
        """Hook: the session machine for a session-open (the reference constructs it inline)."""
        return self.session_class(opening, prompt, vocab_size=vocab_size, committed_output=committed)

    async def _open_session(self, request: Request, parts: list[str]) -> Response:
        # A copy of the reference's _open_session; only the construction goes through new_session.
        opening = SessionOpen.from_cbor(request.body)
        self._require_router(request)
        validate_contract(opening.contract)
        self._check_model(opening)
        existing = self.sessions.get(opening.session)
        if existing is not None and not self._replaces(existing.machine, opening):
            return _ok(existing.machine.state(), 200)
        prompt = await self._tokens(opening.prompt)
        committed: list[int] = []
        if opening.resume is not None:
            committed = await self._tokens(opening.resume.committed_tokens)
        model = self.models[opening.contract.target]
        machine = self.new_session(request, opening, prompt, model.vocab_size, committed)
        if existing is not None and existing.self_decoder is not None:
            existing.self_decoder.cancel()
        model.forget(opening.session)
        self.sessions[opening.session] = _SessionSlot(machine, opening.commit_log)
        return _ok(machine.state(), 201)


STRICT_KILLS = frozenset({CaseVerdict.FAILED})
PROFILE_KILLS = frozenset({CaseVerdict.FAILED, CaseVerdict.NON_STRICT})


@dataclass(frozen=True)
class Mutant:
    """One named faulty variant of the reference verifier."""

    name: str
    """Stable forever (killers.json and test IDs use it)."""
    area: str
    description: str
    section: str
    violates: str
    """The sentence of the draft (or profile item) the bug breaks."""
    session: type[MutantSession] = MutantSession
    app: type[MutantApp] = MutantApp
    wrap_cache: Callable[[Cache], Cache] | None = None
    wrap_model: Callable[[TargetModel], TargetModel] | None = None
    profile_only: bool = False
    """The bug breaks only a profile choice, so the suite can at most say NON-STRICT about it."""

    @property
    def kill_verdicts(self) -> frozenset[CaseVerdict]:
        """Verdicts that count as detecting this mutant (NON-STRICT only for a profile-only bug)."""
        return PROFILE_KILLS if self.profile_only else STRICT_KILLS

    def factory(self, config: VerifierConfig, model: TargetModel | Sequence[TargetModel], cache: Cache,
                router: RouterLink) -> VerifierApp:
        """``factory(config, model, cache, router)`` for ``certify(app_factory=...)``."""
        models = list(model) if isinstance(model, Sequence) else [model]
        if self.wrap_model is not None:
            models = [self.wrap_model(candidate) for candidate in models]
        if self.wrap_cache is not None:
            cache = self.wrap_cache(cache)
        return self.app(config, models, cache, router, session_class=self.session)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "area": self.area, "description": self.description, "section": self.section,
                "violates": self.violates, "profile_only": self.profile_only}


UNMUTATED = Mutant("unmutated", "none", "the hookable base classes with no bug planted (a control)", "-", "-")
"""Must pass every case the reference passes: proves a kill comes from the planted bug, not the hooks."""


__all__ = ["PROFILE_KILLS", "STRICT_KILLS", "UNMUTATED", "Mutant", "MutantApp", "MutantSession"]
