"""A real ``redis-server`` (Debian's) for the shared-corpus tests: started on a free port, stopped by the fixture.

Never a mock: the point of the tests is that Hypothesis' ``RedisExampleDatabase``
and our ``--database redis://…`` work against the server CI workers will share.
``.ci/run`` installs the package; a missing binary fails the tests with the
command that installs it (as the HTML report's Chromium tests do), never skips them.
"""

from __future__ import annotations

import os
import selectors
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sdcp_conformance.reference.stack import free_port
from sdcp_conformance.testing.children import stop
from tests.system_binaries import require_program

READY = "Ready to accept connections"
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 30.0


def redis_binary() -> str:
    """The ``redis-server`` path; without it the tests fail, saying how to install it (``.ci/run`` does)."""
    return require_program("redis-server")


@contextmanager
def redis_server(directory: Path, *, persist: bool) -> Iterator[str]:
    """A ``redis-server`` on a free loopback port, its data in ``directory``; yields its ``redis://`` URL.

    With ``persist`` the append-only file is on (``appendfsync always``), so a
    restart on the same directory keeps every key; without it nothing is kept.
    """
    binary = redis_binary()
    port = free_port()
    args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(directory), "--save", "",
            "--logfile", "", "--daemonize", "no", "--protected-mode", "yes",
            "--appendonly", "yes" if persist else "no"]
    if persist:
        args += ["--appendfsync", "always"]
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        _wait_ready(process)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        _stop(process, port)


def _wait_ready(process: subprocess.Popen[bytes]) -> None:
    """Read the server's log until it says it accepts connections (the server's own readiness signal).

    Raw reads of the pipe, never a buffered ``readline``: a buffered reader may hold the ready line already while
    ``select`` on the descriptor waits for more.
    """
    assert process.stdout is not None
    seen = b""
    deadline = time.monotonic() + START_TIMEOUT_S
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if not selector.select(timeout=max(0.0, deadline - time.monotonic())):
                break
            chunk = os.read(process.stdout.fileno(), 65536)
            if not chunk:  # the server exited
                break
            seen += chunk
            if READY.encode() in seen:
                return
    process.kill()
    process.wait(timeout=STOP_TIMEOUT_S)
    raise RuntimeError("redis-server did not become ready:\n" + "\n".join(seen.decode(errors="replace")
                                                                          .splitlines()[-20:]))


def _stop(process: subprocess.Popen[bytes], port: int) -> None:
    """SHUTDOWN (which writes the append-only file out), else terminate, else kill; always reaped."""
    if process.poll() is None:
        import redis

        try:
            redis.Redis(host="127.0.0.1", port=port, socket_timeout=5).shutdown()
        except redis.ConnectionError:
            pass  # the client's connection closing is what a successful SHUTDOWN looks like
        except redis.RedisError:
            stop(process, STOP_TIMEOUT_S)  # SHUTDOWN refused: terminate, then kill
        try:
            process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            stop(process, STOP_TIMEOUT_S)
    if process.stdout is not None:
        process.stdout.close()
