"""Headless Chromium driven over the DevTools protocol: load a page, collect console errors, evaluate JS.

Debian's ``chromium`` package (``apt-get install -y chromium``); the
websocket client is the ``websockets`` package. Every wait has a deadline.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sdcp_conformance.testing.children import stop

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
DEADLINE_S = 60.0


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Page:
    """One tab: ``evaluate`` JS, and every console error / exception seen since it was opened."""

    def __init__(self, socket: Any) -> None:
        self.socket = socket
        self.counter = 0
        self.errors: list[str] = []
        self.events: list[dict[str, Any]] = []

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        self.counter += 1
        ident = self.counter
        self.socket.send(json.dumps({"id": ident, "method": method, "params": params}))
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:
            message = json.loads(self.socket.recv(timeout=max(0.1, deadline - time.monotonic())))
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result
            self._event(message)
        raise TimeoutError(f"no answer to {method} within {DEADLINE_S} s")

    def _event(self, message: dict[str, Any]) -> None:
        self.events.append(message)
        method, params = message.get("method"), message.get("params", {})
        if method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            self.errors.append(str(details.get("exception", {}).get("description") or details.get("text"))[:500])
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            self.errors.append(json.dumps(params.get("args", []))[:500])
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            self.errors.append(params["entry"].get("text", "")[:500])

    def wait_for(self, method: str) -> dict[str, Any]:
        deadline = time.monotonic() + DEADLINE_S
        for seen in self.events:
            if seen.get("method") == method:
                return seen
        while time.monotonic() < deadline:
            message = json.loads(self.socket.recv(timeout=max(0.1, deadline - time.monotonic())))
            if "id" not in message:
                self._event(message)
                if message.get("method") == method:
                    return message
        raise TimeoutError(f"no {method} within {DEADLINE_S} s")

    def evaluate(self, expression: str) -> Any:
        answer = self.send("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in answer:
            raise RuntimeError(f"{expression}: {answer['exceptionDetails']}")
        return answer["result"].get("value")

    def drain(self) -> None:
        """Read the events that arrived meanwhile (console errors of a click, say)."""
        self.send("Runtime.evaluate", expression="0")


@contextmanager
def open_page(path: Path) -> Iterator[Page]:
    """Chromium on a fresh profile, one page at ``file://path``, loaded; stopped afterwards."""
    from websockets.sync.client import connect

    binary = chromium_path()
    assert binary is not None, "chromium is not installed (apt-get install -y chromium)"
    # Chromium's helpers (zygote, renderer, crashpad) live in its process group and can outlive it for a moment,
    # still writing to the profile: the whole group is killed before the profile is removed. Its own scratch
    # directories (org.chromium.Chromium.*) go under TMPDIR, so inside the profile too, and are removed with it.
    with tempfile.TemporaryDirectory(prefix="sdcp-chromium-", ignore_cleanup_errors=True) as profile:
        process = subprocess.Popen([binary, *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-port=0",
                                    "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                   start_new_session=True, env={**os.environ, "TMPDIR": profile})
        try:
            port = _devtools_port(process)
            threading.Thread(target=_drain, args=(process,), daemon=True).start()  # a full pipe would block it
            targets = _json(f"http://127.0.0.1:{port}/json/list")
            page_target = next(t for t in targets if t.get("type") == "page")
            with connect(page_target["webSocketDebuggerUrl"], max_size=None, open_timeout=DEADLINE_S) as socket:
                page = Page(socket)
                for domain in ("Runtime.enable", "Log.enable", "Page.enable", "Network.enable"):
                    page.send(domain)
                page.send("Page.navigate", url=path.resolve().as_uri())
                page.wait_for("Page.loadEventFired")
                yield page
        finally:
            stop(process, 10)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)


def _drain(process: subprocess.Popen[bytes]) -> None:
    assert process.stderr is not None
    while process.stderr.read(65536):
        pass


def _devtools_port(process: subprocess.Popen[bytes]) -> str:
    """The port from chromium's "DevTools listening on ws://127.0.0.1:PORT/…" line, read with a deadline."""
    import selectors

    assert process.stderr is not None
    watcher = selectors.DefaultSelector()
    watcher.register(process.stderr, selectors.EVENT_READ)
    deadline = time.monotonic() + DEADLINE_S
    buffered = b""
    while time.monotonic() < deadline:
        if not watcher.select(timeout=max(0.1, deadline - time.monotonic())):
            continue
        chunk = os.read(process.stderr.fileno(), 65536)
        if not chunk:
            raise AssertionError(f"chromium exited ({process.wait(timeout=10)}): {buffered[-2000:]!r}")
        buffered += chunk
        marker = buffered.find(b"DevTools listening on ws://")
        if marker >= 0 and b"\n" in buffered[marker:]:
            address = buffered[marker:].split(b"\n", 1)[0].split(b"ws://", 1)[1]
            return address.split(b"/", 1)[0].rsplit(b":", 1)[1].decode()
    raise AssertionError("chromium did not open its DevTools port in time")


def _json(url: str) -> Any:
    import urllib.request

    with urllib.request.urlopen(url, timeout=10) as answer:
        return json.loads(answer.read())


def screenshot(path: Path, output: Path, width: int = 1300, height: int = 2200) -> None:
    """A PNG of the page as a person sees it (for the closing note, not for assertions)."""
    binary = chromium_path()
    assert binary is not None
    with tempfile.TemporaryDirectory(prefix="sdcp-chromium-", ignore_cleanup_errors=True) as profile:
        subprocess.run([binary, *FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}",
                        f"--screenshot={output}", path.resolve().as_uri()], check=True, timeout=DEADLINE_S,
                       capture_output=True, env={**os.environ})
