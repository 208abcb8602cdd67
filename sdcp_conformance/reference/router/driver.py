"""The router's I/O sequences for one session: open, assign, policy and failover (§6.1, §6.6, §6.9).

:class:`SessionDriver` carries the messages that
:class:`~.session.RouterSession` builds to verifiers, drafters and the MLC,
each call under the router's own timeout (D-RTR-18), and feeds the answers
back; choices come from :class:`~.registry.InstanceRegistry`. Callers hold a
session's :class:`Slot` lock around every ``*_locked`` sequence.
"""

from __future__ import annotations

import asyncio
import base64
import enum
import logging
from collections.abc import Awaitable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from sdcp_conformance.errors import SdcpConformanceError
from sdcp_conformance.protocol.messages import Policy, Sampling, SessionState
from sdcp_conformance.reference.router.decisions import POLICY_RETRIES, TOKENS_OBJECT_PATH
from sdcp_conformance.reference.router.ports import (
    Answer,
    CacheUnavailable,
    DrafterLink,
    LinkFailure,
    Refused,
    RouterCache,
    VerifierLink,
)
from sdcp_conformance.reference.router.registry import InstanceRegistry
from sdcp_conformance.reference.router.session import (
    LogMismatch,
    Replay,
    RouterSession,
    StateMismatch,
    parse_log_bytes,
)
from sdcp_conformance.transport.types import Clock

log = logging.getLogger(__name__)

T = TypeVar("T")


class RouterError(SdcpConformanceError):
    """A client request to the router could not be carried out."""


class NoEligibleInstance(RouterError):
    """No eligible verifier accepted the session (P1-RTR-2)."""


class PolicyRefused(RouterError):
    """The verifier did not accept the policy (P1-RTR-4); ``refused`` is its last answer."""

    def __init__(self, detail: str, refused: Refused | None) -> None:
        super().__init__(detail)
        self.refused = refused


@dataclass(frozen=True)
class RouterConfig:
    base_uri: str
    """This router's identity and base URI (P1-ID-1)."""
    cache_base: str
    """MLC base URI under which the router names commit logs and token lists (D-RTR-13)."""
    drafters: Mapping[str, bytes]
    """Drafter base URI → its model's SHA-256 (P1-RTR-2)."""
    verifiers: Collection[str]
    m_init: int = 4
    """Sent as max(1, min(m_max, m_init)) (P1-DRF-2)."""
    call_timeout_s: float = 10.0
    watchdog_interval_s: float = 0.2


@dataclass
class Slot:
    """One session at the router: its machine, the lock its I/O sequences hold, and a change signal.

    ``moved`` is set (and replaced) whenever the session's verifier or epoch
    changes, so a front read waiting at the old verifier (P1-FRONT-2) turns to
    the new one at once instead of waiting out its long poll.
    """

    machine: RouterSession
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    moved: asyncio.Event = field(default_factory=asyncio.Event)

    def notify_moved(self) -> None:
        self.moved.set()
        self.moved = asyncio.Event()


class _Try(enum.Enum):
    ASSIGNED = "assigned"
    DRAFTER_FAILED = "drafter-failed"
    STOP = "stop"


class SessionDriver:
    """Carries one session's sequences; shared by the HTTP handler, the client API and the watchdog."""

    def __init__(
        self,
        config: RouterConfig,
        registry: InstanceRegistry,
        verifiers: VerifierLink,
        drafters: DrafterLink,
        cache: RouterCache,
        clock: Clock,
    ) -> None:
        self.config = config
        self.registry = registry
        self.verifiers = verifiers
        self.drafters = drafters
        self.cache = cache
        self._clock = clock

    def object_uri(self, template: str, **values: object) -> str:
        base = self.config.cache_base if self.config.cache_base.endswith("/") else self.config.cache_base + "/"
        return base + template.format(**values)

    async def _timed(self, awaitable: Awaitable[T]) -> T:
        """D-RTR-18: every call under the router's own timeout."""
        return await asyncio.wait_for(awaitable, self.config.call_timeout_s)

    async def cache_call(self, awaitable: Awaitable[T]) -> T:
        try:
            return await self._timed(awaitable)
        except TimeoutError as exc:
            raise CacheUnavailable("the MLC did not answer in time") from exc

    async def _ask_verifier(self, verifier: str, awaitable: Awaitable[Answer]) -> Answer | None:
        """One verifier call; ``None`` when no answer came. Feeds P1-RTR-5's failure streak."""
        try:
            answer = await self._timed(awaitable)
        except (LinkFailure, TimeoutError) as exc:
            log.warning("verifier %s did not answer: %r", verifier, exc)
            self.registry.note_failure(verifier, self._clock())
            return None
        if isinstance(answer, Refused) and answer.resource_failure:
            self.registry.note_failure(verifier, self._clock())
        else:
            self.registry.note_success(verifier)
        return answer

    # ------------------------------------------------------------------ opening and assigning

    async def open_somewhere(self, machine: RouterSession) -> list[tuple[str, Answer | None]]:
        """D-RTR-5: try eligible verifiers best first; (verifier, answer) of those that did not open it."""
        refused: list[tuple[str, Answer | None]] = []
        for verifier in self.registry.ranked_verifiers(self._clock()):
            answer = await self._ask_verifier(verifier, self.verifiers.open_session(verifier, machine.opening()))
            if isinstance(answer, SessionState):
                try:
                    machine.opened(verifier, answer)
                    return refused
                except StateMismatch as exc:
                    answer = Refused(502, detail=str(exc))
            refused.append((verifier, answer))
        return refused

    async def assign(self, slot: Slot, *, exclude: Iterable[str] = (), same_if_alone: str | None = None) -> None:
        async with slot.lock:
            await self.assign_locked(slot, exclude=exclude, same_if_alone=same_if_alone)

    async def replace_drafter(self, slot: Slot, drafter: str) -> None:
        async with slot.lock:
            machine = slot.machine
            if machine.drafter != drafter or self.registry.live(drafter, self._clock()):
                return
            machine.drafter = None
            machine.previous_drafter = drafter
            await self.assign_locked(slot, exclude=(drafter,))

    async def assign_locked(
        self,
        slot: Slot,
        *,
        exclude: Iterable[str] = (),
        same_if_alone: str | None = None,
        prefer: str | None = None,
    ) -> None:
        """§6.1: inform the verifier (PUT …/drafter), then send the assignment; D-RTR-14 on refusal."""
        machine = slot.machine
        tried = set(exclude)
        while machine.needs_drafter:
            drafter = self._pick_drafter(machine, tried, same_if_alone, prefer)
            if drafter is None:
                log.info("session %s waits for an eligible drafter", _b64(machine.session))
                return
            if await self._try_drafter(machine, drafter) is not _Try.DRAFTER_FAILED:
                return
            tried.add(drafter)
            same_if_alone = prefer = None

    def _pick_drafter(
        self, machine: RouterSession, tried: set[str], same_if_alone: str | None, prefer: str | None
    ) -> str | None:
        now = self._clock()
        if prefer is not None and prefer in self.registry.ranked_drafters(machine.contract, now, tried):
            return prefer  # D-RTR-12
        return self.registry.choose_drafter(machine.contract, now, exclude=tried, same_if_alone=same_if_alone)

    async def _try_drafter(self, machine: RouterSession, drafter: str) -> _Try:
        verifier = machine.verifier
        assert verifier is not None
        drops = machine.drops
        try:
            known_ref = await self._tokens_ref(machine, machine.committed, machine.digest)
            put = self.verifiers.put_drafter(verifier, machine.drafter_put(drafter, known_ref))
            state = await self._ask_verifier(verifier, put)
            if not isinstance(state, SessionState) or state.epoch != machine.epoch:
                self._refused_put(machine, state)
                return _Try.STOP
            machine.observe(state)
            ref = await self._tokens_ref(machine, state.committed, state.digest)
        except CacheUnavailable as exc:
            log.warning("session %s: MLC unavailable while assigning: %s", _b64(machine.session), exc)
            return _Try.STOP
        except LogMismatch as exc:
            machine.fail(str(exc))  # D-RTR-9
            return _Try.STOP
        refusal = await self._post_assignment(drafter, machine.assignment(drafter, state, ref))
        if refusal is not None:
            log.warning("drafter %s refused the assignment: %s", drafter, describe(refusal))
            return _Try.DRAFTER_FAILED
        if machine.assigned(drafter, drops):
            self.registry.note_assigned(drafter)
        return _Try.ASSIGNED

    def _refused_put(self, machine: RouterSession, answer: Answer | None) -> None:
        if isinstance(answer, Refused) and answer.status == 410:
            machine.close()  # D-RTR-20
        log.warning("session %s: PUT drafter not accepted: %s", _b64(machine.session), describe(answer))

    async def _post_assignment(self, drafter: str, assignment: Any) -> Refused | None:
        try:
            return await self._timed(self.drafters.post_assignment(drafter, assignment))
        except (LinkFailure, TimeoutError) as exc:
            return Refused(0, detail=f"no answer: {exc!r}")

    async def _tokens_ref(self, machine: RouterSession, committed: int, digest: bytes) -> str | None:
        """P1-RTR-3: the committed_tokens object for a committed prefix, written from the log."""
        if committed == 0:
            return None
        if machine.tokens_ref is not None and machine.tokens_ref[:2] == (committed, digest):
            return machine.tokens_ref[2]
        records = parse_log_bytes(await self.cache_call(self.cache.read_log(machine.commit_log)))
        tokens = machine.tokens_at(records, committed, digest)
        return await self._write_tokens(machine, committed, digest, tokens)

    async def _write_tokens(self, machine: RouterSession, committed: int, digest: bytes, tokens: Sequence[int]) -> str:
        uri = self.object_uri(
            TOKENS_OBJECT_PATH, session=_b64(machine.session), epoch=machine.epoch, committed=committed
        )
        await self.cache_call(self.cache.put_tokens(uri, tokens))
        machine.tokens_ref = (committed, digest, uri)
        return uri

    # ------------------------------------------------------------------ policy

    async def post_policy(self, machine: RouterSession, policy: Policy) -> SessionState:
        """P1-RTR-4 with D-RTR-15's bounded retries."""
        return (await self.post_policy_accepted(machine, policy))[1]

    async def post_policy_accepted(self, machine: RouterSession, policy: Policy) -> tuple[Policy, SessionState]:
        """:meth:`post_policy`, returning the policy the verifier accepted (its ``from_round``, P1-FRONT-3)."""
        answer: Answer | None = None
        for _ in range(POLICY_RETRIES + 1):
            verifier = machine.verifier
            assert verifier is not None
            answer = await self._ask_verifier(verifier, self.verifiers.post_policy(verifier, policy))
            if isinstance(answer, SessionState):
                machine.policy_accepted(policy, answer)
                return policy, answer
            if answer is None or answer.status != 409 or answer.state is None:
                break
            policy = machine.policy_retry(policy, answer.state)
        refused = answer if isinstance(answer, Refused) else None
        raise PolicyRefused(f"the verifier did not accept the policy: {describe(answer)}", refused)

    # ------------------------------------------------------------------ failover

    async def failover(self, slot: Slot) -> None:
        """§6.9 Verifier failure; P1-RTR-6."""
        async with slot.lock:
            machine = slot.machine
            now = self._clock()
            current = machine.verifier
            if machine.ended or (current is not None and not self.registry.failed(current, now)):
                return
            try:
                await self.failover_locked(slot)
            finally:
                slot.notify_moved()

    async def failover_locked(self, slot: Slot) -> None:
        """Fence, replay, resume elsewhere, then the drafter (§6.9 in that order)."""
        machine = slot.machine
        replay_and_ref = await self._fence_and_replay(machine)
        slot.notify_moved()  # the epoch moved on: output of the old one is no longer wanted
        if replay_and_ref is None or not await self._resume_somewhere(machine, *replay_and_ref):
            return
        slot.notify_moved()
        if machine.sampling is not None:
            await self._repost_policy(machine, machine.sampling)
        await self.assign_locked(slot, prefer=machine.previous_drafter)

    async def _fence_and_replay(self, machine: RouterSession) -> tuple[Replay, str] | None:
        # §6.9: "the router first appends a fence record with the new epoch to the
        # commit_log, so that the old verifier ... can no longer commit or release output".
        epoch = machine.begin_failover()
        try:
            if not await self.cache_call(self.cache.append_fence(machine.commit_log, epoch)):
                machine.fail(f"a fence above epoch {epoch} is in the commit log")  # D-RTR-16
                return None
            replay = machine.replay(await self.cache_call(self.cache.read_log(machine.commit_log)))
            ref = await self._write_tokens(machine, replay.committed, replay.digest, replay.tokens)
        except CacheUnavailable as exc:
            log.warning("failover of %s postponed: %s", _b64(machine.session), exc)
            return None
        except LogMismatch as exc:
            machine.fail(str(exc))  # D-RTR-9
            return None
        return replay, ref

    async def _resume_somewhere(self, machine: RouterSession, replay: Replay, ref: str) -> bool:
        exclude = (machine.failed_verifier,) if machine.failed_verifier is not None else ()
        for verifier in self.registry.ranked_verifiers(self._clock(), exclude):
            opening = machine.resume_opening(replay, ref)
            answer = await self._ask_verifier(verifier, self.verifiers.open_session(verifier, opening))
            if isinstance(answer, SessionState):
                try:
                    machine.resumed(verifier, replay, answer, ref)
                    return True
                except StateMismatch as exc:
                    answer = Refused(502, detail=str(exc))
            log.warning("resume of %s at %s failed: %s", _b64(machine.session), verifier, describe(answer))
        return False

    async def _repost_policy(self, machine: RouterSession, sampling: Sampling) -> None:
        """D-RTR-11."""
        try:
            await self.post_policy(machine, machine.policy(sampling))
        except PolicyRefused as exc:
            log.warning("session %s: policy not re-posted after failover: %s", _b64(machine.session), exc)


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def describe(answer: Answer | None) -> str:
    if answer is None:
        return "no answer"
    if isinstance(answer, Refused):
        kind = answer.problem.suffix if answer.problem is not None else "no SDCP type"
        return f"{answer.status} ({kind}) {answer.detail}".strip()
    return f"session-state round {answer.round}"


__all__ = [
    "NoEligibleInstance",
    "PolicyRefused",
    "RouterConfig",
    "RouterError",
    "SessionDriver",
    "Slot",
    "describe",
]
