"""The reference verifier served as hypercorn serves an ASGI app on its default settings, as a separate process.

hypercorn 0.18 ends a connection after ``keep_alive_max_requests`` requests with h2's own ``close_connection()``:
GOAWAY(NO_ERROR) naming the last stream, the streams in flight abandoned, the next frame answered with
GOAWAY(PROTOCOL_ERROR). The misbehaving server's ``keepalive-limit`` mode does exactly that in front of the
reference verifier's app; ``bench_verdict_stability.py --goaway N`` certifies it through the target file
``pki init --iut verifier`` wrote, as a vendor would certify a verifier behind such a server.

    python benchmarks/keepalive_verifier.py --target certs/target.toml [--goaway-after 40]

Prints ``serving <base URI>`` when ready; stops on SIGTERM or Ctrl-C.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
from pathlib import Path

from sdcp_conformance.harness.target import load_target
from sdcp_conformance.reference.stack import READY_LINE
from sdcp_conformance.testing.misbehaving import MisbehavingServer, Mode
from sdcp_conformance.testing.targets import misbehaving_config, reference_app


async def serve(target_file: Path, every: int) -> None:
    target = load_target(target_file)
    async with reference_app(target) as app:
        config = misbehaving_config(target, Mode.KEEPALIVE_LIMIT, app, goaway_every=every)
        async with MisbehavingServer(config) as server:
            status = asyncio.create_task(app.report_status_forever())
            print(f"{READY_LINE}{target.base_uri}", flush=True)
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for signum in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(signum, stop.set)
            await stop.wait()
            status.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await status
            print(f"GOAWAYs sent: {server.stats.goaways}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", type=Path, required=True, help="the target file `pki init --iut verifier` wrote")
    parser.add_argument("--goaway-after", type=int, default=40, help="requests per connection before the GOAWAY")
    args = parser.parse_args()
    asyncio.run(serve(args.target, args.goaway_after))


if __name__ == "__main__":
    main()
