"""Rate of small POSTs through the harness's HTTP/2 stack, against h2load on the same server.

Run: ``python benchmarks/bench_transport.py [--requests N] [--repeat R] [--httpx-requests N]``. It mints a PKI in
a temporary folder, starts the h2 server (sdcp_conformance.transport.server)
in a child process with two listeners (one requiring client certificates for
our clients, one without client authentication for h2load, which has no
client-certificate option), and measures on ONE HTTP/2 connection each:

* httpx (SdcpClient's transport) and the lean H2Client, sequentially and with
  32 concurrent streams;
* h2load (Debian package nghttp2-client) with ``-c 1 -m 1`` and ``-c 1 -m 32``.

It prints requests/s and each client's ratio to h2load at the same concurrency.
Target (issue 3): the harness path at >= 50% of h2load's rate with 32 streams.

Every rate is the median of ``--repeat`` runs (3 by default). The runs of the
three clients are interleaved (h2load, H2Client, httpx, h2load, …), so a change
in the machine's load during the benchmark touches all of them alike; a short
h2load run warms the server up first, and each Python client warms its
connection up before it is timed. httpx, several times slower, is timed on
``--httpx-requests`` requests (4,000 by default) to keep the benchmark short.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx

from sdcp_conformance.protocol import codec
from sdcp_conformance.protocol.problems import SDCP_MEDIA_TYPE
from sdcp_conformance.transport.h2client import H2Client
from sdcp_conformance.transport.pki import Pki, init_pki, load_pki
from sdcp_conformance.transport.server import H2Server, ServerConfig
from sdcp_conformance.transport.tls import client_ssl_context
from sdcp_conformance.transport.types import Request, Response

PARTIES = {"server": "https://127.0.0.1:1/server/", "harness": "https://127.0.0.1:2/harness/"}
BODY = codec.encode({"session": bytes(16), "epoch": 1, "round": 7, "tokens": list(range(8))})
REPLY = codec.encode({"accepted": 4, "committed": 12, "digest": bytes(32)})
STREAMS = 32
TIMEOUT = 30.0


async def _handler(request: Request) -> Response:
    return Response(200, REPLY, [("content-type", SDCP_MEDIA_TYPE)])


# --------------------------------------------------------------------------- server process


async def _serve(pki_dir: Path) -> None:
    pki = load_pki(pki_dir)
    cert, key = pki.cert("server"), pki.key("server")
    servers = [
        H2Server(_handler, ServerConfig(cert, key, pki.ca_cert, require_client_cert=mtls)) for mtls in (True, False)
    ]
    for server in servers:
        await server.start()
    print(json.dumps({"mtls": servers[0].port, "open": servers[1].port}), flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)  # until EOF
    for server in servers:
        await server.stop()


# --------------------------------------------------------------------------- clients


async def _drive(send: Callable[[], Awaitable[int]], total: int, streams: int) -> float:
    """Requests/s of ``total`` sends, ``streams`` at a time; every answer must be 200."""

    async def worker(count: int) -> None:
        for _ in range(count):
            if await send() != 200:
                raise RuntimeError("non-200 answer")

    shares = [total // streams + (i < total % streams) for i in range(streams)]
    start = time.perf_counter()
    await asyncio.gather(*(worker(n) for n in shares))
    return total / (time.perf_counter() - start)


async def _httpx_rate(pki: Pki, port: int, total: int, streams: int) -> float:
    ctx = client_ssl_context(pki.cert("harness"), pki.key("harness"), pki.ca_cert)
    url = f"https://127.0.0.1:{port}/proposals"
    headers = {"content-type": SDCP_MEDIA_TYPE}
    limits = httpx.Limits(max_connections=1)
    async with httpx.AsyncClient(http2=True, verify=ctx, timeout=TIMEOUT, limits=limits) as c:

        async def send() -> int:
            return (await c.post(url, content=BODY, headers=headers)).status_code

        await _drive(send, 200, streams)  # warm-up: handshake, first stream
        return await _drive(send, total, streams)


async def _h2client_rate(pki: Pki, port: int, total: int, streams: int) -> float:
    base = f"https://127.0.0.1:{port}/"
    headers = {"content-type": SDCP_MEDIA_TYPE}
    async with H2Client(base, pki.cert("harness"), pki.key("harness"), pki.ca_cert) as c:

        async def send() -> int:
            return (await c.request("POST", "proposals", BODY, headers=headers)).status

        await _drive(send, 200, streams)
        rate = await _drive(send, total, streams)
        if c.connections_opened != 1:
            raise RuntimeError("H2Client used more than one connection")
        return rate


def _h2load_rate(port: int, total: int, streams: int, body_file: Path) -> float:
    command = [
        "h2load", "-n", str(total), "-c", "1", "-m", str(streams), "-d", str(body_file),
        "-H", f"content-type: {SDCP_MEDIA_TYPE}", f"https://127.0.0.1:{port}/proposals",
    ]  # fmt: skip
    out = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True).stdout
    succeeded = re.search(r"requests: .* (\d+) succeeded", out)
    if succeeded is None or int(succeeded.group(1)) != total:
        raise RuntimeError(f"h2load did not succeed on every request:\n{out}")
    match = re.search(r"finished in [\d.]+\w+, ([\d.]+) req/s", out)
    if match is None:
        raise RuntimeError(f"unexpected h2load output:\n{out}")
    return float(match.group(1))


# --------------------------------------------------------------------------- main


def _measure(pki: Pki, ports: dict[str, int], args: argparse.Namespace, work: Path) -> None:
    total, repeat = args.requests, args.repeat
    body_file = work / "body.cbor"
    body_file.write_bytes(BODY)
    _h2load_rate(ports["open"], min(total, 2000), STREAMS, body_file)  # warm-up: the server process
    rows = []
    for streams in (1, STREAMS):
        runs: dict[str, list[float]] = {"h2load": [], "H2Client": [], "httpx": []}
        for _ in range(repeat):  # interleaved, so that load changes touch every client alike
            runs["h2load"].append(_h2load_rate(ports["open"], total, streams, body_file))
            runs["H2Client"].append(asyncio.run(_h2client_rate(pki, ports["mtls"], total, streams)))
            if args.httpx_requests > 0:
                runs["httpx"].append(asyncio.run(_httpx_rate(pki, ports["mtls"], args.httpx_requests, streams)))
        spread = "  ".join(f"{name} " + "/".join(f"{r:.0f}" for r in rates) for name, rates in runs.items() if rates)
        print(f"runs at {streams} stream(s), req/s: {spread}", flush=True)
        median = {name: statistics.median(rates) if rates else float("nan") for name, rates in runs.items()}
        rows.append((streams, median["h2load"], median["H2Client"], median["httpx"]))
    print(
        f"{total} small POSTs ({len(BODY)} B in, {len(REPLY)} B out) on one HTTP/2 connection "
        f"(httpx: {args.httpx_requests}); median of {repeat} interleaved runs"
    )
    print(f"{'streams':>7} {'h2load/s':>10} {'H2Client/s':>11} {'ratio':>6} {'httpx/s':>9} {'ratio':>6}")
    for streams, h2load, lean, via_httpx in rows:
        print(
            f"{streams:>7} {h2load:>10.0f} {lean:>11.0f} {lean / h2load:>6.2f} "
            f"{via_httpx:>9.0f} {via_httpx / h2load:>6.2f}"
        )
    ratio = rows[-1][2] / rows[-1][1]
    verdict = "met" if ratio >= 0.5 else "NOT met"
    print(f"target (H2Client >= 0.50 x h2load at {STREAMS} streams): {verdict} ({ratio:.2f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20000, help="requests per run of h2load and H2Client")
    parser.add_argument("--httpx-requests", type=int, default=4000, help="requests per httpx run (0: skip httpx)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; the median is reported")
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(_serve(args.serve))
        return
    if shutil.which("h2load") is None:
        sys.exit("h2load not found: apt-get install -y nghttp2-client")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        pki = init_pki(work / "pki", PARTIES)
        child = subprocess.Popen(
            [sys.executable, __file__, "--serve", str(work / "pki")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert child.stdout is not None
            ports = json.loads(child.stdout.readline())
            _measure(pki, ports, args, work)
        finally:
            assert child.stdin is not None
            child.stdin.close()
            child.wait(timeout=30)


if __name__ == "__main__":
    main()
