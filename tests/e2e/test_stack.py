"""The whole reference stack over real TLS on loopback: output, statistics, escalation, failover.

Expectations come from the models themselves: greedy decoding run here with
the torch runtime directly (never through the verifier's code), the bigram
model's closed-form table, and the commit log read back from the cache.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import math
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pytest

from sdcp_conformance.cache.app import CacheApp
from sdcp_conformance.models.bigram import bigram_logits
from sdcp_conformance.models.checkpoint import Checkpoint
from sdcp_conformance.models.registry import load_manifest, mock_model
from sdcp_conformance.models.runtime import LlamaRuntime
from sdcp_conformance.protocol.codec import decode_sequence
from sdcp_conformance.protocol.control import Action
from sdcp_conformance.reference.client import Generation, StackClient
from sdcp_conformance.reference.contracts import stack_contract
from sdcp_conformance.reference.stack import Stack, StackOptions

pytestmark = pytest.mark.slow
T = TypeVar("T")


def checkpoint(model_id: str) -> Checkpoint:
    return Checkpoint.open(mock_model(model_id).path)


def greedy_decode(model_id: str, prompt: list[int], count: int) -> list[int]:
    """Greedy decoding by the runtime alone, argmax ties to the smallest id (§6.4 rule 1)."""
    runtime = LlamaRuntime.load(mock_model(model_id).path)
    cache = runtime.new_cache()
    row = runtime.extend(cache, prompt)[-1]
    tokens: list[int] = []
    for _ in range(count):
        tokens.append(int(np.argmax(row.double().numpy())))
        row = runtime.extend(cache, [tokens[-1]])[-1]
    return tokens


def run_with_stack(tmp_path: Path, options: StackOptions, body: Callable[[Stack, StackClient], Awaitable[T]]) -> T:
    async def scenario() -> T:
        stack = await Stack.start(tmp_path, options)
        client = StackClient(stack.uris["router"], stack.tls("client"), deadline_s=240)
        try:
            return await body(stack, client)
        finally:
            await client.aclose()
            await stack.stop()

    return asyncio.run(asyncio.wait_for(scenario(), 300))


def commit_log(stack: Stack, session: bytes) -> list[dict[str, Any]]:
    """The session's commit log as the cache holds it (the router names it, D-RTR-13)."""
    cache: CacheApp = stack.roles["cache"].app
    wanted = "/" + base64.urlsafe_b64encode(session).rstrip(b"=").decode() + "/commit-log"
    [path] = [path for path in cache.store.paths() if path.endswith(wanted)]
    stored = cache.store.get(path, now=0.0)
    assert stored is not None
    return list(decode_sequence(stored.data))


def ctx_prompt() -> tuple[list[int], list[int]]:
    prompts = load_manifest().greedy_prompts()
    first = prompts.prompts[0]
    return list(first.tokens), list(first.greedy)


@pytest.mark.parametrize("drafter", ["ctx-draft-near", "ctx-draft-far"])
def test_rule1_output_is_the_targets_greedy_decoding(tmp_path: Path, drafter: str) -> None:
    prompt, _ = ctx_prompt()
    expected = greedy_decode("ctx", prompt, 40)
    # A poor drafter must not end the session by escalation here: R is out of reach.
    contract = stack_contract(checkpoint("ctx"), [checkpoint(drafter)], rule=1, max_new=40, low_rounds=10_000,
                              fallback=[Action.REDUCE])

    async def body(stack: Stack, client: StackClient) -> Generation:
        return await client.generate(contract, prompt)

    result = run_with_stack(tmp_path, StackOptions(target="ctx", drafters=(drafter,)), body)
    assert result.tokens == expected
    assert result.finish is Action.FINISH


def test_stop_token_and_max_new_truncate_exactly(tmp_path: Path) -> None:
    prompt, _ = ctx_prompt()
    expected = greedy_decode("ctx", prompt, 30)
    stop = expected[7]  # the eighth greedy token; the output ends at its first occurrence
    cut = expected.index(stop) + 1
    with_stop = stack_contract(checkpoint("ctx"), [], rule=1, max_new=30, stop=[stop], fallback=[Action.REDUCE])
    with_limit = stack_contract(checkpoint("ctx"), [], rule=1, max_new=11, fallback=[Action.REDUCE])

    async def body(stack: Stack, client: StackClient) -> tuple[Generation, Generation]:
        return await client.generate(with_stop, prompt), await client.generate(with_limit, prompt)

    stopped, limited = run_with_stack(tmp_path, StackOptions(target="ctx", drafters=("ctx-draft-near",)), body)
    assert stopped.tokens == expected[:cut] and stopped.finish is Action.FINISH
    assert limited.tokens == expected[:11] and limited.finish is Action.FINISH


def test_rule2_output_follows_the_bigram_distribution(tmp_path: Path) -> None:
    """A simple frequency check; the full statistical oracle is another part of the project."""
    prompt = [5]
    contract = stack_contract(checkpoint("bigram"), [checkpoint("bigram-draft-near")], rule=2, max_new=300,
                              temperature_milli=1000, seed=11, fallback=[Action.REDUCE])
    sessions = [bytes([index]) * 16 for index in range(1, 5)]

    async def body(stack: Stack, client: StackClient) -> list[Generation]:
        return list(await asyncio.gather(*(client.generate(contract, prompt, session=s) for s in sessions)))

    results = run_with_stack(tmp_path, StackOptions(drafters=("bigram-draft-near",), reproducible=True), body)
    transitions: Counter[tuple[int, int]] = Counter()
    for result in results:
        assert len(result.tokens) == 300 or result.tokens[-1:] == []
        chain = prompt + result.tokens
        transitions.update(itertools.pairwise(chain))
    contexts = Counter(previous for previous, _ in transitions.elements())
    worst, statistic, bins = 0.0, 0.0, 0
    for context, n in contexts.items():
        logits = bigram_logits(context)
        p = np.exp(logits - logits.max())
        p /= p.sum()
        for token in range(len(p)):
            count = transitions[(context, token)]
            if p[token] == 0.0:
                assert count == 0, f"token {token} after {context} has probability zero"
                continue
            expected = n * p[token]
            if expected < 5:  # too rare for a normal approximation: a loose Poisson bound
                assert count <= expected + 6 * math.sqrt(expected) + 6, (context, token, count, expected)
                continue
            z = (count - expected) / math.sqrt(expected * (1 - p[token]))
            worst = max(worst, abs(z))
            statistic += (count - expected) ** 2 / expected
            bins += 1
    assert worst < 6, f"a bin is {worst:.1f} standard deviations off"
    assert bins > 0 and (statistic - bins) / math.sqrt(2 * bins) < 5


def test_seeded_runs_repeat_exactly(tmp_path: Path) -> None:
    contract = stack_contract(checkpoint("bigram"), [checkpoint("bigram-draft-near")], rule=2, max_new=60,
                              temperature_milli=800, seed=123456789, fallback=[Action.REDUCE])
    session = bytes(range(16))
    options = StackOptions(drafters=("bigram-draft-near",), reproducible=True, seed=3)

    async def body(stack: Stack, client: StackClient) -> list[int]:
        return (await client.generate(contract, [7, 8], session=session)).tokens

    first = run_with_stack(tmp_path / "a", options, body)
    second = run_with_stack(tmp_path / "b", options, body)
    assert first == second and len(first) == 60


def test_escalation_reduce_switch_self_decode_and_fail(tmp_path: Path) -> None:
    """A poor drafter makes every round low: the fallback list is walked to its end (§6.5.2)."""
    prompt, _ = ctx_prompt()
    contract = stack_contract(
        checkpoint("ctx"), [], rule=1, max_new=200, low_ratio=100, low_rounds=1,
        fallback=[Action.REDUCE, Action.SWITCH, Action.SELF_DECODE, Action.FAIL], self_load=50, self_max=3,
    )
    options = StackOptions(target="ctx", drafters=("ctx-draft-far", "ctx-draft-far"), pinned_load=10)

    async def body(stack: Stack, client: StackClient) -> tuple[Generation, list[Any], list[Action]]:
        result = await client.generate(contract, prompt)
        verdicts = stack.roles["verifier-1"].app.sessions[result.session].machine.verdicts()
        received = stack.roles["router"].server.handler.events
        # The fail event is posted after the final output is readable: poll for it with a deadline.
        deadline = asyncio.get_running_loop().time() + 20
        while not any(event.kind is Action.FAIL for event in received):
            assert asyncio.get_running_loop().time() < deadline, "the fail event never reached the router"
            await asyncio.sleep(0.05)
        return result, [verdicts[r] for r in sorted(verdicts)], [event.kind for event in received]

    result, verdicts, events = run_with_stack(tmp_path, options, body)
    actions = [verdict.action for verdict in verdicts]
    escalations = [action for action in actions if action is not Action.CONTINUE]
    assert escalations[:3] == [Action.REDUCE, Action.SWITCH, Action.SELF_DECODE]
    assert escalations[-1] is Action.FAIL and result.finish is Action.FAIL
    reduced_at = actions.index(Action.REDUCE)
    cap_before = verdicts[reduced_at - 1].m_cap if reduced_at else options.m_init  # P1-CTL-1: m_init at first
    assert verdicts[reduced_at].m_cap == max(1, cap_before // 2)
    assert [int(kind) for kind in events] == [2, 3, 0, 5]
    greedy = greedy_decode("ctx", prompt, len(result.tokens))
    assert result.tokens == greedy  # every path commits the target's greedy tokens


def test_killed_verifier_is_fenced_and_the_session_resumes_elsewhere(tmp_path: Path) -> None:
    prompt, _ = ctx_prompt()
    total = 120
    contract = stack_contract(checkpoint("ctx"), [], rule=1, max_new=total, m_max=2, fallback=[Action.REDUCE])
    options = StackOptions(target="ctx", drafters=("ctx-draft-near",), verifiers=2, verifier_processes=True)
    seen = asyncio.Event()

    async def body(stack: Stack, client: StackClient) -> tuple[Generation, list[dict[str, Any]]]:
        killed: list[str] = []

        def on_tokens(fresh: list[int]) -> None:
            seen.set()

        async def kill_serving_verifier() -> None:
            await seen.wait()
            serving = next(iter(stack.roles["router"].app.sessions.values())).machine.verifier
            name = next(name for name, uri in stack.uris.items() if uri == serving)
            killed.append(name)
            await stack.kill(name)

        killer = asyncio.create_task(kill_serving_verifier())
        result = await client.generate(contract, prompt, on_tokens)
        await killer
        return result, commit_log(stack, result.session)

    result, log = run_with_stack(tmp_path, options, body)
    assert result.tokens == greedy_decode("ctx", prompt, total)
    assert len(set(result.verifiers)) == 2 and max(result.epochs) == 2
    fences = [index for index, record in enumerate(log) if set(record) == {"epoch"}]
    assert len(fences) == 1 and log[fences[0]]["epoch"] == 2
    live = [record for record in log if "round" in record and not _after_higher_fence(log, record)]
    assert [record["round"] for record in live] == list(range(1, len(live) + 1))
    assert [token for record in live for token in record["emitted"]] == result.tokens


def _after_higher_fence(log: list[dict[str, Any]], record: dict[str, Any]) -> bool:
    position = log.index(record)
    return any(set(earlier) == {"epoch"} and earlier["epoch"] > record["epoch"] for earlier in log[:position])


def test_killed_drafter_is_replaced(tmp_path: Path) -> None:
    prompt, _ = ctx_prompt()
    total = 80
    contract = stack_contract(checkpoint("ctx"), [], rule=1, max_new=total, m_max=2, fallback=[Action.REDUCE])
    seen = asyncio.Event()

    async def body(stack: Stack, client: StackClient) -> tuple[Generation, str, str]:
        drafters: list[str] = []

        async def kill_serving_drafter() -> None:
            await seen.wait()
            machine = next(iter(stack.roles["router"].app.sessions.values())).machine
            drafters.append(machine.drafter or "")
            await stack.kill(next(name for name, uri in stack.uris.items() if uri == machine.drafter))
            # The replacement is whichever drafter the router assigns next (it is dropped again at finish).
            deadline = asyncio.get_running_loop().time() + 60
            while machine.drafter in (None, drafters[0]) and not machine.ended:
                assert asyncio.get_running_loop().time() < deadline, "the killed drafter was never replaced"
                await asyncio.sleep(0.02)
            drafters.append(machine.drafter or machine.previous_drafter or "")

        killer = asyncio.create_task(kill_serving_drafter())
        result = await client.generate(contract, prompt, lambda fresh: seen.set())
        await killer
        return result, drafters[0], drafters[-1]

    options = StackOptions(target="ctx", drafters=("ctx-draft-near", "ctx-draft-near"))
    result, first, last = run_with_stack(tmp_path, options, body)
    assert result.tokens == greedy_decode("ctx", prompt, total)
    assert first != last
