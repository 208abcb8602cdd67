"""The reference drafter: ``POST assignments`` (Table 1) and one drafting loop per session.

Thin by design: the handler validates and installs an assignment, and each
session's asyncio task drafts, publishes q_rows under a lease, posts the
proposal (retrying lost verdicts with the identical body), and hands every
answer to :class:`~sdcp_conformance.reference.drafter.session.DrafterSession`,
which decides what comes next. Every network await has a timeout; time and
sleeping are injected.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import hashlib
import logging
import math
import time
from collections.abc import Awaitable, Coroutine, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit

import numpy as np

from sdcp_conformance.protocol.codec import decode
from sdcp_conformance.protocol.errors import ProtocolError
from sdcp_conformance.protocol.messages import ROLE_DRAFTER, Assignment, Output, Status, Verdict
from sdcp_conformance.protocol.problems import ProblemType
from sdcp_conformance.reference.drafter.decisions import BAD_PROMPT, INCONSISTENT_COMMITTED_TOKENS
from sdcp_conformance.reference.drafter.drafting import encode_q_rows
from sdcp_conformance.reference.drafter.ports import (
    Cache,
    CacheUnavailable,
    DraftModel,
    Problem,
    ProposalResult,
    QRows,
    RouterLink,
    TransportFailure,
    VerifierLink,
)
from sdcp_conformance.reference.drafter.session import (
    MIN_TIME_S,
    DrafterIdentity,
    DrafterSession,
    Estimates,
    Next,
    check_assignment,
    check_epoch,
)
from sdcp_conformance.transport.problem import answered_as_problem, status_problem_response
from sdcp_conformance.transport.types import Clock, Request, Response, Sleep

log = logging.getLogger(__name__)

T = TypeVar("T")

LEASE_MARGIN_MS = 1000
"""D-DRF-8: added to the worst-case exchange time when leasing q_rows."""


@dataclass(frozen=True)
class DrafterConfig:
    base_uri: str
    """This drafter's identity and base URI (P1-ID-1)."""
    routers: frozenset[str]
    """P1-DRF-1: the identities allowed to send assignments; status goes to each."""
    cache_base: str
    """P1-DRF-1: "an MLC base URI where it writes q_rows"."""
    seed: int | None = None
    """D-DRF-9: seed of the instance's SeedSequence; None draws OS entropy."""
    proposal_timeout_s: float = 30.0
    output_timeout_s: float = 40.0
    """GET output long-polls for up to a server-chosen time (P1-OUT-1 allows 30 s)."""
    cache_timeout_s: float = 10.0
    router_timeout_s: float = 5.0
    max_attempts: int = 4
    """D-DRF-10, D-DRF-12, D-DRF-14: attempts per exchange, setbacks, output reads."""
    retry_window_s: float = 30.0
    """D-DRF-10, P1-DRF-5: a lost verdict is retried "for at least 30 s": the exchange gives up only once it
    has made ``max_attempts`` attempts and this long has passed since its first one."""
    backoff_s: float = 0.05
    backoff_max_s: float = 2.0
    capacity: int = 16
    """Drafting sessions that count as 100 % load (D-DRF-15)."""
    draft_concurrency: int = 1
    """Draft calls the model runs at once."""
    status_ttl_ms: int = 5000
    initial_alpha: float = 0.75
    """D-DRF-5: alpha of a new session before its first verdict."""
    alpha_weight: float = 0.1
    t_draft_prior_s: float = 0.002
    t_verify_prior_s: float = 0.05
    timing_weight: float = 0.2
    measured_timing: bool = True
    """D-DRF-17: False chooses M from t_draft_prior_s and t_verify_prior_s, not from measured
    times, so that a seeded run repeats exactly (§6.2's rule then depends on alpha alone)."""


class _Timing:
    """D-DRF-6: EWMAs of t_d (instance-wide, per token) and t_v (per verifier)."""

    def __init__(self, config: DrafterConfig) -> None:
        self.t_draft = config.t_draft_prior_s
        self._t_verify: dict[str, float] = {}
        self._prior_verify = config.t_verify_prior_s
        self._weight = config.timing_weight

    def verify(self, verifier: str) -> float:
        return max(MIN_TIME_S, self._t_verify.get(verifier, self._prior_verify))

    def observe_draft(self, per_token_s: float) -> None:
        self.t_draft += self._weight * (max(0.0, per_token_s) - self.t_draft)

    def observe_verify(self, verifier: str, seconds: float) -> None:
        current = self._t_verify.get(verifier, self._prior_verify)
        self._t_verify[verifier] = current + self._weight * (max(0.0, seconds) - current)


@dataclass
class _Slot:
    machine: DrafterSession
    rng: np.random.Generator
    model: DraftModel
    """The draft model this session drafts with (D-DRF-20)."""
    task: asyncio.Task[None] | None = None


class DrafterApp:
    """An async :data:`~sdcp_conformance.transport.types.Handler` serving ``POST assignments``.

    The points where the mutant catalogue plants bugs are methods (``authorized``, ``parse_assignment``,
    ``validate_assignment``, ``_check_epoch``, ``uniforms``, ``_exchange``, ``_publish``, ``_delete``,
    ``lease_ms``, ``status``, ``status_interval_s``) and ``session_class`` builds each session's machine;
    the reference behaviour does not depend on being subclassed.
    """

    session_class: type[DrafterSession] = DrafterSession

    def __init__(
        self,
        config: DrafterConfig,
        model: DraftModel | Sequence[DraftModel],
        cache: Cache,
        verifier: VerifierLink,
        router: RouterLink,
        *,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.config = config
        # D-DRF-20: a drafter may serve several draft models; a session drafts with the first one its contract's
        # drafters list permits.
        self.models: tuple[DraftModel, ...] = tuple(model) if isinstance(model, Sequence) else (model,)
        if not self.models:
            raise ValueError("a drafter serves at least one draft model")
        self.model = self.models[0]
        self.cache = cache
        self.verifier = verifier
        self.router = router
        self.identity = self.identity_of(self.model)
        self.sessions: dict[bytes, _Slot] = {}
        self.timing = _Timing(config)
        self.accept: float | None = None
        self._clock = clock
        self._sleep = sleep
        self._seeds = np.random.SeedSequence(config.seed)
        self._unreachable: set[str] = set()
        """Routers whose last status report failed (said once, then retried quietly)."""
        self._model_thread = ThreadPoolExecutor(config.draft_concurrency, thread_name_prefix="sdcp-drafter-model")
        """Every model call (draft, forget) runs here, in the order asked for (D-DRF-19, ``MODEL_CALLS_QUEUED``)."""
        self._closed = False
        self._queued = 0
        self._serial = 0
        self._locks: dict[bytes, asyncio.Lock] = {}
        self._base_path = urlsplit(config.base_uri).path.rstrip("/")
        self._instance_tag = hashlib.sha256(config.base_uri.encode()).hexdigest()[:16]
        self._cache_base = config.cache_base if config.cache_base.endswith("/") else config.cache_base + "/"

    # ------------------------------------------------------------------ POST assignments

    async def __call__(self, request: Request) -> Response:
        return await answered_as_problem(self._route, request)

    async def _route(self, request: Request) -> Response:
        if request.path.rstrip("/") != self._base_path + "/assignments":
            return status_problem_response(404, f"no resource at {request.path}")
        if request.method != "POST":
            return status_problem_response(405, f"{request.method} {request.path} is not a drafter resource")
        return await self._assign(request)

    async def _assign(self, request: Request) -> Response:
        if not self.authorized(request.peer_identity):
            # P1-DRF-1: "it accepts POST assignments only from its routers (else 403
            # sdcp-not-assigned)"; D-DRF-1: before the body is parsed.
            who = request.peer_identity
            raise ProtocolError(ProblemType.NOT_ASSIGNED, f"{who!r} is not one of this drafter's routers")
        assignment = self.parse_assignment(request.body)
        self.validate_assignment(assignment)
        self._check_epoch(assignment)
        prompt = await self._prompt(assignment.prompt)
        committed = await self._committed_tokens(assignment)
        lock = self._locks.setdefault(assignment.session, asyncio.Lock())
        async with lock:
            await self._install(assignment, prompt, committed)
        return Response(204)

    def authorized(self, peer: str | None) -> bool:
        """P1-DRF-1: an assignment comes from one of the configured routers."""
        return peer in self.config.routers

    def parse_assignment(self, body: bytes) -> Assignment:
        """§5.2, §4.1: the body as an assignment; a contract key the draft does not define is refused."""
        return Assignment.from_cbor(body)

    def validate_assignment(self, assignment: Assignment) -> None:
        """Checks that need no I/O and no held state (P1-DRF-2, P1-DRF-3, D-DRF-2)."""
        check_assignment(assignment, self.identity_of(self.model_for(assignment)))

    def model_for(self, assignment: Assignment) -> DraftModel:
        """D-DRF-20: the first served model the contract's drafters list permits (the first one when the contract
        lists none, or when it permits none: that assignment is then refused by P1-DRF-3's check)."""
        permitted = assignment.contract.drafters
        if permitted is None:
            return self.model
        return next((model for model in self.models if model.model_sha256 in permitted), self.model)

    def identity_of(self, model: DraftModel) -> DrafterIdentity:
        return DrafterIdentity(self.config.base_uri, model.model_sha256, model.tokenizer_sha256, model.vocab_size)

    def _check_epoch(self, assignment: Assignment) -> None:
        held = self.sessions.get(assignment.session)
        check_epoch(held.machine if held is not None else None, assignment)

    async def _install(self, assignment: Assignment, prompt: list[int], committed: list[int] | None) -> None:
        """P1-DRF-7: "an equal or higher epoch replaces the current assignment, abandoning
        any outstanding proposal first"."""
        self._check_epoch(assignment)  # again: another assignment may have won while we read the cache
        held = self.sessions.get(assignment.session)
        estimates = held.machine.estimates if held is not None else self._new_estimates()  # D-DRF-5
        model = self.model_for(assignment)
        machine = self.session_class(
            assignment, prompt, committed, identity=self.identity_of(model), estimates=estimates,
            max_setbacks=self.config.max_attempts,
        )
        rng = held.rng if held is not None else np.random.default_rng(self._seeds.spawn(1)[0])
        if held is not None:
            await self._cancel(held)
        slot = _Slot(machine, rng, model)
        self.sessions[assignment.session] = slot
        slot.task = asyncio.create_task(self._run(slot))

    def _new_estimates(self) -> Estimates:
        return Estimates(self.config.initial_alpha, weight=self.config.alpha_weight)

    async def _cancel(self, slot: _Slot) -> None:
        slot.machine.abandon()
        if slot.task is not None:
            await _cancelled(slot.task)

    async def _prompt(self, value: tuple[int, ...] | str) -> list[int]:
        if not isinstance(value, str):
            return list(value)
        try:
            return _token_list(await self._bounded(self.cache.get(value), self.config.cache_timeout_s))
        except (CacheUnavailable, TimeoutError, ValueError) as exc:
            raise ProtocolError(BAD_PROMPT, f"cannot read the prompt {value}: {exc}") from exc  # D-DRF-3

    async def _committed_tokens(self, assignment: Assignment) -> list[int] | None:
        """D-DRF-4: None (resynchronise from the verifier) when absent or unreadable."""
        uri = assignment.committed_tokens
        if uri is None:
            return None
        try:
            blob = await self._bounded(self.cache.get(uri), self.config.cache_timeout_s)
        except (CacheUnavailable, TimeoutError) as exc:
            log.warning("committed_tokens %s unreadable (%s); reading the verifier's output instead", uri, exc)
            return None
        try:
            return _token_list(blob)
        except ValueError as exc:
            raise ProtocolError(INCONSISTENT_COMMITTED_TOKENS, f"{uri}: {exc}") from exc

    # ------------------------------------------------------------------ the drafting loop

    async def _run(self, slot: _Slot) -> None:
        machine = slot.machine
        step = Next.RESYNC if machine.needs_resync else Next.PROPOSE
        try:
            while step is not Next.STOP:
                if step is Next.RESYNC:
                    step = await self._resync(machine)
                    continue
                if machine.setbacks:
                    await self._sleep(self._backoff(machine.setbacks))  # D-DRF-12
                step = await self._round(slot)
        except Exception as exc:  # a bug or a broken model: end this session, not the drafter
            log.exception("drafting loop of %s failed", machine.session.hex())
            machine.fail(f"{type(exc).__name__}: {exc}")
        finally:
            machine.abandon()
            self._forget(slot.model, machine.session)

    def _forget(self, model: DraftModel, session: bytes) -> None:
        """The model drops the session's state once a draft still running for it has ended (D-DRF-19)."""
        if not self._closed:
            self._model_thread.submit(model.forget, session)

    async def _round(self, slot: _Slot) -> Next:
        machine = slot.machine
        started = self._clock()
        if self.config.measured_timing:
            m = machine.choose_m(self.timing.t_draft, self.timing.verify(machine.verifier))
        else:  # D-DRF-17: reproducible runs choose M from the priors alone
            m = machine.choose_m(self.config.t_draft_prior_s, self.config.t_verify_prior_s)
        tokens, rows = await self._draft(slot, m)
        q_uri = None
        if rows is not None:
            q_uri = await self._publish(machine, tokens, rows)
            if q_uri is None:
                return machine.setback("q_rows could not be written")
        self.timing.observe_draft((self._clock() - started) / len(tokens))
        proposal = machine.next_proposal(tokens, q_uri, self.status())
        result = await self._exchange(machine.verifier, proposal.to_cbor())
        if q_uri is not None:
            # P1-DRF-8: "the drafter deletes the objects after the verdict" (D-DRF-8).
            await self._delete(q_uri)
        return self._on_result(machine, result)

    def _on_result(self, machine: DrafterSession, result: ProposalResult) -> Next:
        if isinstance(result, Verdict):
            step = machine.on_verdict(result)
            if machine.last_observed is not None:
                self._observe_accept(*machine.last_observed)
            return step
        if isinstance(result, Problem):
            return machine.on_problem(result)
        return machine.on_transport_exhausted(result.detail)

    async def _draft(self, slot: _Slot, m: int) -> tuple[tuple[int, ...], QRows | None]:
        machine = slot.machine
        self._queued += 1
        try:
            call = functools.partial(slot.model.draft, machine.session, machine.context, m, machine.sampling,
                                     machine.rule, self.uniforms(slot))
            return await asyncio.get_running_loop().run_in_executor(self._model_thread, call)
        finally:
            self._queued -= 1

    def uniforms(self, slot: _Slot) -> np.random.Generator:
        """D-DRF-9: the session's own generator, never §6.4's HMAC derivation."""
        return slot.rng

    async def _publish(self, machine: DrafterSession, tokens: tuple[int, ...], rows: QRows) -> str | None:
        """Write q_rows under a lease (P1-MLC-3); None when every attempt failed."""
        if rows.shape != (len(tokens), machine.identity.vocab_size):
            raise ValueError(f"draft rows have shape {rows.shape}, expected ({len(tokens)}, V)")
        self._serial += 1
        uri = (
            f"{self._cache_base}q/{self._instance_tag}/{_b64url(machine.session)}/"
            f"{machine.epoch}/{machine.round + 1}/{self._serial}"
        )
        body = encode_q_rows(rows)
        for attempt in range(1, self.config.max_attempts + 1):
            if attempt > 1:
                await self._sleep(self._backoff(attempt - 1))
            try:
                await self._bounded(self.cache.put(uri, body, self.lease_ms()), self.config.cache_timeout_s)
                return uri
            except (CacheUnavailable, TimeoutError) as exc:
                log.warning("writing %s failed (attempt %d): %s", uri, attempt, exc)
        return None

    async def _delete(self, uri: str) -> None:
        try:
            await self._bounded(self.cache.delete(uri), self.config.cache_timeout_s)
        except (CacheUnavailable, TimeoutError) as exc:
            log.warning("deleting %s failed, left to its lease: %s", uri, exc)

    async def _exchange(self, verifier: str, body: bytes) -> ProposalResult:
        """P1-DRF-5: "A lost verdict ... is retried with the identical body, with backoff, for at least 30 s
        or until a new assignment for the session arrives ...; a 4xx is final" (a new assignment cancels
        this loop, P1-DRF-7). D-DRF-10: it gives up after ``max_attempts`` attempts once
        ``retry_window_s`` has passed since the first."""
        first = self._clock()
        attempt = 0
        while True:
            attempt += 1
            if attempt > 1:
                await self._sleep(self._backoff(attempt - 1))
            started = self._clock()
            result = await self._attempt(self.verifier.post_proposal(verifier, body), self.config.proposal_timeout_s)
            if not isinstance(result, TransportFailure):
                self.timing.observe_verify(verifier, self._clock() - started)
                return result
            log.warning("proposal to %s lost (attempt %d): %s", verifier, attempt, result.detail)
            if attempt >= self.config.max_attempts and self._clock() - first >= self.config.retry_window_s:
                return result

    async def _resync(self, machine: DrafterSession) -> Next:
        """P1-DRF-6: read the committed tokens it lacks "with GET …/output" (D-DRF-14)."""
        misses = 0
        while True:
            start = machine.resync_start()
            read = self.verifier.get_output(machine.verifier, machine.session, start)
            result = await self._attempt(read, self.config.output_timeout_s)
            if isinstance(result, Problem):
                return machine.fail(f"GET output refused with {result.status}")
            if isinstance(result, Output):
                step = machine.on_output(result)
                if step is not Next.RESYNC:
                    return step
                if machine.resync_start() > start:
                    misses = 0
                    continue
            misses += 1
            if misses >= self.config.max_attempts:
                return machine.fail(f"no committed output from {start} after {misses} reads")
            await self._sleep(self._backoff(misses))

    # ------------------------------------------------------------------ helpers

    async def _attempt(self, call: Coroutine[Any, Any, T], timeout: float) -> T | TransportFailure:
        """One network call under a timeout; a timeout or an exception is a transport failure."""
        try:
            async with asyncio.timeout(timeout):
                return await call
        except TimeoutError:
            return TransportFailure(f"no answer within {timeout} s")
        except (OSError, CacheUnavailable) as exc:
            return TransportFailure(f"{type(exc).__name__}: {exc}")

    async def _bounded(self, call: Awaitable[T], timeout: float) -> T:
        async with asyncio.timeout(timeout):
            return await call

    def _backoff(self, k: int) -> float:
        """D-DRF-10: before retry k, ``backoff_s * 2**(k-1)``, at most ``backoff_max_s``."""
        return float(min(self.config.backoff_max_s, self.config.backoff_s * 2 ** (k - 1)))

    def lease_ms(self) -> int:
        """D-DRF-8, P1-DRF-8: at least the whole exchange, every attempt and backoff included: the attempts
        made within ``retry_window_s``, one more backoff and attempt after it, or ``max_attempts`` of them."""
        config = self.config
        attempts = config.max_attempts
        counted = attempts * config.proposal_timeout_s + sum(self._backoff(k) for k in range(1, attempts))
        windowed = config.retry_window_s + config.backoff_max_s + config.proposal_timeout_s
        return math.ceil(1000 * max(counted, windowed)) + LEASE_MARGIN_MS

    def _observe_accept(self, accepted: int, proposed: int) -> None:
        ratio = accepted / proposed
        weight = self.config.alpha_weight
        self.accept = ratio if self.accept is None else self.accept + weight * (ratio - self.accept)

    # ------------------------------------------------------------------ status

    def drafting(self) -> int:
        return sum(1 for slot in self.sessions.values() if slot.task is not None and not slot.task.done())

    def status(self) -> Status:
        """D-DRF-15: load, queue and accept_milli of this instance."""
        load = min(100, round(100 * self.drafting() / max(1, self.config.capacity)))
        accept_milli = None if self.accept is None else min(1000, max(0, round(1000 * self.accept)))
        return Status(
            instance=self.config.base_uri, role=ROLE_DRAFTER, load=load, queue=self._queued,
            ttl_ms=self.config.status_ttl_ms, accept_milli=accept_milli,
        )

    @property
    def instance_id(self) -> str:
        """P1-RTR-1: "{id} is the base64url (no padding) of the instance's base URI"."""
        return _b64url(self.config.base_uri.encode())

    async def report_status_once(self) -> None:
        status = self.status()
        for router in sorted(self.config.routers):
            try:
                await self._bounded(self.router.put_status(router, self.instance_id, status),
                                    self.config.router_timeout_s)
            except Exception as exc:  # a router may be down; the next report retries, quietly
                if router not in self._unreachable:
                    log.warning("status report to %s failed: %s; retrying every %.1f s, quietly until one gets "
                                "through (a harness's router listens only while `certify` runs)", router, exc,
                                self.status_interval_s())
                self._unreachable.add(router)
            else:
                if router in self._unreachable:
                    log.warning("status reports reach %s again", router)
                self._unreachable.discard(router)

    def status_interval_s(self) -> float:
        """§6.1: "Each instance reports status at intervals shorter than its ttl_ms" (D-DRF-15: a third)."""
        return self.config.status_ttl_ms / 3000

    async def report_status_forever(self) -> None:
        """§6.1: "Each instance reports status at intervals shorter than its ttl_ms"."""
        while True:
            await self.report_status_once()
            await self._sleep(self.status_interval_s())

    async def close(self) -> None:
        """Cancel every drafting loop and wait for them to end."""
        tasks = [slot.task for slot in self.sessions.values() if slot.task is not None]
        for slot in self.sessions.values():
            slot.machine.abandon()
        for task in tasks:
            await _cancelled(task)
        self._closed = True
        self._model_thread.shutdown(wait=False)  # a draft still running ends on its own; nothing waits for it


CANCEL_POLL_S = 0.05


async def _cancelled(task: asyncio.Task[None]) -> None:
    """Cancel ``task`` and wait until it has ended, cancelling again if a cancellation was swallowed.

    D-DRF-18: Python 3.11's ``asyncio.wait_for`` (used by libraries below us) returns the inner result when
    the inner call finishes just as the outer task is cancelled, so one ``cancel()`` can be lost and the loop
    it meant to stop runs on (a replaced assignment's old loop went on retrying, and the new assignment's
    POST waited for it). The old loop is cancelled until it is gone."""
    while not task.done():
        task.cancel()
        await asyncio.wait([task], timeout=CANCEL_POLL_S)


def _b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _token_list(blob: bytes) -> list[int]:
    """P1-MLC-2: "a token list (prompt, committed_tokens) is a CBOR array of uint"."""
    try:
        tokens = decode(blob)
    except ProtocolError as exc:
        raise ValueError(f"not CBOR: {exc}") from exc
    if not isinstance(tokens, list) or not all(
        isinstance(token, int) and not isinstance(token, bool) and token >= 0 for token in tokens
    ):
        raise ValueError("not a CBOR array of uint")
    return tokens


__all__ = ["LEASE_MARGIN_MS", "DrafterApp", "DrafterConfig"]
