"""Child processes a test, a benchmark or a tool starts: wait for their ready line within a deadline, then stop them.

The reference roles print ``serving <base URI>`` (:data:`~sdcp_conformance.reference.running.READY_LINE`) once they
listen; whoever starts one as a separate process — as a vendor starts theirs — waits for that line, never for a
fixed time, and stops the child however the block ends (terminate, then kill after a grace period).
"""

from __future__ import annotations

import queue
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from sdcp_conformance.errors import SdcpConformanceError
from sdcp_conformance.reference.running import READY_LINE

STOP_GRACE_S = 20.0


class ChildNotReady(SdcpConformanceError):
    """The child exited, or printed no ready line before the deadline; the message says which, with its output."""


def _lines(stream: IO[str]) -> queue.Queue[str]:
    """Lines of a child's stdout, read by a thread so that waiting for one can have a deadline."""
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        for line in stream:
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    return lines


def ready_line(process: subprocess.Popen[str], timeout_s: float, prefix: str = READY_LINE) -> str:
    """What follows ``prefix`` on the first stdout line of ``process`` that starts with it, within ``timeout_s``."""
    assert process.stdout is not None, "start the child with stdout=subprocess.PIPE"
    lines = _lines(process.stdout)
    seen: list[str] = []
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            line = lines.get(timeout=max(0.1, min(1.0, deadline - time.monotonic())))
        except queue.Empty:
            if process.poll() is not None:
                raise ChildNotReady(f"the child exited with {process.returncode} before its {prefix!r} line; it "
                                    f"printed {seen[-20:]}") from None
            if time.monotonic() >= deadline:
                raise ChildNotReady(f"no {prefix!r} line within {timeout_s:g} s; the child printed {seen[-20:]}"
                                    ) from None
            continue
        seen.append(line.rstrip("\n"))
        if line.startswith(prefix):
            return line[len(prefix):].strip()


def stop(process: subprocess.Popen[Any], grace_s: float = STOP_GRACE_S) -> None:
    """SIGTERM, then SIGKILL if it has not exited within ``grace_s``; returns once it has exited."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=grace_s)


@contextmanager
def running(command: Sequence[str], stderr: Path, *, timeout_s: float, cwd: Path | None = None,
            prefix: str = READY_LINE) -> Iterator[str]:
    """``command`` as a child (its stderr to the file ``stderr``) until the block ends; yields what its ready line
    says (a base URI). :class:`ChildNotReady` when it never says it."""
    with stderr.open("w") as sink:
        process = subprocess.Popen(list(command), cwd=cwd, stdout=subprocess.PIPE, stderr=sink, text=True)
        try:
            yield ready_line(process, timeout_s, prefix)
        finally:
            stop(process)
            if process.stdout is not None:
                process.stdout.close()


__all__ = ["READY_LINE", "ChildNotReady", "ready_line", "running", "stop"]
