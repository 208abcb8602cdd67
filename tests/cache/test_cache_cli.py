"""``serve cache`` as a process: it serves over TLS, enforces fences or not, and keeps its SQLite data."""

from __future__ import annotations

import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from sdcp_conformance.cli.serve_cache import READY_PREFIX, serve_cache
from sdcp_conformance.transport.pki import Pki, init_pki
from sdcp_conformance.transport.tls import client_ssl_context

STARTUP_TIMEOUT = 30.0
LAUNCH = "import sys; from sdcp_conformance.cli.serve_cache import serve_cache; serve_cache(sys.argv[1:])"
LOG = "logs/s"
FENCED_LOG = b"\xa1\x65epoch\x02"  # {"epoch": 2}
STALE_RECORD = b"\xa5\x65epoch\x01\x65round\x01\x66digest\x58\x20" + bytes(32) + b"\x67emitted\x80\x69committed\x00"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return init_pki(
        tmp_path_factory.mktemp("cli-pki"),
        {"cache": "https://127.0.0.1:9445/cache/", "verifier": "https://127.0.0.1:9442/v/"},
    )


class CacheProcess:
    """A running ``serve cache`` process and the base URI it announced."""

    def __init__(self, args: list[str]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", LAUNCH, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        lines: queue.Queue[str] = queue.Queue()
        assert self.process.stdout is not None
        stdout = self.process.stdout
        threading.Thread(target=lambda: lines.put(stdout.readline()), daemon=True).start()
        try:
            line = lines.get(timeout=STARTUP_TIMEOUT)
        except queue.Empty:
            self.stop()
            pytest.fail("serve cache did not announce itself in time")
        if not line.startswith(READY_PREFIX):
            pytest.fail(f"serve cache did not start: {line!r} {self.stop()}")
        self.base_uri = line[len(READY_PREFIX) :].strip()

    def stop(self) -> str:
        """SIGTERM, wait (bounded), kill if needed; returns stderr for diagnostics."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=15)
        assert self.process.stderr is not None
        return self.process.stderr.read()


@pytest.fixture
def start(pki: Pki) -> Iterator[type[CacheProcess]]:
    started: list[CacheProcess] = []

    class Started(CacheProcess):
        def __init__(self, args: list[str]) -> None:
            super().__init__(["--pki", str(pki.directory), "--port", "0", *args])
            started.append(self)

    yield Started
    for process in started:
        process.stop()


def client(pki: Pki) -> httpx.Client:
    ctx = client_ssl_context(pki.cert("verifier"), pki.key("verifier"), pki.ca_cert)
    return httpx.Client(http1=False, http2=True, verify=ctx, timeout=10.0)


def test_the_process_serves_and_a_restart_on_the_same_database_keeps_the_objects(
    pki: Pki, start: type[CacheProcess], tmp_path: Path
) -> None:
    database = str(tmp_path / "mlc.db")
    first = start(["--db", database])
    with client(pki) as http:
        put = http.put(first.base_uri + LOG, content=FENCED_LOG)
        assert put.status_code == 201
    first.stop()
    assert first.process.returncode == 0

    second = start(["--db", database])
    with client(pki) as http:
        got = http.get(second.base_uri + LOG)
        assert (got.status_code, got.content, got.headers["etag"]) == (
            200,
            FENCED_LOG,
            put.headers["etag"],
        )
        stale = http.put(
            second.base_uri + LOG,
            content=FENCED_LOG + STALE_RECORD,
            headers={"if-match": got.headers["etag"]},
        )
        assert stale.status_code == 409


def test_no_fence_enforcement_plays_a_cache_that_stores_the_stale_record(pki: Pki, start: type[CacheProcess]) -> None:
    process = start(["--no-fence-enforcement"])
    with client(pki) as http:
        etag = http.put(process.base_uri + LOG, content=FENCED_LOG).headers["etag"]
        stale = http.put(
            process.base_uri + LOG,
            content=FENCED_LOG + STALE_RECORD,
            headers={"if-match": etag},
        )
        assert stale.status_code == 204
        assert http.get(process.base_uri + LOG).content == FENCED_LOG + STALE_RECORD


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give --pki DIR, or all of --cert, --key and --ca"),
        (["--pki", "."], "holds no pki.json"),
    ],
)
def test_usage_errors(args: list[str], message: str) -> None:
    result = CliRunner().invoke(serve_cache, args)
    assert result.exit_code == 2
    assert message in result.output
