"""The transport bound of bench_harness.py: h2load's requests/s on the project's HTTP/2 server.

The server is bench_transport.py's (``--serve``: a trivial handler, in a child process, with a listener that asks
for no client certificate, since h2load cannot present one); h2load keeps one connection and a given number of
streams in flight. Runs at every level are interleaved, so a change of the machine's load touches them alike, and
the server process's CPU per request is read from ``/proc``.

Interleaved with them, the project's own client (``H2Client``, with its client certificate, on the server's mTLS
listener) at the same levels: two Python processes doing nothing but HTTP/2, which is what a round's exchanges are
when both parties are written in Python (the harness's cache and client; the stand-in's server and client), so the
rate of rounds that no Python harness can pass against a Python IUT on this machine.
"""

from __future__ import annotations

import asyncio
import json
import re
import statistics
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bench_transport import _h2client_rate
from harness_iuts import cpu_of

from sdcp_conformance.protocol import codec
from sdcp_conformance.protocol.problems import SDCP_MEDIA_TYPE
from sdcp_conformance.transport.pki import init_pki

TRANSPORT_SCRIPT = Path(__file__).resolve().parent / "bench_transport.py"
PROPOSAL = codec.encode({"session": bytes(16), "epoch": 1, "round": 7, "drafter": "https://127.0.0.1:1/drafter-1/",
                         "base": 12, "base_digest": bytes(32), "tokens": [5, 9, 14, 20]})
"""The body h2load posts: a proposal's size."""


def _h2load(port: int, total: int, streams: int, body: Path) -> float:
    command = ["h2load", "-n", str(total), "-c", "1", "-m", str(streams), "-d", str(body),
               "-H", f"content-type: {SDCP_MEDIA_TYPE}", f"https://127.0.0.1:{port}/proposals"]
    out = subprocess.run(command, capture_output=True, text=True, timeout=300, check=True).stdout
    done = re.search(r"requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded", out)
    rate = re.search(r"finished in [\d.]+\w+, ([\d.]+) req/s", out)
    if done is None or int(done.group(1)) != total or rate is None:
        raise RuntimeError(f"h2load did not answer every request:\n{out}")
    return float(rate.group(1))


@dataclass
class TransportBound:
    rates: dict[int, float] = field(default_factory=dict)
    """Median h2load requests/s by streams in flight on one connection."""
    server_cpu_ms: dict[int, float] = field(default_factory=dict)
    """The server process's CPU per request, by streams."""

    runs: dict[int, list[tuple[float, float]]] = field(default_factory=dict)
    python_rates: dict[int, float] = field(default_factory=dict)
    """Median requests/s of the project's H2Client on the same server, by streams."""
    python_runs: dict[int, list[float]] = field(default_factory=dict)

    def merged(self, other: TransportBound) -> TransportBound:
        """Both measurements' runs together (one before the verifiers were driven, one after)."""
        levels = {*self.runs, *other.runs}
        return _bound({s: [*self.runs.get(s, []), *other.runs.get(s, [])] for s in levels},
                      {s: [*self.python_runs.get(s, []), *other.python_runs.get(s, [])] for s in levels})

    def rate(self, streams: int) -> float:
        return self.rates[_level(self.rates, streams)]

    def python_rate(self, streams: int) -> float:
        return self.python_rates[_level(self.python_rates, streams)]


def _level(rates: dict[int, float], streams: int) -> int:
    return min(rates, key=lambda measured: (abs(measured - streams), measured))


def measure_transport(work: Path, streams: Sequence[int], total: int, repeat: int) -> TransportBound:
    """h2load against the project's HTTP/2 server (bench_transport.py's trivial handler) in a child process."""
    work.mkdir(parents=True, exist_ok=True)
    pki = init_pki(work / "transport-pki", {"server": "https://127.0.0.1:1/server/",
                                            "harness": "https://127.0.0.1:2/harness/"})
    python_runs: dict[int, list[float]] = {s: [] for s in streams}
    body = work / "proposal.cbor"
    body.write_bytes(PROPOSAL)
    child = subprocess.Popen([sys.executable, str(TRANSPORT_SCRIPT), "--serve", str(pki.directory)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdin is not None
        ports = json.loads(child.stdout.readline())
        port = ports["open"]  # h2load cannot present a client certificate
        _h2load(port, min(total, 2000), 8, body)  # warm-up
        runs: dict[int, list[tuple[float, float]]] = {s: [] for s in streams}
        for _ in range(repeat):
            for s in streams:  # interleaved, so a change of load touches every level alike
                cpu = cpu_of(child.pid)
                rate = _h2load(port, total, s, body)
                runs[s].append((rate, 1000 * (cpu_of(child.pid) - cpu) / total))
                python_runs[s].append(asyncio.run(_h2client_rate(pki, ports["mtls"], total, s)))
    finally:
        if child.stdin is not None:
            child.stdin.close()
        child.wait(timeout=30)
    return _bound(runs, python_runs)


def _bound(runs: dict[int, list[tuple[float, float]]], python_runs: dict[int, list[float]]) -> TransportBound:
    return TransportBound({s: statistics.median(rate for rate, _ in measured) for s, measured in runs.items()},
                          {s: statistics.median(ms for _, ms in measured) for s, measured in runs.items()}, runs,
                          {s: statistics.median(measured) for s, measured in python_runs.items()}, python_runs)


__all__ = ["PROPOSAL", "TransportBound", "measure_transport"]
