"""The reference drafter's per-session state machine (draft §6.1, §6.2, §6.3, §6.9), sans I/O.

One :class:`DrafterSession` holds what a drafter knows about one assigned
session: the assignment, the committed prefix it has checked (n, d[n], the
output tokens), the round, the speculation limit, its acceptance estimates
and at most one outstanding proposal. It never drafts, fetches, posts or
sleeps: the app brings drafted tokens, verdicts, problems and output in, and
the machine answers what to do next (:class:`Next`).
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.protocol.chain import extend_digest, prefix_digest
from sdcp_conformance.protocol.contract import RULE_SPECULATIVE_SAMPLING, digest_of, validate_contract
from sdcp_conformance.protocol.control import Action
from sdcp_conformance.protocol.errors import ProtocolError
from sdcp_conformance.protocol.messages import Assignment, Output, Proposal, SessionState, Status, Verdict
from sdcp_conformance.protocol.problems import ProblemType
from sdcp_conformance.protocol.speculation import DEFAULT_ALPHA_WEIGHT, choose_m, update_alpha
from sdcp_conformance.reference.drafter.decisions import (
    BAD_PROMPT,
    FOREIGN_ASSIGNMENT,
    INCONSISTENT_COMMITTED_TOKENS,
)
from sdcp_conformance.reference.drafter.ports import Problem

log = logging.getLogger(__name__)

CLOSED_STATES = frozenset({int(Action.SELF_DECODE), int(Action.FINISH), int(Action.FAIL)})
"""P1-DRF-6: "a state of 3, 4 or 5 makes it stop instead"."""

STOPPING_ACTIONS = frozenset({Action.SWITCH, Action.SELF_DECODE, Action.FINISH, Action.FAIL})
"""§6.5.2: after switch "the current drafter MUST stop proposing"; self_decode,
finish and fail end drafting too. An unknown action reads as fail (§5.2), so it
stops the drafter (P1-DRF-9)."""

MIN_TIME_S = 1e-6
"""D-DRF-6: times are floored so §6.2's quotient is always defined."""


class Next(enum.Enum):
    """What the app does next for a session."""

    PROPOSE = "propose"
    """Draft and send the next proposal (after the backoff of ``setbacks``, if any)."""
    RESYNC = "resync"
    """Read the committed output it lacks: :meth:`DrafterSession.resync_start` onwards."""
    STOP = "stop"
    """Stop proposing for the session (see ``stopped``)."""


@dataclass(frozen=True)
class DrafterIdentity:
    """Who this drafter is: its base URI (P1-ID-1) and its model (P1-HASH-1, P1-HASH-2)."""

    base_uri: str
    model_sha256: bytes
    tokenizer_sha256: bytes
    vocab_size: int


@dataclass
class Estimates:
    """P1-DRF-8: "alpha for choosing M is per token ...; accept_milli in status is the EWMA of a/M"."""

    alpha: float
    accept: float | None = None
    weight: float = DEFAULT_ALPHA_WEIGHT

    def observe(self, accepted: int, proposed: int) -> None:
        self.alpha = update_alpha(self.alpha, accepted, proposed, self.weight)
        ratio = accepted / proposed
        self.accept = ratio if self.accept is None else self.accept + self.weight * (ratio - self.accept)

    @property
    def accept_milli(self) -> int | None:
        return None if self.accept is None else min(1000, max(0, round(1000 * self.accept)))


def check_assignment(assignment: Assignment, identity: DrafterIdentity) -> None:
    """Checks on an assignment that need no I/O and no held state (P1-DRF-2, P1-DRF-3, D-DRF-2)."""
    contract = assignment.contract
    validate_contract(contract)
    if contract.drafters is not None and identity.model_sha256 not in contract.drafters:
        # P1-DRF-3: "A drafter refuses (422 sdcp-bad-contract) an assignment whose
        # contract lists drafters without its model's digest or names another tokenizer."
        raise ProtocolError(ProblemType.BAD_CONTRACT, "the contract's drafters do not include this model")
    if contract.tokenizer != identity.tokenizer_sha256:
        raise ProtocolError(ProblemType.BAD_CONTRACT, "the contract names another tokenizer")
    if assignment.m_init < 1:
        # P1-DRF-2: "a drafter answers an assignment with m_init 0 with 400 sdcp-bad-message".
        raise ProtocolError(ProblemType.BAD_MESSAGE, "m_init must be at least 1")
    if assignment.drafter != identity.base_uri:
        raise ProtocolError(FOREIGN_ASSIGNMENT, f"the assignment names drafter {assignment.drafter!r}")


def check_epoch(held: DrafterSession | None, assignment: Assignment) -> None:
    """P1-DRF-7: "An assignment with a lower epoch than the one a drafter holds gets 409 sdcp-stale-epoch"."""
    if held is not None and assignment.epoch < held.epoch:
        raise ProtocolError(
            ProblemType.STALE_EPOCH, f"epoch {assignment.epoch} is below the held epoch {held.epoch}"
        )


def check_prompt(prompt: Sequence[int], vocab_size: int) -> tuple[int, ...]:
    """D-DRF-3: a non-empty prompt of tokens inside the vocabulary."""
    tokens = tuple(prompt)
    if not tokens or any(not 0 <= token < vocab_size for token in tokens):
        raise ProtocolError(BAD_PROMPT, "the prompt is empty or leaves the vocabulary")
    return tokens


class DrafterSession:
    """Everything one drafter decides about one assigned session.

    ``stopping``, :meth:`validate`, :meth:`accepts_resync` and :meth:`adopted_digest` are the points where
    the mutant catalogue plants bugs; the reference behaviour does not depend on being subclassed.
    """

    stopping: frozenset[Action] = STOPPING_ACTIONS

    def __init__(
        self,
        assignment: Assignment,
        prompt: Sequence[int],
        committed_output: Sequence[int] | None,
        *,
        identity: DrafterIdentity,
        estimates: Estimates,
        max_setbacks: int = 4,
    ) -> None:
        self.validate(assignment, identity)
        self.assignment = assignment
        self.identity = identity
        self.estimates = estimates
        self.max_setbacks = max_setbacks
        self.prompt = check_prompt(prompt, identity.vocab_size)
        self._d0 = prefix_digest(digest_of(assignment.contract), self.prompt)
        self.output: list[int] = []
        self.digest = self._d0
        self.round = assignment.round
        self.m_cap: int | None = None
        self.outstanding: Proposal | None = None
        self.stopped: str | None = None
        self.setbacks = 0
        self.last_observed: tuple[int, int] | None = None
        self._target: SessionState | None = None
        self._resync_buffer: list[int] = []
        self._start_from(assignment, committed_output)

    def _start_from(self, assignment: Assignment, committed_output: Sequence[int] | None) -> None:
        target = SessionState(
            session=assignment.session, epoch=assignment.epoch, round=assignment.round,
            committed=assignment.committed, digest=assignment.digest,
        )
        if committed_output is None and assignment.committed > 0:
            self._target = target  # D-DRF-4: read the committed tokens from the verifier first
            return
        tokens = list(committed_output or ())
        if len(tokens) != assignment.committed or extend_digest(self._d0, tokens) != assignment.digest:
            raise ProtocolError(
                INCONSISTENT_COMMITTED_TOKENS,
                f"{len(tokens)} committed tokens over d[0] do not reproduce the assignment's "
                f"committed {assignment.committed} and digest",
            )
        self.output, self.digest = tokens, assignment.digest

    @staticmethod
    def validate(assignment: Assignment, identity: DrafterIdentity) -> None:
        """The I/O-free checks of :func:`check_assignment` (a hook the mutant catalogue overrides)."""
        check_assignment(assignment, identity)

    # ------------------------------------------------------------------ views

    @property
    def session(self) -> bytes:
        return self.assignment.session

    @property
    def epoch(self) -> int:
        return self.assignment.epoch

    @property
    def verifier(self) -> str:
        return self.assignment.verifier

    @property
    def rule(self) -> int:
        return self.assignment.contract.rule

    @property
    def sampling(self) -> Mapping[str, int] | None:
        """The current profile: the assignment's ``sampling`` if updated, else the contract's (§6.6)."""
        profile = self.assignment.sampling or self.assignment.contract.sampling
        return None if profile is None else profile.to_obj()

    @property
    def context(self) -> tuple[int, ...]:
        return (*self.prompt, *self.output)

    @property
    def needs_resync(self) -> bool:
        return self._target is not None

    def limit(self) -> int:
        """§6.2: "1 <= M <= min(m_max, m_cap), where m_cap is the limit from the last
        verdict (m_init before the first)"."""
        cap = self.assignment.m_init if self.m_cap is None else self.m_cap
        return min(self.assignment.contract.m_max, cap)

    def choose_m(self, t_draft: float, t_verify: float) -> int:
        """§6.2's RECOMMENDED rule within the limit and D-DRF-7's budget cap."""
        remaining = self.assignment.contract.max_new - len(self.output)
        limit = min(self.limit(), max(1, remaining - 1))
        return choose_m(self.estimates.alpha, max(t_draft, 0.0), max(t_verify, MIN_TIME_S), limit)

    # ------------------------------------------------------------------ proposing

    def next_proposal(self, tokens: Sequence[int], q_rows: str | None, status: Status) -> Proposal:
        """§6.2: "base and base_digest equal to the committed length and digest it last
        learned, and round equal to the last verdict's round plus one"."""
        if self.stopped is not None or self._target is not None:
            raise InvalidArgument("the session is stopped or must resynchronise first")
        if self.outstanding is not None:
            # §6.2: "A drafter MUST NOT have more than one outstanding proposal per session."
            raise InvalidArgument("a proposal is already outstanding")
        if not 1 <= len(tokens) <= self.limit():
            raise InvalidArgument(f"M = {len(tokens)} is outside 1..{self.limit()}")
        if (q_rows is not None) != (self.rule == RULE_SPECULATIVE_SAMPLING):
            raise InvalidArgument("q_rows are published under rule 2 and only then (P1-DRF-4)")
        self.outstanding = Proposal(
            session=self.session, epoch=self.epoch, round=self.round + 1, drafter=self.identity.base_uri,
            base=len(self.output), base_digest=self.digest, tokens=tuple(tokens), status=status, q_rows=q_rows,
        )
        return self.outstanding

    def abandon(self) -> None:
        """Forget the outstanding proposal (a new assignment, P1-DRF-7, or shutdown)."""
        self.outstanding = None

    # ------------------------------------------------------------------ verdicts

    def on_verdict(self, verdict: Verdict) -> Next:
        """§6.3 "After the verdict ...": check it against d[n] and adopt it (D-DRF-13)."""
        proposal = self._take_outstanding()
        if (verdict.session, verdict.epoch, verdict.round) != (self.session, self.epoch, proposal.round):
            return self.fail(f"verdict for round {verdict.round} epoch {verdict.epoch} answers another proposal")
        emitted = list(verdict.emitted)
        new_digest = extend_digest(self.digest, emitted)
        if verdict.committed != len(self.output) + len(emitted) or verdict.digest != new_digest:
            # §4.2: "Because d[n] depends on every committed token, a proposal built on a
            # different or outdated prefix is detected"; here the verdict's own chain is checked.
            return self.fail("the verdict's committed length or digest does not extend d[n] by its tokens")
        self.output.extend(emitted)
        self.digest, self.round, self.setbacks = new_digest, verdict.round, 0
        self.m_cap = min(self.assignment.contract.m_max, max(1, verdict.m_cap))
        self.last_observed = None
        if _answers(proposal, verdict):
            self.estimates.observe(verdict.accepted, len(proposal.tokens))
            self.last_observed = (verdict.accepted, len(proposal.tokens))
        if verdict.action in self.stopping:
            return self.stop(f"verdict action {verdict.action.name.lower()}")
        return Next.PROPOSE

    def _take_outstanding(self) -> Proposal:
        proposal = self.outstanding
        if proposal is None:
            raise InvalidArgument("no proposal is outstanding")
        self.outstanding = None
        return proposal

    # ------------------------------------------------------------------ problems

    def on_problem(self, problem: Problem) -> Next:
        """A final answer to the outstanding proposal (P1-DRF-5: "a 4xx is final")."""
        self._take_outstanding()
        if problem.type is ProblemType.STALE_BASE:
            return self.on_stale_base(problem.state)
        if problem.type is ProblemType.Q_UNAVAILABLE:
            return self.on_q_unavailable()
        name = problem.type.suffix if problem.type is not None else "no SDCP type"
        return self.fail(f"proposal refused with {problem.status} ({name}) {problem.detail}".rstrip())  # D-DRF-11

    def on_transport_exhausted(self, detail: str) -> Next:
        """D-DRF-10: every attempt of the identical body failed."""
        self.outstanding = None
        return self.fail(f"no verdict after every attempt: {detail}")

    def on_q_unavailable(self) -> Next:
        """P1-DRF-5: "After sdcp-q-unavailable the round has no verdict, so the drafter
        may draft and publish again and send a different proposal for the same round"."""
        self.outstanding = None
        return self.setback("the verifier could not read q_rows")

    def setback(self, why: str) -> Next:
        """A round that ended without progress; D-DRF-12 bounds how many follow each other."""
        self.setbacks += 1
        if self.setbacks > self.max_setbacks:
            return self.fail(f"{why} {self.setbacks} times in a row")
        return Next.PROPOSE

    # ------------------------------------------------------------------ resynchronisation

    def on_stale_base(self, state: SessionState | None) -> Next:
        """P1-DRF-6: resynchronise from ``state``, or stop (D-DRF-14)."""
        self.outstanding = None
        if state is None:
            return self.fail("sdcp-stale-base without a usable state")
        if (state.session, state.epoch) != (self.session, self.epoch):
            return self.fail(f"stale-base state names epoch {state.epoch} of another session or epoch")
        if state.state is not None and state.state in CLOSED_STATES:
            return self.stop(f"the session's state is {state.state}")
        if state.committed < len(self.output) or state.round < self.round:
            return self.fail("the verifier's state is behind what this drafter already checked")
        if state.committed == len(self.output):
            if state.digest != self.digest:
                return self.fail("the verifier's digest at n differs from the checked d[n]")
            self.round = state.round
            return self.setback("stale base without new tokens")
        self._target, self._resync_buffer = state, []
        return Next.RESYNC

    def resync_start(self) -> int:
        """The first output index still to read (§6.7 ``GET output?from=n``)."""
        if self._target is None:
            raise InvalidArgument("no resynchronisation is pending")
        return len(self.output) + len(self._resync_buffer)

    def on_output(self, output: Output) -> Next:
        """Collect tokens of one ``GET …/output`` answer; adopt them once complete."""
        target = self._target
        if target is None:
            raise InvalidArgument("no resynchronisation is pending")
        start = self.resync_start()
        if (output.session, output.epoch, output.from_) != (self.session, self.epoch, start):
            return self.fail(f"output of epoch {output.epoch} from {output.from_} does not answer from={start}")
        needed = target.committed - len(self.output)
        self._resync_buffer.extend(output.tokens[: needed - len(self._resync_buffer)])
        if len(self._resync_buffer) == needed:
            return self.apply_resync(self._resync_buffer)
        if output.final:
            return self.fail("the output ended before the committed length of the state")
        return Next.RESYNC

    def apply_resync(self, tokens: Sequence[int]) -> Next:
        """Adopt the missing committed tokens only if they reproduce the state's digest (P1-DRF-6)."""
        target = self._target
        if target is None:
            raise InvalidArgument("no resynchronisation is pending")
        tokens = list(tokens)
        self._target, self._resync_buffer = None, []
        if not self.accepts_resync(tokens, target):
            return self.fail("the output read back does not reproduce the state's digest")
        digest = self.adopted_digest(tokens, target)
        self.output.extend(tokens)
        self.digest, self.round, self.setbacks = digest, target.round, 0
        return Next.PROPOSE

    def accepts_resync(self, tokens: Sequence[int], target: SessionState) -> bool:
        """P1-DRF-6: the tokens read back complete the committed length and reproduce the state's digest."""
        return len(self.output) + len(tokens) == target.committed and \
            extend_digest(self.digest, tokens) == target.digest

    def adopted_digest(self, tokens: Sequence[int], target: SessionState) -> bytes:
        """The digest the drafter holds after a resynchronisation: the state's, which the tokens reproduce."""
        return target.digest

    # ------------------------------------------------------------------ ending

    def stop(self, reason: str) -> Next:
        """An orderly end of drafting (switch, finish, ...)."""
        log.info("drafter stops session %s: %s", self.session.hex(), reason)
        return self._end(reason)

    def fail(self, reason: str) -> Next:
        """An end caused by an inconsistency or refusal: logged as an error."""
        log.error("drafter stops session %s: %s", self.session.hex(), reason)
        return self._end(reason)

    def _end(self, reason: str) -> Next:
        self.stopped = reason
        self.outstanding = None
        self._target = None
        return Next.STOP


def _answers(proposal: Proposal, verdict: Verdict) -> bool:
    """Whether the verdict decided this proposal: a <= M and the emitted tokens are
    its first a tokens plus one, possibly truncated (§6.3 Acceptance)."""
    accepted, tokens, emitted = verdict.accepted, proposal.tokens, verdict.emitted
    if accepted > len(tokens) or len(emitted) > accepted + 1:
        return False
    kept = min(accepted, len(emitted))
    return tuple(emitted[:kept]) == tuple(tokens[:kept])


__all__ = [
    "CLOSED_STATES",
    "STOPPING_ACTIONS",
    "DrafterIdentity",
    "DrafterSession",
    "Estimates",
    "Next",
    "check_assignment",
    "check_epoch",
    "check_prompt",
]
