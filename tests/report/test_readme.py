"""Every command in the README runs as written, from a fresh copy of the tree: servers started and stopped.

The commands come from :mod:`tests.report.readme_walker` (generic: a new
README section is walked without being listed here); what is deliberately
not run is its ``NOT_RUN`` table. Placeholders a reader fills in from an
earlier command's output (``<router-uri>``, printed by ``pki init --iut``)
are filled from that output's files. A ``&&`` chain runs its parts that are
not in ``NOT_RUN``.
"""

from __future__ import annotations

import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from tests.report.readme_walker import Command, commands, readme

ROOT = Path(__file__).resolve().parents[2]
COMMAND_TIMEOUT_S = 600
READY_TIMEOUT_S = 120


def fresh_copy(destination: Path) -> Path:
    """The tracked and untracked-but-not-ignored files of the checkout (what a clone of it would hold)."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True,
                            check=True, timeout=60).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return destination


PKI_FOLDER = re.compile(r"--pki\s+(\S+)")
PLACEHOLDER = re.compile(r"<(router-uri|mlc-uri|verifier-\d+|drafter-\d+)>")


def _value(harness: dict[str, object], name: str) -> str:
    """A placeholder's value in the ``[harness]`` table that ``pki init`` wrote (what it also printed)."""
    if name == "router-uri":
        return str(harness["router"])
    if name == "mlc-uri":
        return str(harness["cache"])
    kind, _, number = name.rpartition("-")
    listed = harness[f"{kind}s"]
    assert isinstance(listed, list)
    return str(listed[int(number) - 1])


def _filled(text: str, cwd: Path) -> str:
    """The command with its placeholders (``<router-uri>``, ``<verifier-2>``…) replaced from the target file in the
    folder its ``--pki`` names: the values ``pki init`` printed a reader."""
    if not PLACEHOLDER.search(text):
        return text
    folder = PKI_FOLDER.search(text)
    assert folder is not None, f"`{text}` has placeholders but no --pki folder to fill them from"
    raw = tomllib.loads((cwd / folder.group(1) / "target.toml").read_text(encoding="utf-8"))
    return PLACEHOLDER.sub(lambda match: _value(raw["harness"], match.group(1)), text)


def _runnable(command: Command) -> str | None:
    """The parts of a ``&&`` chain that the walker runs, joined again (None: nothing to run)."""
    parts = [part.strip() for part in command.text.split(" && ")] if command.language == "sh" else [command.text]
    kept = [part for part in parts if Command(part, command.block, command.language).not_run is None]
    return " && ".join(kept) if kept else None


def _env() -> dict[str, str]:
    bin_dir = str(Path(sys.executable).parent)  # `sdcp-conformance` and `python` of this environment
    return {**os.environ, "TERM": "dumb", "COLUMNS": "100", "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}


def _start(text: str, ready: str, cwd: Path) -> subprocess.Popen[bytes]:
    server = subprocess.Popen(["bash", "-c", f"exec {text}"], cwd=cwd, env=_env(), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT)
    assert server.stdout is not None
    watcher = selectors.DefaultSelector()
    watcher.register(server.stdout, selectors.EVENT_READ)
    seen = b""
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if not watcher.select(timeout=max(0.1, deadline - time.monotonic())):
            continue
        chunk = os.read(server.stdout.fileno(), 65536)
        if not chunk:
            pytest.fail(f"`{text}` exited ({server.wait(timeout=10)}) before it was ready:\n{seen.decode()[-2000:]}")
        seen += chunk
        if ready.encode() in seen:
            return server
    server.kill()
    pytest.fail(f"`{text}` printed no {ready!r} within {READY_TIMEOUT_S} s:\n{seen.decode()[-2000:]}")


def _stop(servers: list[subprocess.Popen[bytes]]) -> None:
    for server in reversed(servers):
        server.send_signal(signal.SIGINT)
    for server in servers:
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=10)
    servers.clear()


@pytest.mark.slow
@pytest.mark.timeout(1800)  # three roles' certifications, embedded and as separate processes, run in turn
def test_every_readme_command_runs_as_written(tmp_path: Path) -> None:
    cwd = fresh_copy(tmp_path / "clone")
    walked = commands(readme(cwd))
    assert len(walked) > 20  # the walker found the README's commands
    done: set[str] = set()
    servers: list[subprocess.Popen[bytes]] = []
    block = -1
    try:
        for command in walked:
            if command.block != block:
                _stop(servers)  # a block's servers serve that block's commands only
                block = command.block
            text = _runnable(command)
            if text is None or text in done:
                continue
            done.add(text)
            text = _filled(text, cwd)
            ready = command.ready_line
            if ready is not None:
                servers.append(_start(text, ready, cwd))
                continue
            argv = [sys.executable, "-c", text] if command.language == "python" else ["bash", "-c", text]
            result = subprocess.run(argv, cwd=cwd, env=_env(), capture_output=True, text=True,
                                    timeout=COMMAND_TIMEOUT_S, check=False)
            assert result.returncode == command.expected_exit, f"`{text}` exited {result.returncode}:\n" \
                                           f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
            assert "Traceback" not in result.stderr, f"`{text}`:\n{result.stderr[-3000:]}"
    finally:
        _stop(servers)
