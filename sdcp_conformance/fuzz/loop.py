"""A dedicated event loop in a background thread that runs the harness environment.

Hypothesis rules are synchronous; the transport is asyncio. Each rule submits a
coroutine to this loop with :meth:`LoopThread.run` and waits for its result
with a deadline, so Hypothesis itself is never patched and every wait ends.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any, TypeVar

from sdcp_conformance.harness.specs.verifier import AppFactory, VerifierEnvironment
from sdcp_conformance.harness.target import TargetConfig
from sdcp_conformance.transport import event_loops

T = TypeVar("T")

STEP_TIMEOUT_S = 90.0
"""Longer than the IUT link's own timeouts (40 s), so a hung IUT shows up as a failed answer first."""

CANCEL_GRACE_S = 30.0
"""How long an interrupted step may take to finish its cancellation."""


class StepTimeout(Exception):
    """A step did not finish within its deadline (the IUT or the harness hung)."""


async def _until_ended(coroutine: Coroutine[Any, Any, T], ended: threading.Event) -> T:
    """``coroutine``, and ``ended`` set once it has finished, its clean-up after a cancellation included."""
    try:
        return await coroutine
    finally:
        ended.set()


class LoopThread:
    """Owns one event loop on a daemon thread and the :class:`VerifierEnvironment` started on it."""

    def __init__(self) -> None:
        self.loop = event_loops.new_event_loop()
        self._thread = threading.Thread(target=self._serve, name="sdcp-fuzz-loop", daemon=True)
        self._thread.start()
        self.environment: VerifierEnvironment | None = None

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def run(self, coroutine: Coroutine[Any, Any, T], timeout_s: float = STEP_TIMEOUT_S) -> T:
        ended = threading.Event()
        future = asyncio.run_coroutine_threadsafe(_until_ended(coroutine, ended), self.loop)
        try:
            return future.result(timeout_s)
        except FutureTimeout:
            future.cancel()
            raise StepTimeout(f"the step did not finish within {timeout_s} s") from None
        except KeyboardInterrupt:
            # Ctrl-C while the loop runs the step: the step is cancelled and given time to clean up (an
            # environment half started stops what it started) before the interrupt goes on.
            future.cancel()
            ended.wait(CANCEL_GRACE_S)
            raise

    def start(self, target: TargetConfig | None = None, *, app_factory: AppFactory | None = None,
              workdir: Path | None = None) -> VerifierEnvironment:
        self.environment = self.run(VerifierEnvironment.start(target, app_factory=app_factory, workdir=workdir), 120.0)
        return self.environment

    @property
    def env(self) -> VerifierEnvironment:
        if self.environment is None:
            raise RuntimeError("the environment has not been started")
        return self.environment

    def close(self) -> None:
        if self.environment is not None:
            self.run(self.environment.stop(), 60.0)
            self.environment = None
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10.0)
        if not self._thread.is_alive():
            self.loop.close()

    def __enter__(self) -> LoopThread:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["CANCEL_GRACE_S", "STEP_TIMEOUT_S", "LoopThread", "StepTimeout"]
