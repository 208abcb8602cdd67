"""Log lines of servers the harness runs in-process (the embedded IUT, a mutant), kept in a file, not on screen.

A mutant that raises inside its handler makes the HTTP/2 server log a
traceback; printed, it lands above the kill matrix or the summary and reads
like a crash of the harness. :func:`captured_logs` sends every record of
WARNING and above to a file for the length of a run instead, and says how
many it kept.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass
class CapturedLogs:
    path: Path
    records: int = 0
    errors: int = 0

    def describe(self) -> str:
        return (f"{self.records} log record(s) of the in-process servers ({self.errors} error(s), tracebacks "
                f"included) are in {self.path}")


class _Counting(logging.FileHandler):
    def __init__(self, captured: CapturedLogs) -> None:
        super().__init__(captured.path, encoding="utf-8", delay=True)
        self.captured = captured
        self.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.captured.records += 1
        self.captured.errors += record.levelno >= logging.ERROR
        super().emit(record)


@contextlib.contextmanager
def captured_logs(path: Path, level: int = logging.WARNING) -> Iterator[CapturedLogs]:
    """Route the root logger's records at ``level`` and above to ``path`` (and nowhere else) meanwhile."""
    path.parent.mkdir(parents=True, exist_ok=True)
    captured = CapturedLogs(path)
    handler = _Counting(captured)
    handler.setLevel(level)
    root = logging.getLogger()
    saved_handlers, saved_level = root.handlers[:], root.level
    root.handlers = [handler]
    root.setLevel(min(level, saved_level) if saved_level else level)
    try:
        yield captured
    finally:
        root.handlers = saved_handlers
        root.setLevel(saved_level)
        handler.close()


__all__ = ["CapturedLogs", "captured_logs"]
