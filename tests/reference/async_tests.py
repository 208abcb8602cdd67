"""The asyncio pieces the reference roles' tests share: running an ``async def`` test, and a fake party's inbox."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine
from typing import Any, Generic, TypeVar

T = TypeVar("T")

LIMIT_S = 30
"""A test still running after this long fails (``TimeoutError``) instead of hanging the suite."""


def async_test(test: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    """Make ``test`` a plain test function that runs it to its end on a fresh event loop, within :data:`LIMIT_S`."""

    @functools.wraps(test)
    def run_to_end(*args: Any, **kwargs: Any) -> None:
        asyncio.run(asyncio.wait_for(test(*args, **kwargs), LIMIT_S))

    return run_to_end


class Inbox(Generic[T]):
    """What reached a fake party, in order of arrival; :attr:`arrived` is set at each (clear it to await the next)."""

    def __init__(self) -> None:
        self.received: list[T] = []
        self.arrived = asyncio.Event()

    def put(self, item: T) -> None:
        self.received.append(item)
        self.arrived.set()
