"""Fuzz workers sharing one corpus in a real Redis (``fuzz --database redis://…``), as a CI fuzz fleet does.

Each worker is its own ``sdcp-conformance fuzz`` process. Worker A fuzzes a
mutant until it fails; worker B, another process with another seed and only
two examples, fails the same way at once, because Hypothesis' reuse phase
replays the shared corpus before generating; the control, B's exact command
on an empty database, finds nothing, so the corpus is what found it. Then the
server restarts on its append-only file and a third worker still finds it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.fuzz.redis_server import redis_server

MUTANT = "skip-round-check"
WORKER_TIMEOUT_S = 600


def fuzz_worker(database: str, out: Path, *, seed: int, examples: int) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "sdcp_conformance.cli", "fuzz", "--mutant", MUTANT, "--seed", str(seed),
               "--examples", str(examples), "--database", database, "--out", str(out)]
    return subprocess.run(command, capture_output=True, text=True, timeout=WORKER_TIMEOUT_S, check=False)


def saved_steps(out: Path) -> list[dict[str, object]]:
    saved = sorted(out.glob("*.json"))
    assert len(saved) == 1, f"expected one replay file in {out}, found {saved}"
    steps: list[dict[str, object]] = json.loads(saved[0].read_text())["steps"]
    return steps


def keys_in(url: str) -> int:
    import redis

    client = redis.Redis.from_url(url, socket_timeout=10)
    try:
        return int(client.dbsize())
    finally:
        client.close()


def test_a_failure_one_worker_finds_is_replayed_first_by_the_next_and_survives_a_restart(tmp_path: Path) -> None:
    data = tmp_path / "redis"
    data.mkdir()
    with redis_server(data, persist=True) as url:
        found = fuzz_worker(url, tmp_path / "a", seed=1, examples=300)
        assert found.returncode == 1, f"worker A did not find {MUTANT}:\n{found.stdout}\n{found.stderr}"
        shrunk = saved_steps(tmp_path / "a")
        corpus = keys_in(url)
        assert corpus > 0, "worker A wrote nothing to the shared corpus"

        replayed = fuzz_worker(url, tmp_path / "b", seed=7, examples=2)
        assert replayed.returncode == 1, f"worker B did not replay A's failure:\n{replayed.stdout}"
        assert saved_steps(tmp_path / "b") == shrunk, "worker B failed on other steps than A's shrunk failure"

        empty = url.rsplit("/", 1)[0] + "/1"  # another logical database on the same server: no corpus
        control = fuzz_worker(empty, tmp_path / "control", seed=7, examples=2)
        assert control.returncode == 0, f"without the corpus, B's command alone found it:\n{control.stdout}"

    with redis_server(data, persist=True) as url:
        assert keys_in(url) == corpus, "the corpus did not survive the restart"
        again = fuzz_worker(url, tmp_path / "c", seed=8, examples=2)
        assert again.returncode == 1, f"after the restart the corpus no longer replays the failure:\n{again.stdout}"
        assert saved_steps(tmp_path / "c") == shrunk


def test_without_persistence_a_restart_starts_an_empty_corpus(tmp_path: Path) -> None:
    """The contrast to the restart above: the corpus survives because the server persists, not by accident."""
    import redis

    data = tmp_path / "redis"
    data.mkdir()
    with redis_server(data, persist=False) as url:
        client = redis.Redis.from_url(url, socket_timeout=10)
        client.set(b"hypothesis-example", b"kept?")
        client.close()
    with redis_server(data, persist=False) as url:
        assert keys_in(url) == 0
