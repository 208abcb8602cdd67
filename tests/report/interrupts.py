"""Ctrl-C for commands a test starts: delivered as a terminal would, and never waited on forever."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Sequence
from typing import Any

INTERRUPT_TIMEOUT_S = 120.0


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_interruptible(args: Sequence[str], **options: Any) -> subprocess.Popen[str]:
    """Start ``args`` with SIGINT at its default disposition, whatever this process inherited.

    A shell without job control starts background jobs with SIGINT ignored, and a Python started so keeps
    ignoring it: under such a CI runner a Ctrl-C test would wait on a command that never hears the signal.
    """
    return subprocess.Popen(args, preexec_fn=_default_sigint, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, **options)


def interrupt(run: subprocess.Popen[str], timeout_s: float = INTERRUPT_TIMEOUT_S) -> str:
    """Send one SIGINT and return the rest of the output; the command is killed and the test fails if it has
    not ended within ``timeout_s``."""
    run.send_signal(signal.SIGINT)
    try:
        rest, _ = run.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        run.kill()
        rest, _ = run.communicate()
        raise AssertionError(f"one Ctrl-C did not end the command within {timeout_s:.0f} s:\n{rest[-4000:]}") from None
    return rest
