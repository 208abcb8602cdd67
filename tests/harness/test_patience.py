"""Deadlines from what the harness measured (P1-JUDGE-5, D-JUDGE-TIME-1/2): computed here from the figures the
module documents, not read back from it."""

from __future__ import annotations

import asyncio
import time

import pytest

from sdcp_conformance.harness.patience import LoopStall, Patience


def test_the_deadline_is_the_targets_until_the_iut_answers_slower() -> None:
    patience = Patience(5.0, 35.0)
    assert patience.request_deadline() == 5.0
    for _ in range(20):
        patience.observe(0.2)  # 4 x 0.2 s is below the 5 s floor
    assert patience.request_deadline() == 5.0
    for _ in range(20):
        patience.observe(2.5)  # now the 90th percentile is 2.5 s: four times that
    assert patience.request_deadline() == pytest.approx(10.0)


def test_the_deadline_follows_the_recent_answers_and_is_capped() -> None:
    patience = Patience(5.0, 35.0)
    for _ in range(64):
        patience.observe(30.0)
    assert patience.request_deadline() == 60.0, "12 times the target's 5 s at most"
    for _ in range(64):
        patience.observe(0.1)  # the 64 slow ones are no longer recent
    assert patience.request_deadline() == 5.0


def test_a_run_again_multiplies_every_deadline() -> None:
    patience = Patience(2.0, 35.0)
    patience.scale = 3.0
    assert patience.request_deadline() == 6.0
    assert patience.poll_deadline() == 105.0
    assert patience.wait(1.5) == 4.5


def test_the_loop_stall_is_the_time_the_loop_could_not_run() -> None:
    """A callback that keeps the loop 0.6 s (the harness computing) is measured as about that much stall, after
    the moment it began and not before it."""

    async def scenario() -> tuple[float, float, float]:
        stall = LoopStall()
        stall.start()
        loop = asyncio.get_running_loop()
        for _ in range(3):
            await asyncio.sleep(0.1)  # let the monitor tick
        before = loop.time()
        busy_until = time.perf_counter() + 0.6
        while time.perf_counter() < busy_until:  # the harness's own CPU work, holding the loop
            pass
        for _ in range(3):
            await asyncio.sleep(0.1)
        after = loop.time()
        for _ in range(3):
            await asyncio.sleep(0.1)
        measured = stall.since(before), stall.since(after), stall.total
        await stall.stop()
        return measured

    since_before, since_after, total = asyncio.run(scenario())
    assert since_before <= total
    assert since_before - since_after >= 0.45, "the 0.6 s the loop was held fell between before and after"
