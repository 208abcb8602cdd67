"""Where the statistical cases' rule-2 tests are computed: a worker process beside the harness, or inline.

Issue 16: the sequential test (exact law, alternatives, e-process) costs the harness more CPU per round than
moving the round's bytes. On a machine with a second core it runs in one worker process, which serves every
statistical case of the run (:class:`ProcessJudgeHost`), so the harness's own process only drafts, sends and
checks; with one core it runs inline (:class:`InlineJudgeHost`). Both call the same functions
(:data:`~sdcp_conformance.oracle.rule2_judge.CALLS`) in the same order, so the decision is the same either
way; only how soon the harness learns that a test rejected differs (:class:`Rule2Feed` keeps one batch in flight).

Every call has a deadline; a worker that dies or hangs fails the case that was waiting (an ERROR, a harness
fault, not the IUT's) and is replaced for the next one; :meth:`ProcessJudgeHost.aclose` ends the worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import traceback
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from typing import Any

from sdcp_conformance.errors import SdcpConformanceError
from sdcp_conformance.oracle.rule2_judge import CALLS, JudgedRound, Judges
from sdcp_conformance.oracle.rule2_trace import TracedEProcess

JUDGE_ENV = "SDCP_RULE2_JUDGE"
"""``process`` or ``inline`` forces where the tests run; unset, :data:`PROCESS_FROM_CPUS` decides."""

PROCESS_FROM_CPUS = 2
"""D-JUDGE-PROC: the tests get a worker process when the harness may use at least this many CPUs (a second
process on a single CPU only adds the cost of moving the rounds)."""

JUDGE_NICENESS = 10
"""D-JUDGE-NICE: the worker runs at a lower priority than the harness and the IUT, whose exchanges make up a round:
the test of a round is never on a round's path (lanes go on while it is computed), so on a busy machine it takes
the CPU they leave idle instead of delaying the next exchange."""

CALL_TIMEOUT_S = 120.0
"""The longest a call to the worker may take (a batch of rounds takes milliseconds): past it the worker is
taken for hung, killed, and the waiting case errs."""
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 10.0
READY = "ready"


class JudgeHostError(SdcpConformanceError):
    """The worker computing the rule-2 tests died, hung or failed: a fault of the harness, not of the IUT."""


def available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def judge_mode() -> str:
    forced = os.environ.get(JUDGE_ENV, "").strip().lower()
    if forced in ("process", "inline"):
        return forced
    if forced:
        raise JudgeHostError(f"{JUDGE_ENV}={forced!r}: expected 'process' or 'inline'")
    return "process" if available_cpus() >= PROCESS_FROM_CPUS else "inline"


class InlineJudgeHost:
    """The tests in the harness's own process."""

    pid: int | None = None
    """No process of its own."""

    def __init__(self) -> None:
        self._judges: Judges = {}

    async def call(self, name: str, *args: Any) -> Any:
        return CALLS[name](self._judges, *args)

    async def aclose(self) -> None:
        self._judges.clear()


class ProcessJudgeHost:
    """The tests in one worker process, started on first use; calls are serialised through one I/O thread.

    The worker is ``python -m`` this module, talking over a socket pair with :mod:`multiprocessing`'s pickling
    :class:`~multiprocessing.connection.Connection`: unlike a multiprocessing start method it never imports the
    harness's ``__main__`` (a user's script that runs a certification at import would run again), and it never
    forks a process that may hold threads.
    """

    def __init__(self) -> None:
        self._process: subprocess.Popen[bytes] | None = None
        self._connection: Connection | None = None
        self._io = ThreadPoolExecutor(1, thread_name_prefix="sdcp-rule2-judge")
        self._lock = threading.Lock()
        self._closed = False

    @property
    def pid(self) -> int | None:
        """The worker's process ID while it runs (benchmarks read its CPU time)."""
        process = self._process
        return process.pid if process is not None and process.poll() is None else None

    async def call(self, name: str, *args: Any) -> Any:
        if self._closed:
            raise JudgeHostError("the rule-2 judge host is closed")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._io, self._round_trip, name, args)

    def _round_trip(self, name: str, args: tuple[Any, ...]) -> Any:
        with self._lock:
            if self._process is not None and self._process.poll() is not None:
                status = self._process.returncode
                self._kill()
                if name != "open":  # the tests it held died with it; a new one serves new tests only
                    raise JudgeHostError(f"the rule-2 judge process ended (exit status {status}) before "
                                         f"{name!r}; the tests it held are lost")
            connection = self._started()
            try:
                connection.send((name, args))
                if not connection.poll(CALL_TIMEOUT_S):
                    self._kill()
                    raise JudgeHostError(f"the rule-2 judge process did not answer {name!r} within "
                                         f"{CALL_TIMEOUT_S:g} s; it was killed")
                ok, value = connection.recv()
            except (EOFError, OSError) as error:
                self._kill()
                raise JudgeHostError(f"the rule-2 judge process ended during {name!r} "
                                     f"({type(error).__name__}: {error})") from error
        if not ok:
            raise JudgeHostError(f"the rule-2 judge process failed in {name!r}:\n{value}")
        return value

    def _started(self) -> Connection:
        if self._process is not None and self._process.poll() is None and self._connection is not None:
            return self._connection
        self._kill()
        ours, theirs = socket.socketpair()
        with ours, theirs:
            process = subprocess.Popen([sys.executable, "-m", __name__, str(theirs.fileno())],
                                       pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL)
            connection = Connection(ours.detach())
        self._process, self._connection = process, connection
        try:
            ready = connection.poll(START_TIMEOUT_S) and connection.recv() == READY
        except (EOFError, OSError):
            ready = False
        if not ready:
            self._kill()
            raise JudgeHostError(f"the rule-2 judge process did not start within {START_TIMEOUT_S:g} s")
        return connection

    def _kill(self) -> None:
        process, connection = self._process, self._connection
        self._process = self._connection = None
        if connection is not None:
            connection.close()
        if process is not None and process.poll() is None:
            process.kill()
            process.wait(STOP_TIMEOUT_S)

    async def aclose(self) -> None:
        """End the worker: asked to leave its loop, killed if a call it hangs in keeps the I/O thread past
        :data:`STOP_TIMEOUT_S` (which ends that call with an error, and the thread with it)."""
        if self._closed:
            return
        self._closed = True
        process = self._process
        loop = asyncio.get_running_loop()
        try:
            await asyncio.wait_for(loop.run_in_executor(self._io, self._stop), STOP_TIMEOUT_S)
        except TimeoutError:
            if process is not None and process.poll() is None:
                process.kill()
        self._io.shutdown(wait=False)

    def _stop(self) -> None:
        with self._lock:
            process, connection = self._process, self._connection
            if process is None or connection is None:
                return
            with contextlib.suppress(OSError, ValueError):
                connection.send(None)  # ends its loop
            try:
                process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.terminate()
            self._kill()


JudgeHost = InlineJudgeHost | ProcessJudgeHost


def new_judge_host() -> JudgeHost:
    return ProcessJudgeHost() if judge_mode() == "process" else InlineJudgeHost()


def serve_judges(connection: Connection) -> None:
    """The worker's loop: ``(name, args)`` in, ``(ok, value or traceback)`` out, until ``None`` or EOF.

    A Ctrl-C reaches the worker with the rest of the process group; the harness decides what it means (it stops
    the worker), so the worker ignores it rather than dying mid-answer with a traceback.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.nice(JUDGE_NICENESS)
    judges: Judges = {}
    connection.send(READY)
    while True:
        try:
            request = connection.recv()
        except (EOFError, OSError):
            return
        if request is None:
            return
        name, args = request
        try:
            answer: tuple[bool, Any] = (True, CALLS[name](judges, *args))
        except Exception:  # reported to the harness, which errs the case
            answer = (False, traceback.format_exc())
        connection.send(answer)


class Rule2Feed:
    """One case's rounds on their way to its test, in the order the case fixes, whatever order verdicts arrive in.

    ``put`` takes a round as soon as its verdict is checked; the rounds that are next in (wave, slot) order go to
    the host in batches, one batch in flight at a time. :attr:`rejected` is what the host last said: lanes stop
    drafting once it is true (rounds already sent are answered but never fed). :meth:`finish` waits for every
    batch and returns the test.
    """

    def __init__(self, host: JudgeHost, key: str, width: int) -> None:
        self._host, self._key, self._width = host, key, width
        self._waiting: dict[tuple[int, int], JudgedRound] = {}
        self._next = (0, 0)
        self._ready: list[JudgedRound] = []
        self._pump: asyncio.Task[None] | None = None
        self.rejected = False

    async def open(self, alpha: float, seed: float) -> None:
        await self._host.call("open", self._key, alpha, seed)

    def put(self, wave: int, position: int, judged: JudgedRound) -> None:
        self._waiting[(wave, position)] = judged
        while self._next in self._waiting:
            self._ready.append(self._waiting.pop(self._next))
            wave_, position_ = self._next
            self._next = (wave_, position_ + 1) if position_ + 1 < self._width else (wave_ + 1, 0)
        if self._ready and (self._pump is None or self._pump.done()):
            self._raise_if_failed()
            self._pump = asyncio.ensure_future(self._send_ready())

    async def _send_ready(self) -> None:
        while self._ready and not self.rejected:
            batch, self._ready = self._ready, []
            self.rejected = bool(await self._host.call("feed", self._key, batch))

    def _raise_if_failed(self) -> None:
        if self._pump is not None and self._pump.done() and not self._pump.cancelled():
            error = self._pump.exception()
            if error is not None:
                raise error

    async def finish(self) -> tuple[TracedEProcess, int]:
        """Every round put so far judged (those after a rejection excepted); the test and how many it judged."""
        while self._pump is not None and not self._pump.done():
            await self._pump
        self._raise_if_failed()
        if self._ready and not self.rejected:
            await self._send_ready()
        test, judged = await self._host.call("close", self._key)
        return test, judged

    def abandon(self) -> None:
        """The case ended early (an error, a timeout): stop feeding. The test is dropped with the host."""
        if self._pump is not None:
            if not self._pump.done():
                self._pump.cancel()
            elif not self._pump.cancelled():
                self._pump.exception()  # retrieved: the case's own error is what it reports


__all__ = ["CALL_TIMEOUT_S", "JUDGE_ENV", "PROCESS_FROM_CPUS", "InlineJudgeHost", "JudgeHost", "JudgeHostError",
           "ProcessJudgeHost", "Rule2Feed", "available_cpus", "judge_mode", "new_judge_host", "serve_judges"]


def _worker_main() -> None:
    serve_judges(Connection(int(sys.argv[1])))


if __name__ == "__main__":
    _worker_main()
