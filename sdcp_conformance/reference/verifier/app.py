"""The reference verifier's HTTP layer: Table 1's verifier resources around the session machine.

Thin by design: each handler decodes the message, asks
:class:`~sdcp_conformance.reference.verifier.session.VerifierSession`, does the
I/O the machine asked for (cache reads, one batched scoring pass, the
commit-log append, events to the router) and encodes the answer. Every
protocol error becomes a Problem Details response at :meth:`VerifierApp.__call__`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar
from urllib.parse import parse_qs, urlsplit

from sdcp_conformance.protocol.codec import decode
from sdcp_conformance.protocol.contract import validate_contract
from sdcp_conformance.protocol.errors import MalformedMessage, ProtocolError
from sdcp_conformance.protocol.messages import (
    ROLE_VERIFIER,
    Assignment,
    Event,
    Message,
    Output,
    Policy,
    Proposal,
    Sampling,
    SessionOpen,
    Status,
)
from sdcp_conformance.protocol.problems import SDCP_MEDIA_TYPE, ProblemType
from sdcp_conformance.protocol.rng import SeededUniforms, SystemUniforms, UniformSource
from sdcp_conformance.reference.verifier.decisions import COMMIT_LOG_UNAVAILABLE_STATUS
from sdcp_conformance.reference.verifier.ports import (
    AppendOutcome,
    Cache,
    CacheUnavailable,
    RouterLink,
    ScoreItem,
    TargetModel,
)
from sdcp_conformance.reference.verifier.session import (
    Committed,
    PendingCommit,
    Phase,
    StoredVerdict,
    Ticket,
    VerifierSession,
    WaitForRound,
)
from sdcp_conformance.transport.problem import (
    answered_as_problem,
    b64url_decode,
    status_problem_response,
)
from sdcp_conformance.transport.types import Request, Response

T = TypeVar("T")
log = logging.getLogger(__name__)

LOAD_HOOK_PATH = "test-control/load"
"""Where ``serve verifier --load-hook`` offers the load hook, under the verifier's base URI (not an SDCP resource)."""


@dataclass(frozen=True)
class VerifierConfig:
    base_uri: str
    """This verifier's identity and base URI (P1-ID-1)."""
    routers: frozenset[str]
    """Identities allowed to use router-only resources (P1-ID-2)."""
    output_wait_s: float = 10.0
    """§6.7: how long GET output waits for tokens (server-chosen; P1-OUT-1)."""
    round_wait_s: float = 60.0
    """How long an identical retry waits for the verdict of the round in flight."""
    pinned_load: int | None = None
    """Report this load instead of the measured one (tests exercise both §6.5.2 branches)."""
    capacity: int = 64
    """Scoring items in flight that count as 100 % load."""
    max_batch: int = 64
    status_ttl_ms: int = 5000
    load_hook: bool = False
    """Offer ``PUT {base}test-control/load`` (``{"load": N}`` or ``{"load": null}``, JSON) to the routers'
    identities, so a harness can set the load (``serve verifier --load-hook``; the target's ``load_hook``)."""


class Scorer(Protocol):
    """What the app asks of a model's scoring (a :class:`ScoreBatcher`, or a stand-in's inline scorer)."""

    in_flight: int
    batch_sizes: list[int]

    @property
    def queued(self) -> int: ...

    async def score(self, item: ScoreItem) -> object: ...

    def forget(self, session: bytes) -> None: ...


class ScoreBatcher:
    """Collects scoring items that arrive while a pass runs and scores them in one pass.

    No timer: the first item starts a pass at once, and everything that queues
    up meanwhile goes into the next one, so batches grow with the load.
    """

    def __init__(self, model: TargetModel, max_batch: int) -> None:
        self._model = model
        self._max_batch = max_batch
        self._pending: list[tuple[ScoreItem, asyncio.Future[object]]] = []
        self._worker: asyncio.Task[None] | None = None
        self._forgets: list[bytes] = []
        self.in_flight = 0
        self.batch_sizes: list[int] = []

    async def score(self, item: ScoreItem) -> object:
        future: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        self._pending.append((item, future))
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._drain())
        return await future

    def forget(self, session: bytes) -> None:
        """Drop ``session``'s cached prefix now, or after the pass running on the model's thread (D-VER-10)."""
        if self.in_flight:
            self._forgets.append(session)
        else:
            self._model.forget(session)

    @property
    def queued(self) -> int:
        return len(self._pending) + self.in_flight

    async def _drain(self) -> None:
        while self._pending:
            batch, self._pending = self._pending[: self._max_batch], self._pending[self._max_batch :]
            self.in_flight = len(batch)
            self.batch_sizes.append(len(batch))
            try:
                results = await asyncio.to_thread(self._model.score, [item for item, _ in batch])
            except Exception as exc:  # a scoring failure fails exactly the items of this pass
                for _, future in batch:
                    if not future.done():
                        future.set_exception(exc)
            else:
                for (_, future), rows in zip(batch, results, strict=True):
                    if not future.done():
                        future.set_result(rows)
            finally:
                self.in_flight = 0
                forgets, self._forgets = self._forgets, []
                for session in forgets:  # on this thread, before the next pass (D-VER-10)
                    self._model.forget(session)


@dataclass
class _SessionSlot:
    machine: VerifierSession
    commit_log: str
    changed: asyncio.Condition = field(default_factory=asyncio.Condition)
    self_decoder: asyncio.Task[None] | None = None


Route = Callable[[Request, list[str]], Awaitable[Response]]


class VerifierApp:
    """An async :data:`~sdcp_conformance.transport.types.Handler` serving the verifier resources."""

    def __init__(
        self, config: VerifierConfig, model: TargetModel | Sequence[TargetModel], cache: Cache, router: RouterLink
    ) -> None:
        self.config = config
        self.pinned_load = config.pinned_load
        """Starts as configured; the embedded harness may switch it between cases."""
        served = list(model) if isinstance(model, Sequence) else [model]
        # D-VER-9: a verifier may serve several target models; a session uses the
        # one its contract's target digest names (§6.1).
        self.models = {candidate.model_sha256: candidate for candidate in served}
        self.model = served[0]
        self.cache = cache
        self.router = router
        self.batchers: dict[bytes, Scorer] = {
            digest: ScoreBatcher(candidate, config.max_batch) for digest, candidate in self.models.items()}
        self.sessions: dict[bytes, _SessionSlot] = {}
        self._background: set[asyncio.Future[Any]] = set()
        self._base_path = urlsplit(config.base_uri).path.rstrip("/")

    # ------------------------------------------------------------------ plumbing

    async def __call__(self, request: Request) -> Response:
        try:
            return await answered_as_problem(self._route, request)
        except _HttpError as error:
            return status_problem_response(error.status, error.detail)

    async def _route(self, request: Request) -> Response:
        path = request.path
        if self.config.load_hook and path == f"{self._base_path}/{LOAD_HOOK_PATH}":
            return self._set_load(request)
        if not path.startswith(self._base_path + "/"):
            return status_problem_response(404, f"no resource at {path}")
        parts = path[len(self._base_path) + 1 :].split("/")
        routes: dict[tuple[str, str], Route] = {
            ("POST", "sessions"): self._open_session,
            ("PUT", "sessions/*/drafter"): self._assign,
            ("POST", "proposals"): self._proposal,
            ("GET", "sessions/*/output"): self._output,
            ("POST", "sessions/*/policy"): self._policy,
        }
        shape = "/".join("*" if index == 1 and parts[0] == "sessions" else part for index, part in enumerate(parts))
        route = routes.get((request.method, shape))
        if route is None:
            known = {path_shape for _, path_shape in routes}
            status = 405 if shape in known else 404
            return status_problem_response(status, f"{request.method} {path} is not a verifier resource")
        return await route(request, parts)

    def _set_load(self, request: Request) -> Response:
        """The load hook (not SDCP; offered only when configured): a router identity sets the reported load, or
        gives it back to the configured pin or the measure with ``null``."""
        if request.method != "PUT":
            return status_problem_response(405, f"{request.method} {request.path}: the load hook takes PUT")
        if request.peer_identity not in self.config.routers:
            return status_problem_response(403, f"{request.peer_identity!r} may not set the load (a router may)")
        try:
            load = json.loads(request.body)["load"]
        except (ValueError, KeyError, TypeError):
            return status_problem_response(400, 'the load hook takes {"load": N} or {"load": null} (JSON)')
        if load is not None and (isinstance(load, bool) or not isinstance(load, int) or not 0 <= load <= 100):
            return status_problem_response(400, f"load {load!r} is not an integer in 0..100 or null")
        self.pinned_load = self.config.pinned_load if load is None else load
        return Response(204)

    def load(self) -> int:
        if self.pinned_load is not None:
            return self.pinned_load
        return min(100, round(100 * self.queued() / self.config.capacity))

    def queued(self) -> int:
        return sum(batcher.queued for batcher in self.batchers.values())

    def _spawn(self, coroutine: Awaitable[T]) -> asyncio.Future[T]:
        task = asyncio.ensure_future(coroutine)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    async def close(self) -> None:
        for slot in self.sessions.values():
            if slot.self_decoder is not None:
                slot.self_decoder.cancel()
        for task in list(self._background):
            task.cancel()
        for task in list(self._background):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    def _batcher(self, machine: VerifierSession) -> Scorer:
        return self.batchers[machine.contract.target]

    def _require_router(self, request: Request) -> None:
        # P1-ID-2: router-only resources "are accepted only from identities in the
        # verifier's configured router list; others get 403 with sdcp-not-assigned".
        if request.peer_identity not in self.config.routers:
            raise ProtocolError(ProblemType.NOT_ASSIGNED, f"{request.peer_identity!r} is not a router")

    def _slot(self, encoded_id: str) -> _SessionSlot:
        session_id = _session_id(encoded_id)
        slot = self.sessions.get(session_id)
        if slot is None:
            # P1-SES-1: "A session id the verifier does not know: 404 on session resources".
            raise _HttpError(404, f"no session {encoded_id}")
        return slot

    # ------------------------------------------------------------------ POST sessions

    async def _open_session(self, request: Request, parts: list[str]) -> Response:
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
        self._batcher(machine).forget(opening.session)
        self.sessions[opening.session] = _SessionSlot(machine, opening.commit_log)
        return _ok(machine.state(), 201)

    def new_session(self, request: Request, opening: SessionOpen, prompt: Sequence[int], vocab_size: int,
                    committed: Sequence[int]) -> VerifierSession:
        """The session machine for a session-open (a hook: the mutant catalogue plants bugs here)."""
        return VerifierSession(opening, prompt, vocab_size=vocab_size, committed_output=committed)

    def _check_model(self, opening: SessionOpen) -> None:
        contract = opening.contract
        # §6.1: "it MUST refuse a contract whose target digest does not match its model".
        model = self.models.get(contract.target)
        if model is None:
            raise ProtocolError(ProblemType.BAD_CONTRACT, "the contract's target is not this verifier's model")
        # P1-SES-1: "The verifier SHOULD also refuse a tokenizer digest that does not match".
        if contract.tokenizer != model.tokenizer_sha256:
            raise ProtocolError(ProblemType.BAD_CONTRACT, "the contract's tokenizer is not this verifier's")

    def _replaces(self, current: VerifierSession, opening: SessionOpen) -> bool:
        """P1-MSG-5 and P1-SES-1: idempotent retry, failover, or conflict."""
        if opening.epoch == current.epoch:
            if opening.contract != current.contract:
                raise ProtocolError(ProblemType.BAD_CONTRACT, "the session exists with another contract")
            return False
        if opening.epoch > current.epoch and opening.resume is not None:
            return True
        raise ProtocolError(
            ProblemType.STALE_EPOCH,
            f"epoch {opening.epoch} cannot replace epoch {current.epoch}"
            + ("" if opening.epoch < current.epoch else " without resume"),
        )

    async def _tokens(self, value: tuple[int, ...] | str) -> list[int]:
        if not isinstance(value, str):
            return list(value)
        try:
            tokens = decode(await self.cache.get(value))
        except CacheUnavailable as exc:
            raise ProtocolError(ProblemType.BAD_MESSAGE, f"cannot read {value}: {exc}") from exc
        # P1-MLC-2: "a token list ... is a CBOR array of uint".
        if not isinstance(tokens, list) or not all(
            isinstance(token, int) and not isinstance(token, bool) and token >= 0 for token in tokens
        ):
            raise MalformedMessage(f"{value} does not hold a CBOR array of uint")
        return tokens

    # ------------------------------------------------------------------ PUT drafter, POST policy

    async def _assign(self, request: Request, parts: list[str]) -> Response:
        assignment = Assignment.from_cbor(request.body)
        self._require_router(request)
        slot = self._slot(parts[1])
        _require_same_session(assignment.session, slot)
        state = slot.machine.assign(assignment)
        async with slot.changed:
            slot.changed.notify_all()
        return _ok(state, 200)

    async def _policy(self, request: Request, parts: list[str]) -> Response:
        policy = Policy.from_cbor(request.body)
        self._require_router(request)
        slot = self._slot(parts[1])
        _require_same_session(policy.session, slot)
        return _ok(slot.machine.set_policy(policy), 200)

    # ------------------------------------------------------------------ POST proposals

    async def _proposal(self, request: Request, parts: list[str]) -> Response:
        proposal = Proposal.from_cbor(request.body)
        slot = self.sessions.get(proposal.session)
        if slot is None:
            # P1-SES-1: "A session id the verifier does not know: ... 403 sdcp-not-assigned on proposals".
            raise ProtocolError(ProblemType.NOT_ASSIGNED, "unknown session")
        deadline = asyncio.get_running_loop().time() + self.config.round_wait_s
        while True:
            admission = slot.machine.admit(proposal, request.peer_identity)
            if isinstance(admission, StoredVerdict):
                return _ok(admission.verdict, 200)
            if isinstance(admission, Ticket):
                # D-VER-10: the round is verified to its end even when the request that started it goes away (its
                # connection closed: hypercorn cancels the handler of every stream it abandons at its keep-alive
                # limit). Cancelled half-way through the commit-log append, the round stayed "being verified" for
                # good, and the drafter's identical retry (§6.9) waited for a verdict that never came.
                verifying = self._spawn(self._verify(slot, admission))
                verifying.add_done_callback(_retrieved)
                return await asyncio.shield(verifying)
            await self._wait_for_change(slot, admission, deadline)

    async def _wait_for_change(self, slot: _SessionSlot, waiting: WaitForRound, deadline: float) -> None:
        remaining = deadline - asyncio.get_running_loop().time()
        if remaining <= 0:
            raise _HttpError(503, f"round {waiting.round} is still being verified")
        async with slot.changed:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(slot.changed.wait(), remaining)

    async def _verify(self, slot: _SessionSlot, ticket: Ticket) -> Response:
        machine = slot.machine
        try:
            q_rows = await self._q_rows(machine, ticket) if ticket.needs_q else None
            item = ScoreItem(machine.session, (*machine.prompt, *machine.output), ticket.proposal.tokens)
            logits = await self._batcher(machine).score(item)
            uniforms = _uniforms(machine, ticket.sampling, ticket.proposal.round)
            pending = machine.decide(ticket, logits, uniforms, self.load(), q_rows)  # type: ignore[arg-type]
        except BaseException:
            machine.abandon(ticket)
            async with slot.changed:
                slot.changed.notify_all()
            raise
        committed = await self._commit(slot, pending, ticket)
        assert committed.verdict is not None
        return _ok(committed.verdict, 200)

    async def _q_rows(self, machine: VerifierSession, ticket: Ticket) -> object:
        uri = ticket.proposal.q_rows
        assert uri is not None
        try:
            blob = await self.cache.get(uri)
        except CacheUnavailable as exc:
            # §6.3: "If it cannot obtain them, it rejects the round with problem
            # type sdcp-q-unavailable and commits nothing."
            raise ProtocolError(ProblemType.Q_UNAVAILABLE, f"cannot read {uri}: {exc}") from exc
        return machine.check_q(ticket, blob)

    async def _commit(self, slot: _SessionSlot, pending: PendingCommit, ticket: Ticket | None) -> Committed:
        machine = slot.machine
        try:
            outcome = await self.cache.append_record(slot.commit_log, pending.record.to_cbor(), machine.epoch)
        except Exception as exc:
            log.warning("commit-log append for %s failed: %s", machine.session.hex(), exc)
            outcome = AppendOutcome.FAILED
        if outcome is not AppendOutcome.APPENDED:
            if ticket is not None:
                machine.abandon(ticket)
            async with slot.changed:
                slot.changed.notify_all()
            if outcome is AppendOutcome.FENCED:
                machine.fence()
                raise ProtocolError(ProblemType.STALE_EPOCH, "the commit log is fenced by a newer epoch")
            raise _HttpError(COMMIT_LOG_UNAVAILABLE_STATUS, "the commit log could not be appended to")
        committed = machine.commit(pending)
        async with slot.changed:
            slot.changed.notify_all()
        for event in committed.events:
            self._spawn(self._post_event(event))
        if machine.phase is Phase.SELF_DECODING and (slot.self_decoder is None or slot.self_decoder.done()):
            slot.self_decoder = asyncio.ensure_future(self._self_decode(slot))
        return committed

    async def _post_event(self, event: Event) -> None:
        try:
            await self.router.post_event(event)
        except Exception as exc:  # the router may be down; the verdict already stands
            log.warning("event %s for session %s not delivered: %s", event.kind.name, event.session.hex(), exc)

    async def _self_decode(self, slot: _SessionSlot) -> None:
        """§6.5.2 self_decode: commit one token per round until self_max, load or the end."""
        machine = slot.machine
        while machine.phase is Phase.SELF_DECODING and not machine.fenced:
            if machine.self_decoding_should_stop(self.load()):
                self._spawn(self._post_event(machine.end_self_decoding()))
                async with slot.changed:
                    slot.changed.notify_all()
                return
            item = ScoreItem(machine.session, (*machine.prompt, *machine.output), ())
            logits = await self._batcher(machine).score(item)
            if not machine.self_decoding:
                return  # D-VER-6: an assignment ended the period while we scored
            round_number = machine.round + 1
            uniforms = _uniforms(machine, machine.sampling_for(round_number), round_number)
            pending = machine.self_decode(logits[0], uniforms)  # type: ignore[index]
            try:
                await self._commit(slot, pending, None)
            except (ProtocolError, _HttpError) as exc:
                log.warning("self-decoding of %s stopped: %s", machine.session.hex(), exc)
                return

    # ------------------------------------------------------------------ GET output

    async def _output(self, request: Request, parts: list[str]) -> Response:
        slot = self._slot(parts[1])
        start = _from_parameter(request.query)
        deadline = asyncio.get_running_loop().time() + self.config.output_wait_s
        while True:
            output = slot.machine.output_from(start)
            remaining = deadline - asyncio.get_running_loop().time()
            if output is not None:
                return _ok(output, 200)
            if remaining <= 0:
                # P1-OUT-1: after the wait, "returns whatever is committed from n on, possibly no tokens".
                machine = slot.machine
                empty = Output(session=machine.session, epoch=machine.epoch, tokens=(), final=False, from_=start)
                return _ok(empty, 200)
            async with slot.changed:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(slot.changed.wait(), remaining)

    # ------------------------------------------------------------------ status

    def status(self) -> Status:
        return Status(
            instance=self.config.base_uri,
            role=ROLE_VERIFIER,
            load=self.load(),
            queue=self.queued(),
            ttl_ms=self.config.status_ttl_ms,
        )

    @property
    def status_interval_s(self) -> float:
        """A third of ttl_ms: a report may be lost or late twice before the status expires."""
        return self.config.status_ttl_ms / 3000

    async def report_status_forever(self) -> None:
        """§6.1: "Each instance reports status at intervals shorter than its ttl_ms".

        A router that does not answer is said once, then the reports go on quietly until one reaches it again
        (said once too): the harness's router listens only while ``certify`` runs, so a verifier started for
        certification fails every report until then."""
        failing = False
        while True:
            try:
                await self.router.put_status(self.status().to_obj())
            except Exception as exc:
                if not failing:
                    log.warning("status report to the router failed: %s; retrying every %.1f s, quietly until one "
                                "gets through (a harness's router listens only while `certify` runs)", exc,
                                self.status_interval_s)
                failing = True
            else:
                if failing:
                    log.warning("status reports reach the router again")
                failing = False
            await asyncio.sleep(self.status_interval_s)


class _HttpError(Exception):
    """An answer with a plain HTTP status and no SDCP problem type (404, 503)."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


def _retrieved(task: asyncio.Future[Response]) -> None:
    """The outcome of a verification whose requester went away is in the session; its exception is not news."""
    if not task.cancelled():
        task.exception()


def _uniforms(machine: VerifierSession, sampling: Sampling | None, round_number: int) -> UniformSource:
    """§6.4: HMAC-derived values when the profile has a seed, else a CSPRNG."""
    seed = sampling.seed if sampling is not None else None
    if seed is None:
        return SystemUniforms()
    return SeededUniforms(seed, machine.session, round_number)


def _ok(message: Message, status: int) -> Response:
    return Response(status, message.to_cbor(), [("content-type", SDCP_MEDIA_TYPE)])


def _session_id(encoded: str) -> bytes:
    # P1-MSG-3: "{id} in paths is base64url without padding of the 16-octet
    # session id; any other length or alphabet is 400."
    raw = b64url_decode(encoded)
    if len(raw) != 16:
        raise MalformedMessage(f"session id {encoded!r} is not 16 octets")
    return raw


def _require_same_session(session: bytes, slot: _SessionSlot) -> None:
    if session != slot.machine.session:
        raise MalformedMessage("the body's session does not match the path's {id}")


def _from_parameter(query: str) -> int:
    values = parse_qs(query, keep_blank_values=True).get("from", ["0"])
    if len(values) != 1 or not values[0].isdigit():
        raise MalformedMessage(f"from must be one non-negative integer, got {values!r}")
    return int(values[0])


__all__ = ["ScoreBatcher", "Scorer", "VerifierApp", "VerifierConfig"]
