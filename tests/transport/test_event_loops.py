"""Event loops a Ctrl-C cannot leave half built (``transport/event_loops.py``)."""

from __future__ import annotations

import asyncio
import asyncio.base_events
import gc
import signal
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from sdcp_conformance.transport import event_loops


@pytest.fixture
def ctrl_c_inside_the_build(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[asyncio.AbstractEventLoop]]:
    """Ctrl-C arrives while ``BaseEventLoop.__init__`` runs (at its clock query, before ``set_debug``); yields the
    loops closed meanwhile. SIGINT is at Python's default handler, as in a command started from a terminal."""
    real_clock_info, real_close = time.get_clock_info, asyncio.base_events.BaseEventLoop.close
    closed: list[asyncio.AbstractEventLoop] = []

    def clock_info_then_ctrl_c(name: Any) -> Any:
        info = real_clock_info(name)
        signal.raise_signal(signal.SIGINT)  # Python raises KeyboardInterrupt at its next check, inside __init__
        return info

    def recorded_close(loop: asyncio.base_events.BaseEventLoop) -> None:
        closed.append(loop)
        real_close(loop)

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    monkeypatch.setattr(time, "get_clock_info", clock_info_then_ctrl_c)  # the module asyncio.base_events uses
    monkeypatch.setattr(asyncio.base_events.BaseEventLoop, "close", recorded_close)
    try:
        yield closed
    finally:
        signal.signal(signal.SIGINT, previous)


def _unraisable_after(build: Callable[[], asyncio.AbstractEventLoop]) -> list[str]:
    """Build under the interrupt; what ``__del__`` methods failed with once the garbage is collected."""
    failures: list[str] = []
    previous_hook = sys.unraisablehook
    sys.unraisablehook = lambda unraisable: failures.append(f"{unraisable.exc_type.__name__}: {unraisable.exc_value}")
    try:
        try:
            build()
        except KeyboardInterrupt:
            pass
        else:
            raise AssertionError("the Ctrl-C did not interrupt the build")
        gc.collect()
    finally:
        sys.unraisablehook = previous_hook
    return failures


def test_control_a_plain_build_interrupted_so_leaves_a_half_built_loop_whose_del_fails(
        ctrl_c_inside_the_build: list[asyncio.AbstractEventLoop]) -> None:
    failures = _unraisable_after(asyncio.new_event_loop)
    assert any("AttributeError" in failure and "_debug" in failure for failure in failures), failures


def test_a_ctrl_c_inside_the_build_is_raised_after_it_and_the_whole_loop_is_closed(
        ctrl_c_inside_the_build: list[asyncio.AbstractEventLoop]) -> None:
    assert _unraisable_after(event_loops.new_event_loop) == []
    assert len(ctrl_c_inside_the_build) == 1 and ctrl_c_inside_the_build[0].is_closed()
    assert ctrl_c_inside_the_build[0].get_debug() in (True, False)  # its __init__ ran to the end
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # and Ctrl-C works as before


def test_an_inherited_ignore_sigint_is_left_alone() -> None:
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        loop = event_loops.new_event_loop()
        loop.close()
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)


def test_a_loop_built_so_is_open_and_runs() -> None:
    loop = event_loops.new_event_loop()
    try:
        assert not loop.is_closed() and loop.run_until_complete(asyncio.sleep(0, "ran")) == "ran"
    finally:
        loop.close()


def test_run_returns_the_result_and_closes_its_loop() -> None:
    seen: list[asyncio.AbstractEventLoop] = []

    async def answer() -> int:
        seen.append(asyncio.get_running_loop())
        return 42

    assert event_loops.run(answer()) == 42
    assert seen[0].is_closed()
