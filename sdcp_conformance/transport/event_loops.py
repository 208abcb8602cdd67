"""Event loops that a Ctrl-C cannot leave half built.

Python delivers SIGINT as a ``KeyboardInterrupt`` in the main thread, between any two bytecodes. One that lands
inside ``asyncio.new_event_loop()`` leaves an object whose ``__init__`` never finished; when it is collected, its
``__del__`` fails on a missing attribute and prints a traceback ("Exception ignored in ... BaseEventLoop.__del__")
after the command has already reported its clean interruption. It happened in CI to ``fuzz`` interrupted just as
its campaign started.

Decision D-CTRL-C-BUILD: the commands build every event loop through :func:`new_event_loop`, which holds a Ctrl-C
back until the loop is whole (then closes it and lets the interrupt go on), and run coroutines with :func:`run`
(``asyncio.run`` with that factory).
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

T = TypeVar("T")


@contextmanager
def _sigint_held_back() -> Iterator[None]:
    """A Ctrl-C during the block is raised as ``KeyboardInterrupt`` when the block has ended, not inside it.

    Only where Python's own handler is installed: a command that inherited "ignore SIGINT", or code that installed
    its own handler, is left alone, and so is every thread but the main one (which never receives the interrupt).
    """
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield
        return
    received: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, frame: received.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if received:
        raise KeyboardInterrupt


def new_event_loop() -> asyncio.AbstractEventLoop:
    """``asyncio.new_event_loop()`` that a Ctrl-C interrupts only before or after the build, never inside it."""
    loop: asyncio.AbstractEventLoop | None = None
    try:
        with _sigint_held_back():
            loop = asyncio.new_event_loop()
    except KeyboardInterrupt:
        if loop is not None:
            loop.close()
        raise
    return loop


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coroutine)`` on a loop from :func:`new_event_loop`.

    ``asyncio.Runner`` keeps its own Ctrl-C handling: the first interrupt cancels the coroutine, which cleans up,
    and ``KeyboardInterrupt`` is raised when it has.
    """
    with asyncio.Runner(loop_factory=new_event_loop) as runner:
        return runner.run(coroutine)


__all__ = ["new_event_loop", "run"]
