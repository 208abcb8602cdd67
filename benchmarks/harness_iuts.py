"""The verifiers bench_harness.py drives, and what it reads off a case: rounds, exchanges, CPU.

* the embedded reference verifier (in the harness's process, torch scoring on a worker thread), with its
  scoring passes timed;
* a verifier in its own process (the Node.js stand-in of ``tests.standins.standin_node``, the Python
  one of ``tests.standins.standin_verifier``, or the reference's ``serve verifier``), whose CPU time
  is read from ``/proc`` so it is never the harness's.

The harness's CPU is its own process's plus its rule-2 judge process's (``harness.rule2_judging``), read apart.
"""

from __future__ import annotations

import dataclasses
import os
import queue
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeVar

from sdcp_conformance.harness.role_spec import spec_of
from sdcp_conformance.harness.runner import CaseResult
from sdcp_conformance.harness.specs.verifier import VerifierEnvironment
from sdcp_conformance.harness.target import TargetConfig, load_target, render_target
from tests.standins.standin_verifier import READY_LINE

ROOT = Path(__file__).resolve().parents[1]
READY_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 20.0
_TICK = os.sysconf("SC_CLK_TCK")
T = TypeVar("T")


def cpu_of(pid: int) -> float:
    """User + system seconds a running process (all its threads) has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK  # utime, stime: fields 14 and 15 of proc(5)


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


class Child:
    """A verifier started as a separate process; ``ready()`` waits for its ``serving <uri>`` line."""

    def __init__(self, command: Sequence[str], log: Path) -> None:
        self._log = log.open("w")
        # From the checkout's root, where `python -m tests.standins.…` finds the stand-ins.
        self.process = subprocess.Popen(list(command), stdout=subprocess.PIPE, stderr=self._log, text=True, cwd=ROOT)
        self._lines: queue.Queue[str] = queue.Queue()
        assert self.process.stdout is not None
        threading.Thread(target=self._pump, args=(self.process.stdout,), daemon=True).start()

    def _pump(self, stream: IO[str]) -> None:
        for line in stream:
            self._lines.put(line)

    def ready(self) -> str:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            try:
                line = self._lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                raise RuntimeError(f"no {READY_LINE!r} line within {READY_TIMEOUT_S:.0f} s "
                                   f"(see {self._log.name})") from None
            if line.startswith(READY_LINE):
                return line[len(READY_LINE):].strip()
            if self.process.poll() is not None:
                raise RuntimeError(f"the verifier exited early (see {self._log.name})")

    def cpu_s(self) -> float:
        return cpu_of(self.process.pid)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=STOP_TIMEOUT_S)
        self._log.close()


def bigram_target(folder: Path) -> TargetConfig:
    """``pki init FOLDER --iut verifier``, with the target narrowed to the one model both verifiers serve."""
    _, path = spec_of("verifier").write_target(folder)
    target = dataclasses.replace(load_target(path), models=("bigram",))
    path.write_text(render_target(target, folder), encoding="utf-8")
    return load_target(path)


def node_standin_command(target: TargetConfig) -> list[str]:
    return [sys.executable, "-m", "tests.standins.standin_node", "--pki", str(target.pki),
            "--party", "verifier", "--router", target.router]


def standin_command(target: TargetConfig) -> list[str]:
    return [sys.executable, "-m", "tests.standins.standin_verifier", "--pki", str(target.pki),
            "--party", "verifier", "--router", target.router]


def reference_command(target: TargetConfig) -> list[str]:
    return [sys.executable, "-m", "sdcp_conformance.cli", "serve", "verifier", "--pki", str(target.pki),
            "--party", "verifier", "--router", target.router, "--model", "bigram"]


@dataclass
class ScoreTally:
    """The embedded reference's scoring passes: how many, how many items, and their time."""

    passes: int = 0
    items: int = 0
    wall_s: float = 0.0
    cpu_s: float = 0.0

    def since(self, earlier: ScoreTally) -> ScoreTally:
        return ScoreTally(self.passes - earlier.passes, self.items - earlier.items, self.wall_s - earlier.wall_s,
                          self.cpu_s - earlier.cpu_s)


def time_scoring(env: VerifierEnvironment) -> ScoreTally | None:
    """Wrap the embedded reference's models so every scoring pass is timed (its batchers call ``model.score``)."""
    app = env.embedded_app
    if app is None:
        return None
    tally = ScoreTally()
    for model in app.models.values():
        inner = model.score

        def timed(items: Any, inner: Any = inner) -> Any:
            started, cpu = time.perf_counter(), time.thread_time()
            try:
                return inner(items)
            finally:
                tally.passes += 1
                tally.items += len(items)
                tally.wall_s += time.perf_counter() - started
                tally.cpu_s += time.thread_time() - cpu

        setattr(model, "score", timed)  # noqa: B010 - an instance attribute shadows the method
    return tally


def exchanges(result: CaseResult) -> Counter[str]:
    """The case's HTTP exchanges by kind, from its transcript (the IUT's calls to the cache included)."""
    kinds: Counter[str] = Counter()
    for entry in result.transcript:
        path = entry.target.split("?", 1)[0]
        if entry.direction == "to-iut":
            kinds["proposal" if entry.method == "POST" and path.endswith("proposals") else "other to the IUT"] += 1
        elif entry.party == "cache":
            name = path.rsplit("/", 1)[-1]
            kind = "q_rows" if name.startswith("q-") else "log" if name.startswith("log-") else "object"
            kinds[f"{kind} {entry.method}"] += 1
        else:
            kinds[f"{entry.party} {entry.method}"] += 1
    return kinds


def verdicts(result: CaseResult) -> int:
    """Rounds: proposals the IUT answered with a verdict (200)."""
    return sum(1 for entry in result.transcript
               if entry.direction == "to-iut" and entry.method == "POST" and entry.target.endswith("proposals")
               and entry.status == 200)


@dataclass(frozen=True)
class Took:
    """What one measured piece of work cost."""

    wall_s: float
    cpu_s: float
    """The harness's CPU: its process's (the embedded reference's included, when it is the IUT) and its rule-2
    judge process's."""
    iut_cpu_s: float | None
    """The IUT process's CPU, when it has its own process."""
    scoring: ScoreTally | None
    """The embedded reference's scoring passes meanwhile."""
    judge_cpu_s: float = 0.0
    """Of :attr:`cpu_s`, the rule-2 judge process's share."""


class Meter:
    """Measures work against one environment; ``child`` is the IUT's process when it has its own."""

    def __init__(self, env: VerifierEnvironment, child: Child | None) -> None:
        self.env = env
        self.child = child
        self.scoring = time_scoring(env)

    async def measure(self, work: Awaitable[T]) -> tuple[T, Took]:
        judge_pid = self.env.judge_host().pid
        judge = cpu_of(judge_pid) if judge_pid is not None else 0.0
        wall, cpu = time.perf_counter(), time.process_time()
        iut = self.child.cpu_s() if self.child is not None else None
        scored = dataclasses.replace(self.scoring) if self.scoring is not None else None
        value = await work
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        iut_cpu = self.child.cpu_s() - iut if self.child is not None and iut is not None else None
        scoring = self.scoring.since(scored) if self.scoring is not None and scored is not None else None
        after = self.env.judge_host().pid
        judge_cpu = cpu_of(after) - (judge if after == judge_pid else 0.0) if after is not None else 0.0
        return value, Took(wall, cpu + judge_cpu, iut_cpu, scoring, judge_cpu)


__all__ = ["Child", "Meter", "ScoreTally", "Took", "bigram_target", "cpu_of", "exchanges", "load_average",
           "node_standin_command", "reference_command", "standin_command", "time_scoring", "verdicts"]
