"""A slow verifier is a conformant one: the self-decoding cases wait for a period's end while it commits.

A self-decoding period of n tokens takes n passes of the target model (§6.5.2). A verifier on a slow engine, a
second a pass, once failed VER-6.5-ESC-018 (24 tokens) with "self-decoding did not end within 10 s", although it
did everything right. The cases now wait as long as commit records keep coming (D-JUDGE-SLOW-SELF); here each
pass of the embedded reference sleeps, so the period outlasts the stall window many times over, and the
case must still pass; and a period that stops committing ends the wait one window later.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from sdcp_conformance.harness.arrivals import wait_until
from sdcp_conformance.harness.certify import certify
from sdcp_conformance.judge import Verdict
from sdcp_conformance.mutants.base import VerifierMutant as Mutant
from sdcp_conformance.protocol.messages import Event
from sdcp_conformance.reference.verifier.ports import ScoreItem, TargetModel
from sdcp_conformance.suites.verifier import conversation, escalation

PASS_S = 0.2
"""Each scoring pass of the slowed reference sleeps this long (in the scoring thread, as a slow engine would)."""
STALL_S = 1.5
"""The stall window in these tests: ESC-018's 24 self-decoded tokens take 24 passes, about three windows."""


class SlowPasses:
    """The reference's model, every pass made :data:`PASS_S` slower."""

    def __init__(self, inner: TargetModel) -> None:
        self._inner = inner

    def score(self, items: Sequence[ScoreItem]) -> list[npt.NDArray[np.float64]]:
        time.sleep(PASS_S)  # a slow engine's pass, not synchronisation: nothing waits on it
        return self._inner.score(items)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


SLOW = Mutant("slow-passes", "none", "the reference with slow scoring passes (conformant)", "-", "-",
              wrap_model=SlowPasses)


@pytest.fixture
def short_stall(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(conversation, "SELF_DECODING_STALL_S", STALL_S)


@pytest.mark.usefixtures("short_stall")
def test_a_slow_self_decoding_period_is_waited_for_while_it_commits(tmp_path: Path) -> None:
    assert escalation.SAMPLED_SELF_MAX * PASS_S > 2 * STALL_S  # the period outlasts a fixed wait of one window
    report = asyncio.run(certify(selectors=["VER-6.5-ESC-018", "VER-6.5-ESC-008"], seed=1, app_factory=SLOW.factory,
                                 workdir=tmp_path))
    verdicts = {result.case.id: (result.verdict, result.message) for result in report.results}
    assert verdicts["VER-6.5-ESC-018"][0] is Verdict.PASSED, verdicts
    assert verdicts["VER-6.5-ESC-008"][0] is Verdict.PASSED, verdicts


class _Inbox:
    """The router listener as the helper reads it: events, and a wait on them."""

    def __init__(self) -> None:
        self.events: list[tuple[str | None, Event]] = []
        self.changed = asyncio.Event()

    async def wait_for(self, predicate: Callable[[], bool], timeout_s: float) -> bool:
        return await wait_until(self.changed, predicate, timeout_s)


def _conversation() -> tuple[Any, Any, _Inbox, list[dict[str, Any]]]:
    inbox, log = _Inbox(), []
    ctx = SimpleNamespace(router=inbox, read_log=lambda session: log)
    return ctx, SimpleNamespace(id=SESSION), inbox, log


SESSION = bytes(16)
END = Event(session=SESSION, epoch=1, kind=0, committed=0, digest=bytes(32))


def test_the_wait_goes_on_while_records_come_and_ends_when_they_stop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(conversation, "SELF_DECODING_STALL_S", 0.3)
    ctx, session, inbox, log = _conversation()

    async def committing(records: int) -> None:  # plays a verifier: a record every 50 ms, then its event
        for round_number in range(1, records + 1):
            await asyncio.sleep(0.05)
            log.append({"epoch": 1, "round": round_number, "emitted": [1], "committed": round_number,
                        "digest": bytes(32)})
        inbox.events.append(("verifier", END))
        inbox.changed.set()

    async def ended_after(records: int) -> list[tuple[str | None, Event]]:
        verifier = asyncio.ensure_future(committing(records))
        try:
            return await conversation.wait_event_while_committing(ctx, session, (0,))
        finally:
            verifier.cancel()

    async def both() -> tuple[list[tuple[str | None, Event]], list[tuple[str | None, Event]]]:
        ended = await ended_after(20)  # 1 s of records: three windows' worth
        silent = SimpleNamespace(id=bytes(range(16)))  # a session that commits nothing: the wait ends after a window
        return ended, await conversation.wait_event_while_committing(ctx, silent, (0,))

    assert asyncio.run(both()) == ([("verifier", END)], [])
