"""How long the harness waits for the IUT: deadlines from what it measured, never a verdict by the clock alone.

P1-JUDGE-5: "A request the harness's deadline expires on is evidence that the
implementation or the machine is slow, not of a deviation". Three things keep
a busy machine from turning into FAILED verdicts:

* **Deadlines scale with the IUT's own answers** (D-JUDGE-TIME-1). A request's
  deadline is the target's ``request_timeout_s`` or :data:`DEADLINE_FACTOR`
  times the 90th percentile of the IUT's last :data:`RECENT` answer times this
  run (the sanity case's first), whichever is longer.
* **The harness's own stalls are not the IUT's** (D-JUDGE-TIME-2). A
  :class:`LoopStall` measures how long the harness's event loop could not run
  (its own CPU work, or a machine that gave it none); a deadline that comes
  is moved on by the stall since its request began, so an answer the harness
  was too busy to read is read, not judged.
* **A miss is a reason to ask again, alone** (D-JUDGE-TIME-3, the runner). A
  case with a missed deadline that did not pass runs again after the others,
  alone, with every deadline :data:`RERUN_SCALE` times longer (:attr:`Patience.scale`);
  only a second miss is judged, as "too slow".
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
from collections import deque
from collections.abc import Iterable

DEADLINE_FACTOR = 4.0
"""D-JUDGE-TIME-1: a request may take this many times the IUT's usual slow answer (its 90th percentile)."""
RECENT = 64
"""How many of the IUT's latest answer times the deadline is computed from."""
MAX_DEADLINE_FACTOR = 12.0
"""However slow the IUT has been, one request waits at most this many times ``request_timeout_s`` (times the
scale): a hung IUT is still told apart within a case's time."""
RERUN_SCALE = 3.0
"""D-JUDGE-TIME-3: deadlines and the case's own timeout are this many times longer when a case runs again alone."""
STALL_TICK_S = 0.1
"""How often the loop-stall monitor wakes; a wake-up later than this (plus :data:`STALL_SLACK_S`) is a stall."""
STALL_SLACK_S = 0.02
STALL_HISTORY = 6000
"""Ticks kept (ten minutes at :data:`STALL_TICK_S`): a request older than that is credited from the oldest."""


def upper_decile(samples: Iterable[float]) -> float:
    """The 90th percentile of ``samples`` (the sample at 90 % of the sorted list; 0 when there are none): how the
    harness reads an IUT's usual slow answer, here and in the drafter suite's pace (D-JUDGE-D5)."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))] if ordered else 0.0


class LoopStall:
    """How long the running event loop could not run callbacks: the harness's own bottleneck, measured.

    A task sleeps :data:`STALL_TICK_S` again and again; whatever it wakes later than asked is time in which no
    callback ran (the harness computing, or the machine giving it no CPU). :meth:`since` tells how much of it
    fell after a moment, so a deadline can be moved on by exactly that (D-JUDGE-TIME-2).
    """

    def __init__(self) -> None:
        self.total = 0.0
        self._times: deque[float] = deque(maxlen=STALL_HISTORY)
        self._totals: deque[float] = deque(maxlen=STALL_HISTORY)
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start measuring on the running loop (again after :meth:`stop`); a no-op while running."""
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._tick(), name="sdcp-loop-stall")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _tick(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            asked = loop.time()
            await asyncio.sleep(STALL_TICK_S)
            now = loop.time()
            late = now - asked - STALL_TICK_S
            if late > STALL_SLACK_S:
                self.total += late
            self._times.append(now)
            self._totals.append(self.total)

    def since(self, started: float) -> float:
        """Stall (seconds) measured after loop time ``started``."""
        index = bisect.bisect_left(self._times, started)
        before = self._totals[index - 1] if index > 0 else 0.0
        return max(0.0, self.total - before)

    def between(self, start: float, end: float) -> float:
        """Stall (seconds) measured between loop times ``start`` and ``end``: how much later than it came a message
        stamped at ``end`` may have been stamped, beyond one stamped at ``start``."""
        return max(0.0, self.since(start) - self.since(end))


class Patience:
    """The deadlines of one certification's requests to the IUT (P1-JUDGE-5)."""

    def __init__(self, request_timeout_s: float, output_timeout_s: float) -> None:
        self.request_timeout_s = request_timeout_s
        self.output_timeout_s = output_timeout_s
        self.scale = 1.0
        """:data:`RERUN_SCALE` while a case runs again alone (the runner sets it), else 1."""
        self.stall = LoopStall()
        self._answers: deque[float] = deque(maxlen=RECENT)
        self._slow: float | None = 0.0
        """:attr:`usual_slow_answer`, computed once per new answer (every request asks for its deadline)."""

    def observe(self, seconds: float) -> None:
        """An answer of the IUT took ``seconds`` (sent to answered; the harness's own holds excluded)."""
        self._answers.append(seconds)
        self._slow = None

    @property
    def usual_slow_answer(self) -> float:
        """The 90th percentile of the IUT's recent answer times (0 before any)."""
        if self._slow is None:
            self._slow = upper_decile(self._answers)
        return self._slow

    def request_deadline(self) -> float:
        """Deadline of a request that is not the output long poll (D-JUDGE-TIME-1)."""
        measured = min(DEADLINE_FACTOR * self.usual_slow_answer, MAX_DEADLINE_FACTOR * self.request_timeout_s)
        return self.scale * max(self.request_timeout_s, measured)

    def poll_deadline(self) -> float:
        """Deadline of ``GET …/output``: P1-OUT-1's long poll plus the target's margin, times the scale."""
        return self.scale * self.output_timeout_s

    def wait(self, seconds: float) -> float:
        """How long to wait for something the IUT was asked to do within ``seconds`` (times the scale)."""
        return self.scale * seconds

    def extension(self, started: float) -> float:
        """What a deadline that came may be moved on by: the harness's stall since ``started`` (loop time)."""
        return self.stall.since(started)


__all__ = [
    "DEADLINE_FACTOR",
    "MAX_DEADLINE_FACTOR",
    "RECENT",
    "RERUN_SCALE",
    "LoopStall",
    "Patience",
    "upper_decile",
]
