"""Rate of sequential 4 KB POSTs over HTTP/3 (H3Client → H3Server) against HTTP/2 (H2Client → H2Server).

Run: ``python benchmarks/bench_h3_transport.py [--requests N] [--repeat R]``. It mints a PKI in a temporary
folder and, in this process, serves a handler that answers 200 over each transport in turn, both with mutual
TLS, on ONE connection each, free loopback ports. The runs of the two transports are interleaved (H3, H2, H3, …),
so a change in the machine's load touches both alike; each connection is warmed up before it is timed. It prints
each transport's median requests/s and the ratio HTTP/3 : HTTP/2 (the figures in transport/H3_NOTES.md).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from sdcp_conformance.transport.h2client import H2Client
from sdcp_conformance.transport.h3_client import H3Client
from sdcp_conformance.transport.h3_server import H3Server
from sdcp_conformance.transport.pki import Pki, init_pki
from sdcp_conformance.transport.ports import loopback_base_uris, port_of
from sdcp_conformance.transport.server import H2Server, ServerConfig
from sdcp_conformance.transport.types import Request, Response

BODY = b"x" * 4096
WARM_UP = 20
TRANSPORTS: dict[str, tuple[Any, Any]] = {"HTTP/3": (H3Server, H3Client), "HTTP/2": (H2Server, H2Client)}


async def _ok(_request: Request) -> Response:
    return Response(200, b"ok")


async def rate(pki: Pki, server_class: Any, client_class: Any, requests: int) -> float:
    """Requests/s of ``requests`` sequential POSTs on one connection (after :data:`WARM_UP` untimed ones)."""
    server = server_class(_ok, ServerConfig(pki.cert("verifier"), pki.key("verifier"), pki.ca_cert,
                                            port=port_of(pki.base_uris["verifier"])))
    await server.start()
    try:
        async with client_class(server.base_uri, pki.cert("drafter-1"), pki.key("drafter-1"), pki.ca_cert) as client:
            for _ in range(WARM_UP):
                await client.request("POST", "proposals", BODY)
            started = time.perf_counter()
            for _ in range(requests):
                await client.request("POST", "proposals", BODY)
            return requests / (time.perf_counter() - started)
    finally:
        await server.stop()


async def measure(requests: int, repeat: int) -> None:
    with tempfile.TemporaryDirectory(prefix="sdcp-bench-h3-") as folder:
        pki = init_pki(Path(folder), loopback_base_uris(("verifier", "drafter-1")))
        rates: dict[str, list[float]] = {name: [] for name in TRANSPORTS}
        for _ in range(repeat):
            for name, (server_class, client_class) in TRANSPORTS.items():
                rates[name].append(await rate(pki, server_class, client_class, requests))
    medians = {name: statistics.median(found) for name, found in rates.items()}
    for name, found in rates.items():
        print(f"{name}: {medians[name]:,.0f} requests/s (median of {', '.join(f'{r:,.0f}' for r in found)})")
    print(f"ratio HTTP/3 : HTTP/2 = {medians['HTTP/3'] / medians['HTTP/2']:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=200, help="timed POSTs per run (default 200)")
    parser.add_argument("--repeat", type=int, default=3, help="interleaved runs of each transport (default 3)")
    options = parser.parse_args()
    asyncio.run(measure(options.requests, options.repeat))


if __name__ == "__main__":
    main()
