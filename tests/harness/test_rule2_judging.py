"""Where the rule-2 tests run: a worker process or inline, with the same decisions, and never a hang.

The worker process is a real one (``python -m sdcp_conformance.harness.rule2_judging``); its results are
compared with the inline host's on the same rounds, and with the e-process fed directly. A worker that dies
fails the waiting call at once; closing the host ends the process.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal

import pytest

from sdcp_conformance.harness.rule2_judging import (
    JUDGE_ENV,
    InlineJudgeHost,
    JudgeHost,
    JudgeHostError,
    ProcessJudgeHost,
    Rule2Feed,
    judge_mode,
    new_judge_host,
)
from sdcp_conformance.oracle.rule2_judge import JudgedRound
from sdcp_conformance.oracle.rule2_trace import TracedEProcess
from tests.oracle.test_rule2_judge import _fed_directly, _rounds, _same_test

WIDTH = 6


def _puts(rounds: list[JudgedRound]) -> list[tuple[int, int, JudgedRound]]:
    """The rounds as (wave, slot, round) in a shuffled arrival order, each wave's slots out of order."""
    placed = [(index // WIDTH, index % WIDTH, judged) for index, judged in enumerate(rounds)]
    shuffled = placed[:]
    random.Random(3).shuffle(shuffled)
    # keep arrivals at most one wave ahead of the slowest lane, as lanes are
    shuffled.sort(key=lambda item: item[0])
    for wave in range(len(rounds) // WIDTH + 1):
        members = [item for item in shuffled if item[0] == wave]
        random.Random(wave).shuffle(members)
        shuffled = [item for item in shuffled if item[0] != wave] + members
    return shuffled


async def _judge_through(host: JudgeHost, rounds: list[JudgedRound]) -> tuple[TracedEProcess, int]:
    feed = Rule2Feed(host, "case#1", WIDTH)
    await feed.open(1e-3, 0.25)
    for wave, slot, judged in _puts(rounds):
        feed.put(wave, slot, judged)
        await asyncio.sleep(0)  # let a batch go out now and then, as verdicts arriving do
    return await feed.finish()


@pytest.mark.parametrize(("name", "engine"), [("plus-minus", None), ("mode-boost", "rule2-residual-softmax")])
def test_a_worker_process_decides_as_the_inline_host_and_the_direct_e_process(name: str, engine: str | None) -> None:
    rounds = _rounds(name, engine, seed=4, count=60)
    expected, judged = _fed_directly(rounds, 1e-3, 0.25)

    async def both() -> tuple[tuple[TracedEProcess, int], tuple[TracedEProcess, int]]:
        process, inline = ProcessJudgeHost(), InlineJudgeHost()
        try:
            return await _judge_through(process, rounds), await _judge_through(inline, rounds)
        finally:
            await process.aclose()
            await inline.aclose()

    (from_process, judged_process), (from_inline, judged_inline) = asyncio.run(both())
    assert judged_process == judged_inline == judged
    _same_test(from_process, expected)
    _same_test(from_inline, expected)


def test_rounds_arriving_out_of_order_are_fed_in_wave_and_slot_order() -> None:
    rounds = _rounds("plus-minus", None, seed=6, count=24)
    expected, _ = _fed_directly(rounds, 1e-3, 0.25)
    test, judged = asyncio.run(_judge_through(InlineJudgeHost(), rounds))
    assert judged == 24
    _same_test(test, expected)
    reordered, _ = _fed_directly([rounds[1], rounds[0], *rounds[2:]], 1e-3, 0.25)
    assert reordered.trace() != expected.trace()  # the order matters, so the check above can fail


def test_a_worker_that_dies_fails_the_waiting_call_at_once() -> None:
    rounds = _rounds("plus-minus", None, seed=6, count=6)

    async def scenario() -> None:
        host = ProcessJudgeHost()
        try:
            await host.call("open", "k", 1e-3, 0.5)
            process = host._process
            assert process is not None
            os.kill(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
            with pytest.raises(JudgeHostError, match=r"ended \(exit status -9\) before 'feed'"):
                await asyncio.wait_for(host.call("feed", "k", rounds), timeout=30)
            # The next call gets a fresh worker, which knows no judge "k": the case that owned it errs.
            with pytest.raises(JudgeHostError, match="KeyError"):
                await asyncio.wait_for(host.call("feed", "k", rounds), timeout=60)
        finally:
            await host.aclose()

    asyncio.run(scenario())


def test_closing_the_host_ends_the_worker_process() -> None:
    async def scenario() -> int:
        host = ProcessJudgeHost()
        await host.call("open", "k", 1e-3, 0.5)
        process = host._process
        assert process is not None and process.poll() is None
        await host.aclose()
        with pytest.raises(JudgeHostError, match="closed"):
            await host.call("close", "k")
        return process.wait(timeout=10)

    assert asyncio.run(scenario()) == 0  # it left its loop when told to, it was not killed


def test_the_mode_follows_the_environment_then_the_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(JUDGE_ENV, "inline")
    assert judge_mode() == "inline" and isinstance(new_judge_host(), InlineJudgeHost)
    monkeypatch.setenv(JUDGE_ENV, "Process")
    assert judge_mode() == "process"
    monkeypatch.setenv(JUDGE_ENV, "threads")
    with pytest.raises(JudgeHostError, match="'process' or 'inline'"):
        judge_mode()
    monkeypatch.delenv(JUDGE_ENV)
    monkeypatch.setattr("sdcp_conformance.harness.rule2_judging.available_cpus", lambda: 1)
    assert judge_mode() == "inline"
    monkeypatch.setattr("sdcp_conformance.harness.rule2_judging.available_cpus", lambda: 2)
    assert judge_mode() == "process"


def test_closing_the_host_kills_a_worker_that_hangs_instead_of_waiting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sdcp_conformance.harness.rule2_judging.STOP_TIMEOUT_S", 1.0)
    rounds = _rounds("plus-minus", None, seed=6, count=6)

    async def scenario() -> int | None:
        host = ProcessJudgeHost()
        await host.call("open", "k", 1e-3, 0.5)
        process = host._process
        assert process is not None
        os.kill(process.pid, signal.SIGSTOP)  # hangs: it will never answer
        feeding = asyncio.ensure_future(host.call("feed", "k", rounds))
        await asyncio.sleep(0)  # one turn of the loop: the call is on the I/O thread, waiting for an answer
        await asyncio.wait_for(host.aclose(), timeout=30)
        with pytest.raises(JudgeHostError, match="ended during 'feed'"):
            await asyncio.wait_for(feeding, timeout=30)
        return process.poll()

    assert asyncio.run(scenario()) == -signal.SIGKILL
