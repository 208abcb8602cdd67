"""The reference drafter's handler and drafting loop against in-memory fakes.

The loop is driven by a scripted verifier: each proposal is handed to the test
through a queue and answered when the test says so, so nothing waits on a
timer. Digests, expected rows and greedy decodings are computed here.
"""

from __future__ import annotations

import asyncio
import json
import math
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from sdcp_conformance.protocol.codec import encode
from sdcp_conformance.protocol.messages import Output, Proposal, SessionState, Status, Verdict
from sdcp_conformance.protocol.problems import ProblemType
from sdcp_conformance.reference.drafter.app import DrafterApp, DrafterConfig
from sdcp_conformance.reference.drafter.drafting import LogitsDraftModel
from sdcp_conformance.reference.drafter.ports import (
    CacheUnavailable,
    OutputResult,
    Problem,
    ProposalResult,
    TransportFailure,
)
from sdcp_conformance.transport.types import Request
from tests.reference.async_tests import async_test
from tests.reference.digests import chain, prefix_digest
from tests.reference.parties import SESSION, TOKENIZER, b64url, party

V = 8
ME = party("drafter")
ROUTER = party("router-a")
ROUTER_B = party("router-b")
VERIFIER = party("v")
CACHE = party("c")
MODEL = bytes([7]) * 32
PROMPT = [3, 1, 4]


def draft_next(context: Sequence[int]) -> int:
    return (3 * sum(context) + 1) % V


def target_next(context: Sequence[int]) -> int:
    """Agrees with the draft model except after every fourth context length."""
    guess = draft_next(context)
    return (guess + 1) % V if len(context) % 4 == 0 else guess


def draft_logits(context: Sequence[int]) -> np.ndarray:
    row = np.array([-0.3 * ((token - draft_next(context)) % V) for token in range(V)])
    return row


def contract(**changes: Any) -> dict[str, Any]:
    return {
        "target": bytes([1]) * 32, "tokenizer": TOKENIZER, "rule": 1, "m_max": 5, "max_new": 14, "stop": [],
        "low_rounds": 2, "fallback": [1, 2],
    } | changes


def d0(contract_obj: dict[str, Any]) -> bytes:
    return prefix_digest(contract_obj, PROMPT)


class FakeCache:
    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}
        self.puts: list[tuple[str, int]] = []
        self.deleted: list[str] = []
        self.failing_puts = 0

    async def put(self, uri: str, body: bytes, lease_ms: int) -> None:
        if self.failing_puts:
            self.failing_puts -= 1
            raise CacheUnavailable("503")
        self.objects[uri] = body
        self.puts.append((uri, lease_ms))

    async def get(self, uri: str) -> bytes:
        if uri not in self.objects:
            raise CacheUnavailable(f"404 {uri}")
        return self.objects[uri]

    async def delete(self, uri: str) -> None:
        self.deleted.append(uri)
        self.objects.pop(uri, None)


class FakeRouter:
    def __init__(self) -> None:
        self.reports: list[tuple[str, str, Status]] = []

    async def put_status(self, router: str, instance_id: str, status: Status) -> None:
        self.reports.append((router, instance_id, status))


Call = tuple[Proposal, bytes, "asyncio.Future[ProposalResult]"]


class ScriptedVerifier:
    """Hands every proposal to the test and answers with what the test sets on its future."""

    def __init__(self) -> None:
        self.calls: asyncio.Queue[Call] = asyncio.Queue()
        self.bodies: list[bytes] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.outputs: dict[int, OutputResult] = {}
        self.output_reads: list[int] = []

    async def post_proposal(self, verifier: str, body: bytes) -> ProposalResult:
        assert verifier == VERIFIER
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            future: asyncio.Future[ProposalResult] = asyncio.get_running_loop().create_future()
            self.bodies.append(body)
            await self.calls.put((Proposal.from_cbor(body), body, future))
            return await future
        finally:
            self.in_flight -= 1

    async def get_output(self, verifier: str, session: bytes, start: int) -> OutputResult:
        self.output_reads.append(start)
        return self.outputs.get(start, TransportFailure("no such output"))

    async def next(self) -> Call:
        return await asyncio.wait_for(self.calls.get(), 10)


class GreedyVerifier:
    """A tiny independent rule-1 verifier over ``target_next`` that records every proposal and its limit."""

    def __init__(self, contract_obj: dict[str, Any], m_init: int) -> None:
        self.contract = contract_obj
        self.output: list[int] = []
        self.round = 0
        self.limit = min(contract_obj["m_max"], m_init)
        self.seen: list[tuple[Proposal, int]] = []
        self.errors: list[str] = []
        self.in_flight = 0
        self.max_in_flight = 0

    async def post_proposal(self, verifier: str, body: bytes) -> ProposalResult:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(0)  # let anything else that wants to run, run
            return self._verdict(Proposal.from_cbor(body))
        finally:
            self.in_flight -= 1

    def _verdict(self, proposal: Proposal) -> Verdict:
        self.seen.append((proposal, self.limit))
        digest = chain(d0(self.contract), self.output)
        if (proposal.base, proposal.base_digest, proposal.round) != (len(self.output), digest, self.round + 1):
            self.errors.append(f"stale proposal {proposal}")
        if len(proposal.tokens) > self.limit:
            self.errors.append(f"M {len(proposal.tokens)} over {self.limit}")
        context, accepted = [*PROMPT, *self.output], 0
        for token in proposal.tokens:
            if token != target_next(context):
                break
            context.append(token)
            accepted += 1
        emitted = [*proposal.tokens[:accepted], target_next(context)]
        emitted = emitted[: self.contract["max_new"] - len(self.output)]
        self.output += emitted
        self.round += 1
        self.limit = max(1, accepted) if accepted < len(proposal.tokens) else min(5, self.limit + 1)
        finished = len(self.output) >= self.contract["max_new"]
        return Verdict(session=SESSION, epoch=1, round=self.round, accepted=accepted, emitted=tuple(emitted),
                       committed=len(self.output), digest=chain(d0(self.contract), self.output),
                       action=4 if finished else 0, m_cap=self.limit, low=0, load=0)  # type: ignore[arg-type]

    async def get_output(self, verifier: str, session: bytes, start: int) -> OutputResult:
        return TransportFailure("not used")


class Harness:
    def __init__(self, verifier: Any = None, model: Any = None, **config: Any) -> None:
        self.cache, self.router = FakeCache(), FakeRouter()
        self.verifier = verifier if verifier is not None else ScriptedVerifier()
        self.sleeps: list[float] = []
        if model is None:
            model = LogitsDraftModel(draft_logits, vocab_size=V, model_sha256=MODEL, tokenizer_sha256=TOKENIZER)
        settings = {"seed": 7, "t_draft_prior_s": 0.0} | config
        self.app = DrafterApp(
            DrafterConfig(base_uri=ME, routers=frozenset({ROUTER, ROUTER_B}), cache_base=CACHE, **settings),
            model, self.cache, self.verifier, self.router, clock=lambda: 0.0, sleep=self.sleep,
        )

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)

    async def assign(self, peer: str = ROUTER, committed: Sequence[int] = (), body: Any = None,
                     **changes: Any) -> tuple[int, Any]:
        if body is None:
            contract_obj = changes.pop("contract", contract())
            body = encode({
                "session": SESSION, "epoch": 1, "contract": contract_obj, "verifier": VERIFIER, "drafter": ME,
                "prompt": PROMPT, "round": 0, "committed": len(committed),
                "digest": chain(d0(contract_obj), committed), "m_init": 3,
            } | changes)
        response = await self.app(Request("POST", "/drafter/assignments", "", (), body, peer))
        payload = json.loads(response.body) if response.body else None
        return response.status, payload

    async def finished(self) -> None:
        task = self.app.sessions[SESSION].task
        assert task is not None
        await asyncio.wait_for(task, 10)

    async def answer_last(self, answer: asyncio.Future[Any], result: Any) -> None:
        """Answer the last call the loop waits on with ``result``, then wait for the loop to end."""
        answer.set_result(result)
        await self.finished()


def verdict_for(proposal: Proposal, output: Sequence[int], emitted: Sequence[int], accepted: int,
                contract_obj: dict[str, Any] | None = None, **changes: Any) -> Verdict:
    """A verdict for ``proposal`` whose prefix before it was ``output``."""
    contract_obj = contract_obj or contract()
    obj = {
        "session": SESSION, "epoch": proposal.epoch, "round": proposal.round, "accepted": accepted,
        "emitted": list(emitted), "committed": len(output) + len(emitted),
        "digest": chain(d0(contract_obj), [*output, *emitted]), "action": 0, "m_cap": 3, "low": 0, "load": 0,
    }
    return Verdict.from_obj(obj | changes)


# ---------------------------------------------------------------------- POST assignments


@async_test
async def test_assignment_from_a_non_router_is_refused_before_parsing() -> None:
    h = Harness()
    status, problem = await h.assign(peer=VERIFIER, body=b"\xff not cbor")
    assert status == 403 and problem["type"].endswith("sdcp-not-assigned")
    assert h.app.sessions == {}


@pytest.mark.parametrize(
    ("changes", "status", "suffix"),
    [
        ({"m_init": 0}, 400, "sdcp-bad-message"),
        ({"contract": contract(drafters=[bytes(32)])}, 422, "sdcp-bad-contract"),
        ({"contract": contract(tokenizer=bytes(32))}, 422, "sdcp-bad-contract"),
        ({"contract": contract(extra=1)}, 422, "sdcp-bad-contract"),
        ({"digest": bytes(32)}, 400, "sdcp-bad-message"),
        ({"prompt": "https://127.0.0.1:1/c/missing"}, 400, "sdcp-bad-message"),
    ],
)
@async_test
async def test_assignment_refusals(changes: dict[str, Any], status: int, suffix: str) -> None:
    h = Harness()
    got, problem = await h.assign(**changes)
    assert got == status and problem["type"].endswith(suffix), problem
    assert h.app.sessions == {}


OTHER_MODEL = bytes([9]) * 32


def other_next(context: Sequence[int]) -> int:
    """A second draft model's greedy token: never ``draft_next``'s."""
    return (draft_next(context) + 3) % V


def other_logits(context: Sequence[int]) -> np.ndarray:
    return np.array([-0.3 * ((token - other_next(context)) % V) for token in range(V)])


@pytest.mark.parametrize(("drafters", "drafts"), [
    ([OTHER_MODEL], other_next), ([MODEL, OTHER_MODEL], draft_next), (None, draft_next)])
@async_test
async def test_a_drafter_serving_two_models_drafts_with_the_one_the_contract_permits(drafters: list[bytes] | None,
                                                                               drafts: Any) -> None:
    """D-DRF-20: the first served model the contract's drafters list names (the first served one without a list)."""
    models = [LogitsDraftModel(draft_logits, vocab_size=V, model_sha256=MODEL, tokenizer_sha256=TOKENIZER),
              LogitsDraftModel(other_logits, vocab_size=V, model_sha256=OTHER_MODEL, tokenizer_sha256=TOKENIZER)]
    h = Harness(model=models)
    listed = contract() if drafters is None else contract(drafters=drafters)
    assert (await h.assign(contract=listed))[0] == 204
    proposal, _, future = await h.verifier.next()
    context, expected = list(PROMPT), []
    for _ in proposal.tokens:
        expected.append(drafts(context))
        context.append(expected[-1])
    assert list(proposal.tokens) == expected
    await h.answer_last(future, Problem(ProblemType.SESSION_CLOSED, 410, None, "done"))
    refused, problem = await h.assign(contract=contract(drafters=[bytes(32)]), epoch=2)
    assert refused == 422 and problem["type"].endswith("sdcp-bad-contract")  # P1-DRF-3: neither model listed


@async_test
async def test_other_paths_and_methods() -> None:
    h = Harness()
    assert (await h.app(Request("POST", "/drafter/proposals", "", (), b"", ROUTER))).status == 404
    assert (await h.app(Request("GET", "/drafter/assignments", "", (), b"", ROUTER))).status == 405
    assert (await h.assign(body=b"\xa0"))[0] == 400


# ---------------------------------------------------------------------- the loop, rule 1


@async_test
async def test_rule1_session_runs_to_finish_with_one_proposal_at_a_time() -> None:
    contract_obj = contract()
    verifier = GreedyVerifier(contract_obj, m_init=3)
    h = Harness(verifier)
    assert (await h.assign())[0] == 204
    await h.finished()
    expected, context = [], list(PROMPT)
    for _ in range(contract_obj["max_new"]):
        expected.append(target_next(context))
        context.append(expected[-1])
    assert verifier.output == expected and verifier.errors == []
    assert h.app.sessions[SESSION].machine.output == expected
    assert verifier.max_in_flight == 1  # §6.2: never two outstanding proposals
    for proposal, limit in verifier.seen:
        # t_d = 0 makes §6.2's rule take the whole limit, capped by the max_new budget (D-DRF-7).
        assert len(proposal.tokens) == min(limit, max(1, contract_obj["max_new"] - proposal.base - 1))
        assert proposal.q_rows is None  # P1-DRF-4
        context = [*PROMPT, *verifier.output[: proposal.base]]
        drafted = []
        for _ in proposal.tokens:
            drafted.append(draft_next(context))
            context.append(drafted[-1])
        assert list(proposal.tokens) == drafted
    assert h.cache.puts == []


@async_test
async def test_lost_verdicts_are_retried_with_the_identical_body() -> None:
    h = Harness()
    await h.assign()
    first, body, answer = await h.verifier.next()
    answer.set_result(TransportFailure("503 Service Unavailable", 503))
    _second, body2, answer2 = await h.verifier.next()
    answer2.set_result(TransportFailure("429 Too Many Requests", 429))
    _third, body3, answer3 = await h.verifier.next()
    assert body == body2 == body3  # P1-DRF-5: "retried with the identical body"
    assert h.sleeps == [0.05, 0.1]  # D-DRF-10 backoff
    await h.answer_last(answer3, verdict_for(first, [], [first.tokens[0]], 1, action=4))
    assert h.verifier.calls.empty() and h.verifier.max_in_flight == 1


@async_test
async def test_a_verdict_that_times_out_is_retried() -> None:
    h = Harness(proposal_timeout_s=0.05)
    await h.assign()
    first, body, never_answered = await h.verifier.next()
    _second, body2, answer = await h.verifier.next()
    assert body == body2 and never_answered.cancelled()
    await h.answer_last(answer, verdict_for(first, [], [1], 0, action=4))


@async_test
async def test_exhausted_retries_stop_the_session() -> None:
    h = Harness(max_attempts=3, retry_window_s=0.0)
    await h.assign()
    for _ in range(3):
        _, _, answer = await h.verifier.next()
        answer.set_result(TransportFailure("502", 502))
    await h.finished()
    assert h.app.sessions[SESSION].machine.stopped is not None and h.verifier.calls.empty()


@pytest.mark.parametrize("action", [2, 3, 5, 9])
@async_test
async def test_switch_self_decode_fail_and_unknown_actions_stop_proposing(action: int) -> None:
    h = Harness()
    await h.assign()
    proposal, _, answer = await h.verifier.next()
    await h.answer_last(answer, verdict_for(proposal, [], [proposal.tokens[0]], 1, action=action))
    assert h.verifier.calls.empty() and len(h.verifier.bodies) == 1


@pytest.mark.parametrize("problem", [ProblemType.STALE_EPOCH, ProblemType.NOT_ASSIGNED, ProblemType.SESSION_CLOSED])
@async_test
async def test_final_problems_stop_proposing(problem: ProblemType) -> None:
    h = Harness()
    await h.assign()
    _, _, answer = await h.verifier.next()
    await h.answer_last(answer, Problem(problem, problem.status))
    assert len(h.verifier.bodies) == 1


@async_test
async def test_stale_base_resyncs_from_the_verifiers_output() -> None:
    h = Harness()
    await h.assign()
    _, _, answer = await h.verifier.next()
    committed = [5, 6, 7]
    state = SessionState(session=SESSION, epoch=1, round=2, committed=3, digest=chain(d0(contract()), committed))
    h.verifier.outputs[0] = Output(session=SESSION, epoch=1, tokens=tuple(committed), final=False, from_=0)
    answer.set_result(Problem(ProblemType.STALE_BASE, 409, state))
    proposal, _, answer = await h.verifier.next()
    assert h.verifier.output_reads == [0]
    assert (proposal.round, proposal.base, proposal.base_digest) == (3, 3, state.digest)
    assert proposal.tokens[0] == draft_next([*PROMPT, *committed])
    await h.answer_last(answer, verdict_for(proposal, committed, [1], 0, action=4))


@async_test
async def test_resync_refuses_forged_output() -> None:
    h = Harness()
    await h.assign()
    _, _, answer = await h.verifier.next()
    state = SessionState(session=SESSION, epoch=1, round=2, committed=3, digest=chain(d0(contract()), [5, 6, 7]))
    h.verifier.outputs[0] = Output(session=SESSION, epoch=1, tokens=(5, 6, 0), final=False, from_=0)
    await h.answer_last(answer, Problem(ProblemType.STALE_BASE, 409, state))
    machine = h.app.sessions[SESSION].machine
    assert machine.stopped is not None and machine.output == [] and len(h.verifier.bodies) == 1


@async_test
async def test_assignment_without_committed_tokens_reads_them_first() -> None:
    h = Harness()
    committed = [2, 2]
    h.verifier.outputs[0] = Output(session=SESSION, epoch=1, tokens=tuple(committed), final=False, from_=0)
    assert (await h.assign(committed=committed, round=2))[0] == 204  # D-DRF-4
    proposal, _, answer = await h.verifier.next()
    assert h.verifier.output_reads == [0] and (proposal.base, proposal.round) == (2, 3)
    await h.answer_last(answer, verdict_for(proposal, committed, [1], 0, action=4))


@async_test
async def test_committed_tokens_and_prompt_are_read_from_the_cache() -> None:
    h = Harness()
    committed = [2, 5]
    h.cache.objects[CACHE + "prompt"] = encode(PROMPT)
    h.cache.objects[CACHE + "done"] = encode(committed)
    status, _ = await h.assign(committed=committed, prompt=CACHE + "prompt", committed_tokens=CACHE + "done")
    assert status == 204
    proposal, _, answer = await h.verifier.next()
    assert h.verifier.output_reads == [] and proposal.base == 2
    assert proposal.tokens[0] == draft_next([*PROMPT, *committed])
    await h.answer_last(answer, verdict_for(proposal, committed, [1], 0, action=4))


# ---------------------------------------------------------------------- rule 2 and q_rows


def expected_rows(context: Sequence[int], tokens: Sequence[int]) -> np.ndarray:
    """Softmax (temperature 1) of the draft logits, position by position, as binary32."""
    rows, ctx = [], list(context)
    for token in tokens:
        logits = draft_logits(ctx)
        weights = [math.exp(value - max(logits)) for value in logits]
        rows.append([w / sum(weights) for w in weights])
        ctx.append(token)
    return np.array(rows, dtype=np.float32)


@async_test
async def test_rule2_publishes_q_rows_under_a_lease_and_deletes_them_after_the_verdict() -> None:
    h = Harness()
    rule2 = contract(rule=2)
    await h.assign(contract=rule2)
    proposal, _, answer = await h.verifier.next()
    uri = proposal.q_rows
    assert uri is not None and uri.startswith(CACHE) and len(proposal.tokens) == 3
    rows = np.frombuffer(h.cache.objects[uri], dtype="<f4").reshape(len(proposal.tokens), V)
    np.testing.assert_allclose(rows, expected_rows(PROMPT, proposal.tokens), rtol=2e-7)
    assert all(rows[i, token] > 0 for i, token in enumerate(proposal.tokens))
    lease = dict(h.cache.puts)[uri]
    assert lease == h.app.lease_ms() and lease >= 1000 * h.app.config.proposal_timeout_s  # P1-DRF-8
    emitted = [proposal.tokens[0], 0]
    answer.set_result(verdict_for(proposal, [], emitted, 1, contract_obj=rule2, m_cap=2))
    second, _, answer = await h.verifier.next()
    assert h.cache.deleted == [uri] and uri not in h.cache.objects  # P1-DRF-8
    assert (second.round, second.base, len(second.tokens)) == (2, 2, 2) and second.q_rows != uri
    await h.answer_last(answer, verdict_for(second, emitted, [1], 0, contract_obj=rule2, action=4))
    assert h.cache.deleted == [uri, second.q_rows] and h.cache.objects == {}


@async_test
async def test_q_unavailable_redrafts_and_publishes_again_for_the_same_round() -> None:
    h = Harness()
    await h.assign(contract=contract(rule=2))
    first, _, answer = await h.verifier.next()
    answer.set_result(Problem(ProblemType.Q_UNAVAILABLE, 409))
    second, _, answer = await h.verifier.next()
    assert second.round == first.round == 1 and second.q_rows != first.q_rows
    assert h.cache.deleted == [first.q_rows] and h.sleeps == [0.05]  # D-DRF-12
    await h.answer_last(answer, Problem(ProblemType.SESSION_CLOSED, 410))


@async_test
async def test_a_failed_q_rows_write_is_retried() -> None:
    h = Harness()
    h.cache.failing_puts = 1
    await h.assign(contract=contract(rule=2))
    proposal, _, answer = await h.verifier.next()
    assert proposal.q_rows in h.cache.objects and h.sleeps == [0.05]
    await h.answer_last(answer, Problem(ProblemType.SESSION_CLOSED, 410))


# ---------------------------------------------------------------------- reassignment, status, close


@async_test
async def test_a_higher_epoch_replaces_the_loop_and_a_lower_one_is_stale() -> None:
    h = Harness()
    await h.assign()
    old_task = h.app.sessions[SESSION].task
    _first, _, pending = await h.verifier.next()
    assert (await h.assign(epoch=2))[0] == 204  # P1-DRF-7
    assert old_task is not None and old_task.done() and pending.cancelled()
    second, _, answer = await h.verifier.next()
    assert second.epoch == 2 and second.round == 1 and h.verifier.max_in_flight == 1
    status, problem = await h.assign(epoch=1)
    assert status == 409 and problem["type"].endswith("sdcp-stale-epoch")
    await h.answer_last(answer, verdict_for(second, [], [1], 0, action=4))


class ThreadConfinedModel(LogitsDraftModel):
    """A draft model that, like the torch runtime, must be called by one thread at a time: it counts the calls
    running at once (draft and forget), and its first draft blocks until the test releases it."""

    def __init__(self) -> None:
        super().__init__(draft_logits, vocab_size=V, model_sha256=MODEL, tokenizer_sha256=TOKENIZER)
        self.entered, self.release, self.overlapped = threading.Event(), threading.Event(), threading.Event()
        self._lock = threading.Lock()
        self.running = self.most_at_once = self.drafts = 0
        self.forgets: list[bytes] = []

    def _enter(self) -> None:
        with self._lock:
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
            if self.running > 1:
                self.overlapped.set()

    def _leave(self) -> None:
        with self._lock:
            self.running -= 1

    def draft(self, *args: Any) -> Any:
        self._enter()
        try:
            self.drafts += 1
            if self.drafts == 1:
                self.entered.set()
                assert self.release.wait(10), "the test never released the first draft"
            return super().draft(*args)
        finally:
            self._leave()

    def forget(self, session_key: bytes) -> None:
        self._enter()
        try:
            self.forgets.append(session_key)
        finally:
            self._leave()


@async_test
async def test_a_replaced_loops_draft_still_running_keeps_the_model_to_itself() -> None:
    """D-DRF-19: the new assignment cancels the old loop while its draft runs on the model's thread; the new
    loop's draft and the old loop's forget wait for that draft to end, and the new loop proposes."""
    model = ThreadConfinedModel()
    h = Harness(model=model)
    await h.assign()
    assert await asyncio.to_thread(model.entered.wait, 10)  # the first loop's draft is on the model
    assert (await h.assign(epoch=2))[0] == 204  # P1-DRF-7: cancels the first loop, its draft runs on
    for _ in range(1000):  # until the new loop has asked for its draft (D-DRF-15: queue counts it)
        if h.app.status().queue:
            break
        await asyncio.sleep(0)
    assert h.app.status().queue == 1
    # Nothing may enter the model beside the blocked draft: the new loop's draft and the old one's forget
    # wait (before D-DRF-19 both entered within milliseconds).
    assert not await asyncio.to_thread(model.overlapped.wait, 0.5), "a model call ran beside the old draft"
    assert model.drafts == 1 and model.forgets == []
    model.release.set()
    proposal, _, answer = await h.verifier.next()
    assert proposal.epoch == 2 and proposal.round == 1
    assert model.most_at_once == 1 and model.forgets == [SESSION]
    await h.answer_last(answer, verdict_for(proposal, [], [1], 0, action=4))


@async_test
async def test_status_reports_to_every_router() -> None:
    h = Harness(capacity=4, status_ttl_ms=900)
    await h.assign()
    proposal, _, answer = await h.verifier.next()
    await h.app.report_status_once()
    instance = b64url(ME.encode())
    assert sorted(router for router, _, _ in h.router.reports) == [ROUTER, ROUTER_B]
    for _, instance_id, status in h.router.reports:
        assert instance_id == instance  # P1-RTR-1
        assert (status.instance, status.role, status.load, status.queue, status.ttl_ms) == (ME, 1, 25, 0, 900)
        assert status.accept_milli is None
    answer.set_result(verdict_for(proposal, [], [proposal.tokens[0], 0], 1))  # a/M = 1/3
    second, _, answer = await h.verifier.next()
    assert second.status.accept_milli == 333
    await h.answer_last(answer, verdict_for(second, [proposal.tokens[0], 0], [1], 0, action=4))
    h.router.reports.clear()
    await h.app.report_status_once()
    assert {status.load for _, _, status in h.router.reports} == {0}


@async_test
async def test_close_cancels_every_loop() -> None:
    h = Harness()
    await h.assign()
    _, _, pending = await h.verifier.next()
    await h.app.close()
    task = h.app.sessions[SESSION].task
    assert task is not None and task.done() and pending.cancelled()
