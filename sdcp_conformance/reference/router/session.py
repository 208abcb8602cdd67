"""The router's view of one session, sans I/O (draft §6.1, §6.5.2, §6.6, §6.9).

:class:`RouterSession` holds what the router knows about a session (contract,
prompt, epoch, verifier, drafter, last known round, committed length and
digest, the latest accepted sampling policy) and decides every message the
router sends about it: the session-open, the ``PUT sessions/{id}/drafter``
body and the assignment (P1-RTR-3), policies (P1-RTR-4), what an event asks
for (P1-EVT-1), and the resume of a failover (P1-RTR-6). The I/O layer
(:mod:`.app`) carries the messages and feeds the answers back.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from sdcp_conformance.cache.commit_log import CommitRecord, FenceRecord, LogRecord, parse_log
from sdcp_conformance.errors import SdcpConformanceError
from sdcp_conformance.protocol.chain import extend_digest, prefix_digest
from sdcp_conformance.protocol.contract import digest_of
from sdcp_conformance.protocol.control import Action
from sdcp_conformance.protocol.errors import MalformedMessage, ProtocolError
from sdcp_conformance.protocol.messages import (
    Assignment,
    Contract,
    Event,
    Policy,
    Resume,
    Sampling,
    SessionOpen,
    SessionState,
)
from sdcp_conformance.protocol.problems import ProblemType
from sdcp_conformance.reference.router.decisions import STALE_EVENT_PROBLEM


class Phase(enum.Enum):
    OPENING = "opening"
    """No verifier has accepted the session yet."""
    ACTIVE = "active"
    """Open at a verifier; drafting (or waiting for a drafter)."""
    SELF_DECODING = "self-decoding"
    """P1-EVT-1 kind 3: the verifier decodes; no drafter to assign."""
    FINISHED = "finished"
    FAILED = "failed"
    CLOSED = "closed"
    """The verifier answered 410 (P1-CTL-3) before the router learnt whether it finished or failed."""


class Wants(enum.Enum):
    """What an event asks the router to do next (P1-EVT-1)."""

    NOTHING = "nothing"
    ANOTHER_DRAFTER = "another-drafter"
    """Kind 2, switch: "assigns the session to another drafter with a permitted model"."""
    A_DRAFTER = "a-drafter"
    """Kind 0: "self-decoding ends and a drafter is needed again"."""


class LogMismatch(SdcpConformanceError):
    """The commit log does not reproduce the digest it must (D-RTR-9)."""


class StateMismatch(SdcpConformanceError):
    """A verifier answered a session-state that does not fit what the router sent."""


@dataclass(frozen=True)
class Replay:
    """The committed prefix a commit log establishes (P1-RTR-6)."""

    round: int
    committed: int
    digest: bytes
    tokens: tuple[int, ...]


def m_init_for(contract: Contract, configured: int) -> int:
    """P1-DRF-2: "the router sends max(1, min(m_max, m_init))"."""
    return max(1, min(contract.m_max, configured))


def live_records(records: Sequence[LogRecord]) -> list[CommitRecord]:
    """P1-RTR-6: "ignores commit records that follow a fence of a higher epoch"."""
    fence = 0
    kept: list[CommitRecord] = []
    for record in records:
        if isinstance(record, FenceRecord):
            fence = max(fence, record.epoch)
        elif record.epoch >= fence:
            kept.append(record)
    return kept


def replay_log(records: Sequence[LogRecord], d0: bytes) -> Replay:
    """Concatenate the live records' ``emitted`` and check them against the last record (P1-RTR-6).

    "round 0, committed 0 and d[0] if there is none". Raises :class:`LogMismatch`.
    """
    kept = live_records(records)
    if not kept:
        return Replay(0, 0, d0, ())
    tokens = tuple(token for record in kept for token in record.emitted)
    last = kept[-1]
    if last.committed != len(tokens) or extend_digest(d0, tokens) != last.digest:
        raise LogMismatch(
            f"the {len(tokens)} tokens of the log do not reproduce the last record "
            f"(round {last.round}, committed {last.committed})"
        )
    return Replay(last.round, last.committed, last.digest, tokens)


def parse_log_bytes(data: bytes) -> list[LogRecord]:
    try:
        return parse_log(data)
    except MalformedMessage as exc:  # D-RTR-9: an unreadable log is an inconsistent one
        raise LogMismatch(f"the commit log is not a sequence of P1-LOG-1 records: {exc.detail}") from exc


class RouterSession:
    """Everything the router decides about one session."""

    def __init__(
        self,
        session: bytes,
        contract: Contract,
        prompt: Sequence[int],
        commit_log: str,
        *,
        m_init: int,
        prompt_ref: str | None = None,
    ) -> None:
        self.session = session
        self.contract = contract
        self.prompt = tuple(prompt)
        self.prompt_ref = prompt_ref
        self.commit_log = commit_log
        self.m_init = self.clamp_m_init(contract, m_init)
        self.d0 = prefix_digest(digest_of(contract), self.prompt)
        self.epoch = 1
        self.phase = Phase.OPENING
        self.verifier: str | None = None
        self.drafter: str | None = None
        self.previous_drafter: str | None = None
        self.failed_verifier: str | None = None
        self.drops = 0
        """How often the drafter was taken away (events, failover): an assignment
        begun before the latest drop does not take effect."""
        self.round = 0
        self.committed = 0
        self.digest = self.d0
        self.sampling: Sampling | None = None
        self.tokens_ref: tuple[int, bytes, str] | None = None
        """(committed, digest, uri) of the latest committed_tokens object written."""
        self.target_kv: tuple[int, str] | None = None
        self.failure: str | None = None

    def clamp_m_init(self, contract: Contract, configured: int) -> int:
        """P1-DRF-2 (a method so that a planted bug can replace it)."""
        return m_init_for(contract, configured)

    # ------------------------------------------------------------------ lifecycle

    @property
    def ended(self) -> bool:
        return self.phase in (Phase.FINISHED, Phase.FAILED, Phase.CLOSED)

    @property
    def needs_verifier(self) -> bool:
        """Opened once, but without a verifier now (a failover did not complete)."""
        return not self.ended and self.phase is not Phase.OPENING and self.verifier is None

    @property
    def needs_drafter(self) -> bool:
        return self.phase is Phase.ACTIVE and self.verifier is not None and self.drafter is None

    def fail(self, reason: str) -> None:
        self.phase = Phase.FAILED
        self.failure = reason
        self._drop_drafter()

    def close(self) -> None:
        """D-RTR-20: the verifier answered 410 sdcp-session-closed."""
        if not self.ended:
            self.phase = Phase.CLOSED
        self._drop_drafter()

    def _prompt_member(self) -> tuple[int, ...] | str:
        return self.prompt_ref if self.prompt_ref is not None else self.prompt

    def opening(self) -> SessionOpen:
        """§6.1: "sends session-open with epoch 1 and a commit_log reference in the MLC"."""
        return SessionOpen(
            session=self.session,
            epoch=self.epoch,
            contract=self.contract,
            prompt=self._prompt_member(),
            commit_log=self.commit_log,
        )

    def opened(self, verifier: str, state: SessionState) -> None:
        """§6.1: the verifier "answers with session-state (round 0, committed 0)"."""
        self._check_state(state)
        if (state.round, state.committed, state.digest) != (0, 0, self.d0):
            raise StateMismatch(f"{verifier} opened the session at round {state.round}, not at d[0]")
        self.verifier = verifier
        self.phase = Phase.ACTIVE

    def _check_state(self, state: SessionState) -> None:
        if state.session != self.session or state.epoch != self.epoch:
            raise StateMismatch(f"session-state for epoch {state.epoch} of another session or epoch")

    def observe(self, state: SessionState) -> None:
        """Learn round, committed length and digest from a session-state (D-RTR-21: never backwards)."""
        if state.session != self.session or state.epoch != self.epoch:
            return
        self.round = max(self.round, state.round)
        if state.committed >= self.committed:
            self.committed, self.digest = state.committed, state.digest

    # ------------------------------------------------------------------ assignment

    def _assignment(
        self, drafter: str, round_: int, committed: int, digest: bytes, tokens_ref: str | None
    ) -> Assignment:
        assert self.verifier is not None
        return Assignment(
            session=self.session,
            epoch=self.epoch,
            contract=self.contract,
            verifier=self.verifier,
            drafter=drafter,
            prompt=self._prompt_member(),
            round=round_,
            committed=committed,
            digest=digest,
            m_init=self.m_init,
            # P1-RTR-4: "The latest accepted sampling profile goes in every later assignment."
            sampling=self.sampling,
            # P1-RTR-3: "The router always sends committed_tokens when committed > 0."
            committed_tokens=tokens_ref if committed > 0 else None,
        )

    def drafter_put(self, drafter: str, tokens_ref: str | None) -> Assignment:
        """P1-RTR-3: "PUT …/drafter carries the router's last known round, committed length and digest"."""
        return self._assignment(drafter, self.round, self.committed, self.digest, tokens_ref)

    def assignment(self, drafter: str, state: SessionState, tokens_ref: str | None) -> Assignment:
        """P1-RTR-3: "the assignment sent to the drafter carries the values of the session-state that PUT returned"."""
        return self._assignment(drafter, state.round, state.committed, state.digest, tokens_ref)

    def assigned(self, drafter: str, drops_before: int) -> bool:
        """The verifier knows the drafter and the drafter accepted its assignment.

        ``False`` (and no effect) when the drafter was taken away while the
        assignment was under way: an event may have cancelled it at the verifier.
        """
        if self.drops != drops_before or self.ended:
            return False
        self.drafter = drafter
        if self.phase is Phase.SELF_DECODING:
            self.phase = Phase.ACTIVE  # D-VER-6: the assignment ends a self-decoding period
        return True

    def tokens_at(self, records: Sequence[LogRecord], committed: int, digest: bytes) -> tuple[int, ...]:
        """The first ``committed`` tokens of the log, checked against ``digest`` (D-RTR-9)."""
        tokens = tuple(token for record in live_records(records) for token in record.emitted)[:committed]
        if len(tokens) != committed or extend_digest(self.d0, tokens) != digest:
            raise LogMismatch(f"the commit log does not hold the {committed} tokens of the session-state")
        return tokens

    # ------------------------------------------------------------------ events

    def check_event(self, event: Event, peer: str | None) -> None:
        """POST events (P1-EVT-1), "accepted only from the session's current verifier" (P1-RTR-2)."""
        if self.verifier is None or peer != self.verifier:
            raise ProtocolError(ProblemType.NOT_ASSIGNED, f"{peer!r} is not the session's current verifier")
        if event.epoch != self.epoch:
            raise ProtocolError(STALE_EVENT_PROBLEM, f"event epoch {event.epoch} is not {self.epoch}")

    def on_event(self, event: Event, peer: str | None) -> Wants:
        """Apply an event (checked again: the session may have changed since it arrived, D-RTR-27)."""
        self.check_event(event, peer)
        if self.phase is Phase.CLOSED and event.kind in (Action.FINISH, Action.FAIL):
            self.phase = Phase.FINISHED if event.kind is Action.FINISH else Phase.FAILED
        if self.ended:
            return Wants.NOTHING  # D-RTR-7
        if event.committed >= self.committed:
            self.committed, self.digest = event.committed, event.digest
        return self._apply_event(event.kind)

    def _apply_event(self, kind: Action) -> Wants:
        if kind is Action.SWITCH:
            # §6.5.2 switch: "the current drafter MUST stop proposing for the session".
            self._drop_drafter()
            return Wants.ANOTHER_DRAFTER
        if kind is Action.SELF_DECODE:
            self._drop_drafter()
            self.phase = Phase.SELF_DECODING
            return Wants.NOTHING
        if kind is Action.CONTINUE:
            self._drop_drafter()
            self.phase = Phase.ACTIVE
            return Wants.A_DRAFTER
        if kind is Action.FINISH:
            self.phase = Phase.FINISHED
            self.drafter = None
            return Wants.NOTHING
        if kind is Action.FAIL:
            # §5.2 unknown values read as fail; P1-DRF-9, D-RTR-8.
            self.fail("the verifier reported fail, or an unknown event kind")
            return Wants.NOTHING
        return Wants.NOTHING  # D-RTR-7: kind 1 (reduce) is no event

    def _drop_drafter(self) -> None:
        if self.drafter is not None:
            self.previous_drafter = self.drafter
        self.drafter = None
        self.drops += 1

    # ------------------------------------------------------------------ policy

    def policy(self, sampling: Sampling) -> Policy:
        """P1-RTR-4: "from_round = the highest round the router knows + 1"."""
        return Policy(session=self.session, from_round=self.round + 1, sampling=sampling)

    def policy_retry(self, policy: Policy, state: SessionState) -> Policy:
        """P1-RTR-4: "on 409 it retries with state.round + 1"."""
        self.observe(state)
        return policy.replace(from_round=state.round + 1)

    def policy_accepted(self, policy: Policy, state: SessionState) -> None:
        self.observe(state)
        self.sampling = policy.sampling

    # ------------------------------------------------------------------ failover

    def begin_failover(self) -> int:
        """§6.9: the new epoch, to fence the log with first (D-RTR-10: one per attempt)."""
        if self.verifier is not None:
            self.failed_verifier = self.verifier
        self._drop_drafter()
        self.epoch += 1
        self.verifier = None
        self.tokens_ref = None
        return self.epoch

    def replay(self, log: bytes) -> Replay:
        return replay_log(parse_log_bytes(log), self.d0)

    def resume_opening(self, replay: Replay, tokens_ref: str) -> SessionOpen:
        """§6.9: open "with that epoch and the resume member carrying that round, committed length, digest"."""
        target_kv = None
        if self.target_kv is not None and self.target_kv[0] == replay.committed:
            target_kv = self.target_kv[1]  # D-RTR-17
        resume = Resume(
            round=replay.round,
            committed=replay.committed,
            digest=replay.digest,
            committed_tokens=tokens_ref,
            target_kv=target_kv,
        )
        return self.opening().replace(resume=resume)

    def resumed(self, verifier: str, replay: Replay, state: SessionState, tokens_ref: str) -> None:
        self._check_state(state)
        if (state.round, state.committed, state.digest) != (replay.round, replay.committed, replay.digest):
            raise StateMismatch(f"{verifier} resumed at round {state.round}, not at round {replay.round}")
        self.verifier = verifier
        self.round, self.committed, self.digest = replay.round, replay.committed, replay.digest
        self.tokens_ref = (replay.committed, replay.digest, tokens_ref)
        self.phase = _PHASE_OF_STATE.get(state.state or 0, Phase.ACTIVE)


_PHASE_OF_STATE = {int(Action.FINISH): Phase.FINISHED, int(Action.FAIL): Phase.FAILED}
"""P1-STATE-1: a resumed session can already be finished (its log reached max_new)."""


__all__ = [
    "LogMismatch",
    "Phase",
    "Replay",
    "RouterSession",
    "StateMismatch",
    "Wants",
    "live_records",
    "m_init_for",
    "parse_log_bytes",
    "replay_log",
]
