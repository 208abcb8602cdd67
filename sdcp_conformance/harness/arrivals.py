"""Waiting for what a played role receives: woken by each arrival, never by polling or sleeping."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


async def wait_until(changed: asyncio.Event, predicate: Callable[[], bool], timeout_s: float) -> bool:
    """Wait until ``predicate()`` holds or ``timeout_s`` passes; ``changed`` is set by whoever records an arrival.

    The event is cleared before the predicate is checked again, so an arrival between the check and the wait is
    never missed.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not predicate():
        remaining = deadline - loop.time()
        if remaining <= 0:
            return False
        changed.clear()
        if predicate():
            return True
        try:
            await asyncio.wait_for(changed.wait(), remaining)
        except TimeoutError:
            return predicate()
    return True


__all__ = ["wait_until"]
