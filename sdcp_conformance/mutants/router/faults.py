"""The planted bugs of the router mutants: subclasses of the reference router's parts, one bug each.

Each class overrides the one method where a real router could get the rule
wrong, and says in its docstring which rule that is; the mutant declared above
it on the router's catalogue names it and quotes the sentence it breaks.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Sequence
from typing import Any

from sdcp_conformance.cache.commit_log import CommitRecord, FenceRecord, encode_record
from sdcp_conformance.mutants.router import CATALOGUE
from sdcp_conformance.protocol.chain import extend_digest
from sdcp_conformance.protocol.codec import decode
from sdcp_conformance.protocol.control import Action
from sdcp_conformance.protocol.errors import MalformedMessage, ProtocolError
from sdcp_conformance.protocol.messages import Assignment, Contract, Event, Output, Policy, SessionState, Status
from sdcp_conformance.protocol.problems import ProblemType
from sdcp_conformance.reference.frontend import RouterFrontend
from sdcp_conformance.reference.router.app import RouterApp
from sdcp_conformance.reference.router.decisions import COMMIT_LOG_PATH, VERIFIER_POLL_S
from sdcp_conformance.reference.router.driver import SessionDriver, Slot, _Try
from sdcp_conformance.reference.router.front_output import FrontOutput
from sdcp_conformance.reference.router.links import MlcRouterCache
from sdcp_conformance.reference.router.ports import CacheUnavailable, LinkFailure, RouterCache
from sdcp_conformance.reference.router.registry import InstanceRegistry
from sdcp_conformance.reference.router.session import (
    LogMismatch,
    Phase,
    Replay,
    RouterSession,
    Wants,
    live_records,
    parse_log_bytes,
)
from sdcp_conformance.transport.types import Request, Response

_NOT_EXPIRED = "The router MUST NOT assign sessions to an instance whose status has expired."
_SWITCH = ("switch (2):: The verifier sends an event to the router, which assigns the session to another drafter with "
           "a permitted model")

# --------------------------------------------------------------------------- failover (§6.9, P1-RTR-6)


@CATALOGUE.mutant("resume-before-fence", "failover", "opens the session at the new verifier before appending the fence",
                  "6.9", "Verifier failure: the router first appends a fence record with the new epoch to the "
                  "commit_log, so that the old verifier, even if it is only partitioned, can no longer commit or "
                  "release output;")
class ResumeBeforeFence(SessionDriver):
    """Reads the log and opens the session elsewhere, and only then appends the fence (§6.9 "first")."""

    async def failover_locked(self, slot: Slot) -> None:
        machine = slot.machine
        epoch = machine.begin_failover()
        slot.notify_moved()
        try:
            replay = machine.replay(await self.cache_call(self.cache.read_log(machine.commit_log)))
            ref = await self._write_tokens(machine, replay.committed, replay.digest, replay.tokens)
        except (CacheUnavailable, LogMismatch):
            return
        if not await self._resume_somewhere(machine, replay, ref):
            return
        slot.notify_moved()
        with contextlib.suppress(CacheUnavailable):
            await self.cache_call(self.cache.append_fence(machine.commit_log, epoch))
        await self.assign_locked(slot, prefer=machine.previous_drafter)


@CATALOGUE.mutant("no-reassign-after-failover", "failover", "resumes the session but assigns no drafter there", "6.9",
                  "It then informs the verifier of the drafter and sends a new assignment.")
class NoReassignAfterFailover(SessionDriver):
    """Resumes the session elsewhere and takes the drafter to follow it by itself: it neither informs the new
    verifier of the drafter nor sends the drafter a new assignment (§6.9 "It then informs")."""

    async def failover_locked(self, slot: Slot) -> None:
        machine = slot.machine
        replay_and_ref = await self._fence_and_replay(machine)
        slot.notify_moved()
        if replay_and_ref is not None and await self._resume_somewhere(machine, *replay_and_ref):
            machine.drafter = machine.previous_drafter
        slot.notify_moved()


@CATALOGUE.mutant("resume-ignores-fences", "failover", "replays every commit record, also those a fence with a higher "
                  "epoch precedes", "6.9, P1-RTR-6", "after appending the fence, the router ignores commit records "
                  "that follow a fence of a higher epoch")
class ReplayIgnoresFences(RouterSession):
    """Every commit record counts, even one a fence with a higher epoch precedes (P1-RTR-6)."""

    def replay(self, log: bytes) -> Replay:
        records = [record for record in parse_log_bytes(log) if isinstance(record, CommitRecord)]
        return _replay_of(records, self.d0)


@CATALOGUE.mutant("resume-from-previous-record", "failover", "resumes from the record before the last one", "6.9",
                  "it then reads the last commit record and opens the session at a new verifier with that epoch and "
                  'the "resume" member carrying that round, committed length, digest')
class ResumeFromPreviousRecord(RouterSession):
    """Distrusts the last commit record (it "might be torn") and resumes from the one before (§6.9 "the last")."""

    def replay(self, log: bytes) -> Replay:
        return _replay_of(live_records(parse_log_bytes(log))[:-1], self.d0)


def _replay_of(records: Sequence[CommitRecord], d0: bytes) -> Replay:
    if not records:
        return Replay(0, 0, d0, ())
    tokens = tuple(token for record in records for token in record.emitted)
    last = records[-1]
    if last.committed != len(tokens) or extend_digest(d0, tokens) != last.digest:
        raise LogMismatch("the records taken do not reproduce the last one's digest")
    return Replay(last.round, last.committed, last.digest, tokens)


@CATALOGUE.mutant("unconditional-fence", "failover", "appends the fence with a PUT that has no If-Match", "6.8",
                  "The commit_log is an MLC object to which records are appended with a conditional operation, for "
                  "example an HTTP PUT with If-Match on the current entity tag [RFC9110]", into="wrap_cache")
class UnconditionalFence:
    """The fence is appended with a plain PUT of the log read just before: no If-Match (§6.8 conditional)."""

    def __init__(self, inner: RouterCache) -> None:
        assert isinstance(inner, MlcRouterCache)
        self._inner = inner

    async def get_tokens(self, uri: str) -> list[int]:
        return await self._inner.get_tokens(uri)

    async def put_tokens(self, uri: str, tokens: Sequence[int]) -> None:
        await self._inner.put_tokens(uri, tokens)

    async def read_log(self, uri: str) -> bytes:
        return await self._inner.read_log(uri)

    async def append_fence(self, uri: str, epoch: int) -> bool:
        data = await self._inner.read_log(uri)
        reply = await self._inner.objects.put(uri, data + encode_record(FenceRecord(epoch)))
        return 200 <= reply.status < 300


@CATALOGUE.mutant("shared-commit-log", "session-open", "names one commit log for all its sessions", "P1-LOG-3",
                  "The router names the commit log; the object need not exist yet.")
class SharedCommitLog(SessionDriver):
    """Names one commit log for every session of the router (P1-LOG-3: the router names each session's log)."""

    def object_uri(self, template: str, **values: object) -> str:
        if template == COMMIT_LOG_PATH:
            values = {**values, "session": "all-sessions"}
        return super().object_uri(template, **values)


# --------------------------------------------------------------------------- eligibility (§6.1, P1-RTR-2)


@CATALOGUE.mutant("assign-expired-drafter", "drafter-expiry", "assigns drafters whose status has expired", "6.1",
                  _NOT_EXPIRED)
class DrafterExpiryIgnored(InstanceRegistry):
    """A drafter stays eligible once it has reported, however long ago (§6.1 "MUST NOT ... expired")."""

    def ranked_drafters(self, contract: Contract, now: float, exclude: Iterable[str] = ()) -> list[str]:
        excluded = set(exclude)
        eligible = [uri for uri in self.drafter_models
                    if uri not in excluded and self.report(uri) is not None and self.permitted(uri, contract)]
        return sorted(eligible, key=lambda uri: (self.drafter_cost(uri), uri))


@CATALOGUE.mutant("open-at-expired-verifier", "session-open", "opens and resumes sessions at verifiers whose status "
                  "has expired", "6.1", _NOT_EXPIRED)
class VerifierExpiryIgnored(InstanceRegistry):
    """Opens sessions at any verifier that ever reported and was not declared failed (P1-RTR-2 "eligible")."""

    def ranked_verifiers(self, now: float, exclude: Iterable[str] = ()) -> list[str]:
        excluded = set(exclude)
        reported = {uri: report for uri in self.verifiers if (report := self.report(uri)) is not None}
        eligible = [uri for uri in reported if uri not in excluded]
        return sorted(eligible, key=lambda uri: (reported[uri].status.load, uri))


@CATALOGUE.mutant("unpermitted-drafter", "assignment", "ignores the contract's drafters list", "6.1",
                  "The router then selects a drafter whose model is permitted by the contract.")
class AnyDrafterPermitted(InstanceRegistry):
    """Ignores the contract's ``drafters``: any configured drafter serves any contract (§6.1 "permitted")."""

    def permitted(self, drafter: str, contract: Contract) -> bool:
        return drafter in self.drafter_models


@CATALOGUE.mutant("status-from-anyone", "events", "accepts a status report for an instance from any party", "P1-RTR-2",
                  "It accepts a status report only from the instance it names", profile_only=True)
class StatusFromAnyone(InstanceRegistry):
    """Takes a status report from any authenticated party for any instance (P1-RTR-2)."""

    def accept(self, status: Status, peer: str | None, now: float) -> None:
        super().accept(status, status.instance, now)


@CATALOGUE.mutant("expired-drafter-kept", "drafter-expiry", "never replaces a drafter whose status expired", "6.9",
                  "Drafter failure: when a drafter's status expires, the router reassigns its sessions.")
class DrafterNeverReplaced(SessionDriver):
    """Never reassigns the sessions of a drafter whose status expired (§6.9 Drafter failure)."""

    async def replace_drafter(self, slot: Slot, drafter: str) -> None:
        return None


# --------------------------------------------------------------------------- assignments (§6.1, P1-RTR-3)


@CATALOGUE.mutant("assign-before-put", "assignment", "sends the assignment before PUT sessions/{id}/drafter", "6.1",
                  "It first informs the verifier with PUT sessions/{id}/drafter, and then sends the assignment, "
                  "carrying the current round, committed length, and digest, to the drafter.")
class AssignBeforePut(SessionDriver):
    """Sends the drafter its assignment first and informs the verifier afterwards (§6.1 "first ... then")."""

    async def _try_drafter(self, machine: RouterSession, drafter: str) -> _Try:
        verifier = machine.verifier
        assert verifier is not None
        drops = machine.drops
        try:
            known_ref = await self._tokens_ref(machine, machine.committed, machine.digest)
        except (CacheUnavailable, LogMismatch):
            return _Try.STOP
        body = machine.drafter_put(drafter, known_ref)
        if await self._post_assignment(drafter, body) is not None:
            return _Try.DRAFTER_FAILED
        state = await self._ask_verifier(verifier, self.verifiers.put_drafter(verifier, body))
        if not isinstance(state, SessionState):
            self._refused_put(machine, state)
            return _Try.STOP
        machine.observe(state)
        if machine.assigned(drafter, drops):
            self.registry.note_assigned(drafter)
        return _Try.ASSIGNED


@CATALOGUE.mutant("no-committed-tokens", "assignment", "leaves committed_tokens out of its assignments", "P1-RTR-3",
                  "The assignment the router sends to the drafter (`POST assignments`) always carries "
                  "`committed_tokens` when committed > 0.", profile_only=True)
class NoCommittedTokens(RouterSession):
    """Leaves ``committed_tokens`` out of every assignment (P1-RTR-3 "always ... when committed > 0")."""

    def _assignment(self, drafter: str, round_: int, committed: int, digest: bytes,
                    tokens_ref: str | None) -> Assignment:
        return super()._assignment(drafter, round_, committed, digest, tokens_ref).replace(committed_tokens=None)


@CATALOGUE.mutant("assignment-from-own-state", "assignment", "assigns with the round it knew before the PUT, not the "
                  "session-state the PUT returned", "6.1, P1-RTR-3", "the assignment sent to the drafter carries the "
                  "values of the session-state that PUT returned.")
class AssignmentFromOwnKnowledge(RouterSession):
    """The drafter's assignment carries what the router knew before the PUT, not what the PUT returned."""

    def drafter_put(self, drafter: str, tokens_ref: str | None) -> Assignment:
        self.before_put = (self.round, self.committed, self.digest)
        return super().drafter_put(drafter, tokens_ref)

    def assignment(self, drafter: str, state: SessionState, tokens_ref: str | None) -> Assignment:
        round_, committed, digest = getattr(self, "before_put", (state.round, state.committed, state.digest))
        return self._assignment(drafter, round_, committed, digest, tokens_ref)


@CATALOGUE.mutant("sampling-forgotten", "policy", "later assignments lose the accepted sampling profile", "6.6",
                  'the router includes it in the "sampling" member of subsequent assignments')
class SamplingForgotten(RouterSession):
    """Later assignments do not carry the accepted sampling profile (§6.6 "includes it")."""

    def _assignment(self, drafter: str, round_: int, committed: int, digest: bytes,
                    tokens_ref: str | None) -> Assignment:
        return super()._assignment(drafter, round_, committed, digest, tokens_ref).replace(sampling=None)


@CATALOGUE.mutant("m-init-unclamped", "assignment", "sends its configured m_init above the contract's m_max",
                  "P1-DRF-2", "the router sends max(1, min(m_max, m_init))", profile_only=True)
class MInitUnclamped(RouterSession):
    """Sends its configured m_init whatever the contract's m_max (P1-DRF-2)."""

    def clamp_m_init(self, contract: Contract, configured: int) -> int:
        return configured


@CATALOGUE.mutant("contract-with-defaults", "session-open", "fills in low_ratio 0 when the contract omits it", "4.1",
                  "such updates are carried separately from the contract, which, including the acceptance rule, is "
                  "never modified.")
class ContractWithDefaults(RouterSession):
    """Writes the defaults of absent optional members into the contract it passes on (§4.1 "never modified")."""

    def __init__(self, session: bytes, contract: Contract, prompt: Sequence[int], commit_log: str, **kwargs: Any):
        filled = contract.replace(low_ratio=contract.low_ratio if contract.low_ratio is not None else 0)
        super().__init__(session, filled, prompt, commit_log, **kwargs)


# --------------------------------------------------------------------------- events (§6.5.2, P1-EVT-1, P1-RTR-2)


@CATALOGUE.mutant("events-from-anyone", "events", "accepts events from any party", "P1-RTR-2",
                  "and an event only from the session's current verifier (else 403).", profile_only=True)
class EventsFromAnyone(RouterSession):
    """Accepts an event from any authenticated party (P1-RTR-2 "only from the session's current verifier")."""

    def check_event(self, event: Event, peer: str | None) -> None:
        super().check_event(event, self.verifier)


@CATALOGUE.mutant("events-from-first-verifier", "failover", "accepts events only from the verifier that first opened "
                  "the session, refusing the current one", "6.5.2, P1-RTR-2", _SWITCH)
class EventsFromFirstVerifier(RouterSession):
    """Accepts events only from the verifier that first opened the session, not from the current one."""

    def opened(self, verifier: str, state: SessionState) -> None:
        super().opened(verifier, state)
        self.first_verifier = verifier

    def check_event(self, event: Event, peer: str | None) -> None:
        if peer != getattr(self, "first_verifier", None):
            raise ProtocolError(ProblemType.NOT_ASSIGNED, f"{peer!r} did not open the session")
        super().check_event(event, self.verifier)


@CATALOGUE.mutant("switch-keeps-drafter", "events", "reassigns the same drafter on switch", "6.5.2", _SWITCH)
class SwitchKeepsDrafter(SessionDriver):
    """On switch it assigns the same drafter again although another is eligible (§6.5.2 "another drafter")."""

    async def assign_locked(self, slot: Slot, *, exclude: Iterable[str] = (), same_if_alone: str | None = None,
                            prefer: str | None = None) -> None:
        await super().assign_locked(slot, prefer=same_if_alone if same_if_alone is not None else prefer)


@CATALOGUE.mutant("assign-during-self-decode", "events", "assigns a drafter when self-decoding starts", "P1-EVT-1",
                  "kind 3 when it starts self-decoding; kind 0 when self-decoding ends and a drafter is needed again",
                  profile_only=True)
class AssignDuringSelfDecode(RouterSession):
    """Takes the start of self-decoding (kind 3) for a switch and assigns another drafter (P1-EVT-1)."""

    def _apply_event(self, kind: Any) -> Wants:
        wants = super()._apply_event(kind)
        if self.phase is Phase.SELF_DECODING:
            self.phase = Phase.ACTIVE
            return Wants.ANOTHER_DRAFTER
        return wants


@CATALOGUE.mutant("unknown-kind-ignored", "events", "ignores events of a kind it does not know", "5.2",
                  'A receiver that encounters an unknown action value MUST treat it as "fail".')
class UnknownKindIgnored(RouterApp):
    """An event kind it does not know is ignored instead of being read as fail (§5.2, P1-DRF-9)."""

    async def _event(self, request: Request, parts: list[str]) -> Response:
        try:
            kind = decode(request.body).get("kind")
        except (MalformedMessage, AttributeError):
            kind = None
        if isinstance(kind, int) and not 0 <= kind <= 5:
            return Response(204)
        return await super()._event(request, parts)


# --------------------------------------------------------------------------- policy (§6.6, P1-RTR-4)


@CATALOGUE.mutant("policy-from-current-round", "policy", "starts a policy at the round it knows, not the next", "6.6",
                  "It sends a policy message with from_round greater than the current round.")
class PolicyFromCurrentRound(RouterSession):
    """Starts a policy at the round the router knows instead of the next one (§6.6 "greater than")."""

    def policy(self, sampling: Any) -> Policy:
        return super().policy(sampling).replace(from_round=self.round)


@CATALOGUE.mutant("policy-retry-same-round", "policy", "retries a 409'd policy with state.round", "P1-RTR-4",
                  "on 409 it retries with `state.round + 1`.", profile_only=True)
class PolicyRetrySameRound(RouterSession):
    """Retries a 409'd policy with ``state.round`` instead of ``state.round + 1`` (P1-RTR-4)."""

    def policy_retry(self, policy: Policy, state: SessionState) -> Policy:
        return super().policy_retry(policy, state).replace(from_round=state.round)


# --------------------------------------------------------------------------- the front (§6.7, P1-FRONT-2)


class StickyFrontOutput(FrontOutput):
    """Keeps reading from the verifier a session's first read went to, whatever its epoch, until it fails."""

    def __init__(self, app: RouterApp, **kwargs: Any) -> None:
        super().__init__(app, **kwargs)
        self.sticky: dict[bytes, str] = {}

    async def read(self, session: bytes, start: int) -> Output:
        slot = self.app.slot(session)
        verifier = self.sticky.setdefault(session, slot.machine.verifier or "")
        if verifier:
            try:
                answer = await self.app.verifiers.get_output(verifier, session, start, VERIFIER_POLL_S)
            except LinkFailure:  # on a failure it moves on to the current verifier
                answer = None
            if isinstance(answer, Output):
                return answer
        self.sticky[session] = slot.machine.verifier or ""
        return await super().read(session, start)


@CATALOGUE.mutant("front-lower-epoch", "front", "the front keeps reading the verifier it first read from and passes "
                  "on its older epoch", "6.7, 6.9", "Proposals carrying an older epoch are rejected, and front ends "
                  "discard output carrying an older epoch, so a recovered old verifier cannot extend the session.")
class StickyFront(RouterFrontend):
    output_class = StickyFrontOutput


class FinalOnFinishEvent(FrontOutput):
    """Answers ``final`` as soon as the router learnt of the finish, from whatever index (tokens are lost)."""

    def ended_here(self, slot: Slot, start: int) -> Output | None:
        machine = slot.machine
        if machine.phase in (Phase.FINISHED, Phase.FAILED):
            finish = 4 if machine.phase is Phase.FINISHED else 5
            return Output(session=machine.session, epoch=machine.epoch, tokens=(), final=True, from_=start,
                          finish=Action(finish))
        return super().ended_here(slot, start)


@CATALOGUE.mutant("front-final-early", "front", "the front answers final as soon as the finish event arrived", "6.7",
                  "so a front end that retries never duplicates or loses tokens")
class EarlyFinalFront(RouterFrontend):
    output_class = FinalOnFinishEvent


__all__ = [
    "AnyDrafterPermitted",
    "AssignBeforePut",
    "AssignDuringSelfDecode",
    "AssignmentFromOwnKnowledge",
    "ContractWithDefaults",
    "DrafterExpiryIgnored",
    "DrafterNeverReplaced",
    "EarlyFinalFront",
    "EventsFromAnyone",
    "EventsFromFirstVerifier",
    "FinalOnFinishEvent",
    "MInitUnclamped",
    "NoCommittedTokens",
    "NoReassignAfterFailover",
    "PolicyFromCurrentRound",
    "PolicyRetrySameRound",
    "ReplayIgnoresFences",
    "ResumeBeforeFence",
    "ResumeFromPreviousRecord",
    "SamplingForgotten",
    "SharedCommitLog",
    "StatusFromAnyone",
    "StickyFront",
    "StickyFrontOutput",
    "SwitchKeepsDrafter",
    "UnconditionalFence",
    "UnknownKindIgnored",
    "VerifierExpiryIgnored",
]
