"""A readers-writer lock between processes, for harness processes that certify one IUT at the same time.

pytest-xdist workers against one target run their cases at once, as
``certify --jobs`` does inside one process; a case that changes state every
case sees (:attr:`~sdcp_conformance.harness.case.Case.exclusive`) must still
run alone. Ordinary cases hold the lock shared, exclusive ones hold it
exclusively. ``flock`` alone lets a steady stream of shared holders starve a
writer, so a turnstile file is taken first: a writer keeps it while it waits,
which stops new readers at the door; readers pass through it at once.

``flock`` locks belong to the open file, and the kernel drops them when the
process dies, so a crashed worker never leaves the others waiting.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

TURNSTILE = "turnstile.lock"
DATA = "cases.lock"


class SharedExclusiveLock:
    """The lock whose two files live in ``folder`` (one folder per certification, shared by its processes)."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)

    @contextmanager
    def _locked(self, name: str, mode: int) -> Iterator[None]:
        descriptor = os.open(self.folder / name, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(descriptor, mode)
            yield
        finally:
            os.close(descriptor)  # closing releases the flock

    @contextmanager
    def shared(self) -> Iterator[None]:
        with self._locked(TURNSTILE, fcntl.LOCK_EX):
            pass  # wait behind any writer queued at the turnstile
        with self._locked(DATA, fcntl.LOCK_SH):
            yield

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._locked(TURNSTILE, fcntl.LOCK_EX), self._locked(DATA, fcntl.LOCK_EX):
            yield


__all__ = ["DATA", "TURNSTILE", "SharedExclusiveLock"]
