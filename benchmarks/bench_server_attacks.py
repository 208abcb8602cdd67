"""The project's HTTP/2 server under attack: its RSS growth and a well-behaved client's p99, attack by attack.

Three processes, so that none measures the others' work: the server (the
reference roles' :class:`~sdcp_conformance.transport.server.H2Server` with
its default :class:`~sdcp_conformance.transport.limits.ServerLimits`), the
attacker (raw frames, :mod:`sdcp_conformance.testing.raw_h2`), and this one,
the well-behaved client: sequential ``POST proposals`` rounds on
:class:`~sdcp_conformance.transport.h2client.H2Client`, timed one by one.
The server's RSS is sampled from ``/proc/<pid>/status`` through each attack;
its peak is reset before each one (``clear_refs``), so "RSS growth" is the
attack's. Targets (issue 12): growth ≤ 64 MiB, p99 ≤ 250 ms.

    python benchmarks/bench_server_attacks.py [--seconds 6] [--only rapid-reset,ping]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from h2.errors import ErrorCodes
from h2.settings import SettingCodes

from sdcp_conformance.testing.raw_h2 import RawH2
from sdcp_conformance.transport.exchange import Timeouts
from sdcp_conformance.transport.h2client import H2Client
from sdcp_conformance.transport.pki import init_pki, load_pki
from sdcp_conformance.transport.tls import client_ssl_context

RSS_TARGET_MIB, P99_TARGET_MS = 64.0, 250.0
MIB = 1 << 20
KIB = 1 << 10

# --------------------------------------------------------------------------- the server process


async def _serve(pki_dir: str, limits: list[str]) -> None:
    from sdcp_conformance.transport.server import H2Server, ServerConfig
    from sdcp_conformance.transport.types import Request, Response

    pki = load_pki(Path(pki_dir))
    server: H2Server

    async def handler(request: Request) -> Response:
        if request.path == "/stats":
            stats = dict(vars(server.stats), buffered=server.buffered)
            return Response(200, json.dumps(stats).encode(), [("content-type", "application/json")])
        return Response(200, b"verdict:" + str(len(request.body)).encode(), [("content-type", "application/sdcp+cbor")])

    from sdcp_conformance.transport.limits import ServerLimits

    overrides = {name: float(value) if "." in value else int(value)
                 for name, value in (item.split("=", 1) for item in limits)}
    config = ServerConfig(pki.cert("verifier"), pki.key("verifier"), pki.ca_cert, limits=ServerLimits(**overrides))
    server = H2Server(handler, config)
    await server.start()
    print(f"READY {server.port}", flush=True)
    await asyncio.Event().wait()


# --------------------------------------------------------------------------- the attacks (attacker process)

Attack = Callable[[Callable[[], Awaitable[RawH2]], float], Awaitable[str]]


async def _flood(connect: Callable[[], Awaitable[RawH2]], until: float, frames: Callable[[RawH2, int], list]) -> str:
    """Flood on a connection until the server closes it, then again on a new one, until the deadline."""
    loop, calm, rounds = asyncio.get_running_loop(), 0, 0
    while loop.time() < until:
        raw = await connect()
        try:
            batch = 0
            while loop.time() < until and not raw.received.closed:
                try:
                    await raw.send(frames(raw, batch))
                except (ConnectionError, OSError):
                    break
                batch += 1
                await raw.read_until(lambda r: r.closed, timeout_s=0.001)
            await raw.read_until(lambda r: r.closed, timeout_s=1.0)
            calm += raw.received.goaway_code == "ENHANCE_YOUR_CALM"
            rounds += 1
        finally:
            await raw.close()
    return f"{rounds} connections, {calm} closed with ENHANCE_YOUR_CALM"


def _rapid_reset(raw: RawH2, batch: int) -> list:
    frames = []
    for i in range(50):
        stream_id = 2 * (batch * 50 + i) + 1
        frames += [raw.request(stream_id, "POST", "/proposals", end_stream=True), raw.rst(stream_id, ErrorCodes.CANCEL)]
    return frames


def _made_you_reset(raw: RawH2, batch: int) -> list:
    frames = []
    for i in range(50):
        stream_id = 2 * (batch * 50 + i) + 1
        frames += [raw.request(stream_id, "POST", "/proposals"), raw.window_update(stream_id, (1 << 31) - 1)]
    return frames


def _empty_data(raw: RawH2, batch: int) -> list:
    opening = [raw.request(1, "POST", "/proposals")] if batch == 0 else []
    return opening + [raw.data(1) for _ in range(100)]


FLOODS: dict[str, Callable[[RawH2, int], list]] = {
    "rapid-reset": _rapid_reset,
    "settings-flood": lambda raw, batch: [raw.settings() for _ in range(100)],
    "ping-flood": lambda raw, batch: [raw.ping((batch * 100 + i).to_bytes(8, "big")) for i in range(100)],
    "empty-data-flood": _empty_data,
    "made-you-reset": _made_you_reset,
}


Step = Callable[[RawH2], Awaitable[None]]


async def _hold(connect: Callable[[], Awaitable[RawH2]], until: float, count: int, start: Step,
                tick: Step | None = None) -> str:
    """``count`` connections doing ``start`` and then ``tick`` every second until the deadline (reopened if cut)."""
    loop = asyncio.get_running_loop()
    cut = 0

    async def one() -> None:
        nonlocal cut
        while loop.time() < until:
            raw = await connect()
            try:
                await start(raw)
                while loop.time() < until and not raw.received.closed:
                    if tick is not None:
                        try:
                            await tick(raw)
                        except (ConnectionError, OSError):
                            break
                    await raw.read_until(lambda r: r.closed, timeout_s=min(1.0, max(0.0, until - loop.time())))
                cut += raw.received.closed
            except (ConnectionError, OSError):
                cut += 1
            finally:
                await raw.close()
            await asyncio.sleep(min(1.0, max(0.0, until - loop.time())))  # a held connection that was cut comes back

    await asyncio.gather(*(one() for _ in range(count)))
    return f"{count} connections held, cut {cut} times"


async def _drip(raw: RawH2) -> None:
    await raw.send([raw.request(1, "POST", "/proposals", content_length=1 << 20)])


async def _drip_tick(raw: RawH2) -> None:
    await raw.send([raw.data(1, b"\x00")])


async def _open_header(raw: RawH2) -> None:
    await raw.settle()
    await raw.send([raw.open_header_block(1, raw.request(1, "POST", "/proposals").data[:3])])


async def _idle(raw: RawH2) -> None:
    await raw.settle()


async def _zero_window(raw: RawH2) -> None:
    """128 streams whose responses can never be sent: the client's window is 0 (SETTINGS_INITIAL_WINDOW_SIZE)."""
    await raw.send([raw.settings({SettingCodes.INITIAL_WINDOW_SIZE: 0})])
    await raw.send([raw.request(2 * i + 1, "GET", "/proposals", end_stream=True) for i in range(128)])


async def _big_uploads(raw: RawH2) -> None:
    """64 uploads declaring 12 MiB each, sent as far as the server's flow control lets them, never ended."""
    await raw.settle()
    await raw.send([raw.request(2 * i + 1, "PUT", "/objects/q", content_length=12 * MIB) for i in range(64)])
    chunk = bytes(16 * KIB)
    # The whole connection window the server advertised, spread over the streams; then whatever it credits.
    window = _window(raw)
    sent = 0
    while sent + len(chunk) <= window:
        stream_id = 2 * ((sent // len(chunk)) % 64) + 1
        await raw.send([raw.data(stream_id, chunk)])
        sent += len(chunk)


def _window(raw: RawH2) -> int:
    from hyperframe.frame import WindowUpdateFrame

    return 65535 + sum(f.window_increment for f in raw.received.frames
                       if isinstance(f, WindowUpdateFrame) and f.stream_id == 0)


async def _oversized_frame(raw: RawH2) -> None:
    await raw.send([raw.request(1, "POST", "/proposals")])
    header = ((1 << 24) - 1).to_bytes(3, "big") + b"\x00\x00" + (1).to_bytes(4, "big")
    await raw.send_bytes(header + bytes(64 * KIB))


async def _over_limit(raw: RawH2) -> None:
    """A declared 270 MB upload: the server answers 413 and resets at once; the attacker sends on anyway."""
    await raw.settle()
    await raw.send([raw.request(1, "PUT", "/objects/big", content_length=270 * 10**6)])
    chunk = bytes(16 * KIB)
    for _ in range(64):
        await raw.send([raw.data(1, chunk)])


HOLDS: dict[str, tuple[int, Step, Step | None]] = {
    "drip-body": (10, _drip, _drip_tick),
    "open-header-blocks": (50, _open_header, None),
    "idle-connections": (300, _idle, None),
    "zero-window-streams": (32, _zero_window, None),
    "big-unfinished-uploads": (2, _big_uploads, None),
    "oversized-frames": (32, _oversized_frame, None),
    "over-limit-upload": (4, _over_limit, None),
}
ATTACKS = ["none", *FLOODS, *HOLDS]


async def _attack(name: str, port: int, pki_dir: str, seconds: float) -> None:
    pki = load_pki(Path(pki_dir))
    context = client_ssl_context(pki.cert("router"), pki.key("router"), pki.ca_cert)

    async def connect() -> RawH2:
        return await RawH2.open("127.0.0.1", port, context)

    until = asyncio.get_running_loop().time() + seconds
    print("STARTED", flush=True)
    if name in FLOODS:
        flood = FLOODS[name]
        outcome = await _flood(connect, until, flood)
    elif name in HOLDS:
        count, start, tick = HOLDS[name]
        outcome = await _hold(connect, until, count, start, tick)
    else:
        await asyncio.sleep(seconds)  # the baseline: no attack for the same time
        outcome = "no attack"
    print(f"DONE {outcome}", flush=True)


# --------------------------------------------------------------------------- the orchestrator (this process)


def _status(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise KeyError(field)


async def _measure(name: str, server_pid: int, port: int, pki_dir: str, seconds: float) -> dict[str, object]:
    pki = load_pki(Path(pki_dir))
    client = H2Client(f"https://127.0.0.1:{port}/", pki.cert("drafter-1"), pki.key("drafter-1"), pki.ca_cert,
                      timeouts=Timeouts(connect=5, read=5, total=5), max_attempts=1)
    await client.request("POST", "proposals", b"warm-up")
    counted = json.loads((await client.request("GET", "stats")).body)
    before = _status(server_pid, "VmRSS")
    Path(f"/proc/{server_pid}/clear_refs").write_text("5")  # peak := current
    attacker = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--role", "attack", "--attack", name, "--port", str(port), "--pki", pki_dir,
        "--seconds", str(seconds), stdout=asyncio.subprocess.PIPE)
    assert attacker.stdout is not None
    _place(attacker.pid, set(sorted(os.sched_getaffinity(0))), niceness=10)
    await attacker.stdout.readline()  # STARTED
    latencies, errors = [], 0
    loop = asyncio.get_running_loop()
    until = loop.time() + seconds
    while loop.time() < until:
        started = time.perf_counter()
        try:
            response = await client.request("POST", "proposals", b"\xa1\x61r\x01")
            ok = response.status == 200
        except Exception:
            ok = False
        latencies.append(time.perf_counter() - started)
        errors += not ok
    outcome = (await attacker.stdout.readline()).decode().removeprefix("DONE ").strip()
    await attacker.wait()
    stats = _delta(json.loads((await client.request("GET", "stats")).body), counted)
    await client.aclose()
    latencies.sort()
    p99 = latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))] * 1000
    return {"attack": name, "rss_growth_mib": _status(server_pid, "VmHWM") - before, "p99_ms": p99,
            "p50_ms": statistics.median(latencies) * 1000, "rounds": len(latencies), "errors": errors,
            "outcome": outcome, "calm": stats["enhance_your_calm"], "timed_out": stats["timed_out"],
            "frame_size_refused": stats["frame_size_refused"], "bodies_refused": stats["bodies_refused"],
            "bodies_timed_out": stats["bodies_timed_out"]}


def _delta(after: dict[str, object], before: dict[str, object]) -> dict[str, object]:
    """What the server counted during one attack (its counters run over the whole benchmark)."""
    delta: dict[str, object] = {}
    for key, value in after.items():
        old = before.get(key)
        if isinstance(value, dict):
            old_map = old if isinstance(old, dict) else {}
            delta[key] = {k: v - old_map.get(k, 0) for k, v in value.items() if v - old_map.get(k, 0)}
        elif isinstance(value, int) and isinstance(old, int):
            delta[key] = value - old
        else:
            delta[key] = value
    return delta


def _place(pid: int, cpus: set[int], niceness: int = 0) -> None:
    """Keep the server on a core of its own and the attacker below the measuring client: on a small machine
    the three would otherwise measure each other's CPU, not the server's limits."""
    with contextlib.suppress(OSError, AttributeError):
        os.sched_setaffinity(pid, cpus)
    if niceness:
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, pid, niceness)


async def _with_fresh_server(name: str, folder: str, limits: list[str], seconds: float) -> dict[str, object]:
    """One attack against a server process of its own: memory an earlier attack left free in the heap would
    otherwise hide this one's growth."""
    server = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--role", "serve", "--pki", folder, *(f"--limit={item}" for item in limits),
        stdout=asyncio.subprocess.PIPE)
    try:
        assert server.stdout is not None
        port = int((await server.stdout.readline()).decode().split()[1])
        cpus = sorted(os.sched_getaffinity(0))
        if len(cpus) >= 2:
            _place(server.pid, {cpus[0]})
            _place(os.getpid(), set(cpus[1:]))
        return await _measure(name, server.pid, port, folder, seconds)
    finally:
        server.terminate()
        await server.wait()


async def _main(seconds: float, only: list[str], limits: list[str]) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-attacks-") as folder:
        parties = {name: f"https://127.0.0.1:9{i}00/{name}/" for i, name in enumerate(("verifier", "router",
                                                                                        "drafter-1"), 1)}
        init_pki(Path(folder), parties, subject="verifier")
        rows = [await _with_fresh_server(name, folder, limits, seconds) for name in only]
    shown = ", ".join(limits) or "default ServerLimits"
    print(f"server attacks, {seconds:g} s each, {shown}; targets: RSS growth <= {RSS_TARGET_MIB:g} MiB, "
          f"p99 <= {P99_TARGET_MS:g} ms; a fresh server per attack on its own core, the attacker at nice 10 "
          f"(os.cpu_count()={os.cpu_count()})")
    print(f"{'attack':24} {'RSS +MiB':>9} {'p50 ms':>8} {'p99 ms':>8} {'rounds':>7} {'errors':>6}  server / attacker")
    for row in rows:
        flags = "" if row["rss_growth_mib"] <= RSS_TARGET_MIB and row["p99_ms"] <= P99_TARGET_MS else "  <-- over"
        detail = (f"calm={row['calm']} timeouts={row['timed_out']} frame-size={row['frame_size_refused']} "
                  f"413/503={row['bodies_refused']} 408={row['bodies_timed_out']} | {row['outcome']}")
        print(f"{row['attack']:24} {row['rss_growth_mib']:9.1f} {row['p50_ms']:8.1f} {row['p99_ms']:8.1f} "
              f"{row['rounds']:7d} {row['errors']:6d}  {detail}{flags}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--role", choices=["bench", "serve", "attack"], default="bench")
    parser.add_argument("--seconds", type=float, default=6.0, help="length of each attack")
    parser.add_argument("--only", default=",".join(ATTACKS), help="comma-separated attacks")
    parser.add_argument("--attack", default="none")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--pki", default="")
    parser.add_argument("--limit", action="append", default=[], metavar="NAME=VALUE",
                        help="override a ServerLimits member (default: the defaults), e.g. --limit idle_timeout_s=5")
    args = parser.parse_args()
    if args.role == "serve":
        asyncio.run(_serve(args.pki, args.limit))
    elif args.role == "attack":
        asyncio.run(_attack(args.attack, args.port, args.pki, args.seconds))
    else:
        asyncio.run(_main(args.seconds, [name for name in args.only.split(",") if name], args.limit))


if __name__ == "__main__":
    main()
