"""A minimal, fast stand-in verifier: the reference's session machine and HTTP layer on the bigram closed form.

Run: ``python -m tests.standins.standin_verifier --pki DIR --party verifier --router URI``
(the PKI and router URI that ``sdcp-conformance pki init DIR --iut verifier`` prints). It serves the verifier
resources of draft §5.1 Table 1 for the ``bigram`` mock model only, over the project's HTTP/2 server, and
prints ``serving <base URI>`` once it listens; SIGTERM or SIGINT stops it.

Why it exists (issue 16): to measure how fast the harness drives rounds, the IUT must cost next to nothing.
The protocol logic is the reference verifier's own: its sans-I/O session machine (§6.1–§6.9,
:class:`~sdcp_conformance.reference.verifier.session.VerifierSession`) behind its HTTP layer
(:class:`~sdcp_conformance.reference.verifier.app.VerifierApp`), so its verdicts are the reference's; only
the target model differs. The ``bigram`` checkpoints are Llama networks whose logits at a position are
exactly ``table[last_token]`` (``models/bigram.py``), so §6.3's "Scoring: the verifier computes the target
distributions p[1..M+1] for the positions following the committed prefix" is a table lookup here, with the
values the torch runtime computes (every entry is k/16, exact in float32).

No torch is imported (a test checks it in the child), and scoring runs on the event loop instead of a
worker thread: a lookup is cheaper than the thread hop. The cache and the router are reached with the lean
HTTP/2 client (:class:`~sdcp_conformance.transport.origins.H2Origins`).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import signal
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import numpy.typing as npt

from sdcp_conformance.errors import SdcpConformanceError
from sdcp_conformance.models.bigram import BIGRAM_TARGET, VOCAB_SIZE, bigram_table
from sdcp_conformance.models.registry import mock_model
from sdcp_conformance.protocol.codec import encode
from sdcp_conformance.protocol.messages import Event
from sdcp_conformance.protocol.problems import SDCP_MEDIA_TYPE
from sdcp_conformance.reference.links import MlcCache
from sdcp_conformance.reference.verifier.app import VerifierApp, VerifierConfig
from sdcp_conformance.reference.verifier.ports import ScoreItem, TargetModel
from sdcp_conformance.transport import event_loops
from sdcp_conformance.transport.origins import H2Origins
from sdcp_conformance.transport.pki import load_pki
from sdcp_conformance.transport.server import H2Server, ServerConfig

READY_LINE = "serving "
"""Printed before the base URI once the server listens (the same line as ``reference.stack.READY_LINE``,
which is not imported here because ``reference.stack`` pulls torch)."""

ROUTER_TIMEOUT_S = 10.0
"""Every call to the router has this deadline (events and status reports)."""


class ClosedFormBigram:
    """The ``bigram`` target as a :class:`~sdcp_conformance.reference.verifier.ports.TargetModel`: row lookups.

    The answer for an item is the logits after the last context token and after each proposed token
    (``len(proposed) + 1`` rows), which for a bigram model depend on those tokens alone.
    """

    def __init__(self, model_id: str = BIGRAM_TARGET) -> None:
        info = mock_model(model_id)
        self.vocab_size = info.vocab_size
        self.model_sha256 = info.model_sha256
        self.tokenizer_sha256 = info.tokenizer_sha256
        self._table = bigram_table(model_id)
        if self._table.shape != (VOCAB_SIZE, VOCAB_SIZE) or info.vocab_size != VOCAB_SIZE:
            raise SdcpConformanceError(f"{model_id}: the manifest's V {info.vocab_size} is not the closed form's")

    def score(self, items: Sequence[ScoreItem]) -> list[npt.NDArray[np.float64]]:
        return [self._table[[item.context[-1], *item.proposed]] for item in items]

    def forget(self, session: bytes) -> None:
        """Nothing is kept per session."""


class InlineScorer:
    """The app's batcher interface (``score``, ``forget``, ``queued``, ``in_flight``, ``batch_sizes``), scoring at
    once.

    Nothing ever queues, so the measured load is 0 (a target for this verifier says ``load = "reported"``,
    or pins the load with ``--pin-load``).
    """

    def __init__(self, model: TargetModel) -> None:
        self._model = model
        self.in_flight = 0
        self.queued = 0
        self.batch_sizes: list[int] = []

    async def score(self, item: ScoreItem) -> object:
        return self._model.score([item])[0]

    def forget(self, session: bytes) -> None:
        self._model.forget(session)  # no pass ever runs beside it: scoring is inline (D-VER-10 holds trivially)


class OriginsRouterLink:
    """The verifier's calls to its router (events §6.5.2, status §6.1) over the lean HTTP/2 client."""

    def __init__(self, origins: H2Origins, router_uri: str, own_uri: str) -> None:
        self._origins = origins
        self._router = router_uri if router_uri.endswith("/") else router_uri + "/"
        self._instance = base64.urlsafe_b64encode(own_uri.encode()).rstrip(b"=").decode()  # P1-RTR-1

    async def post_event(self, event: Event) -> None:
        await self._send("POST", "events", event.to_cbor())

    async def put_status(self, status: Mapping[str, Any]) -> None:
        await self._send("PUT", f"instances/{self._instance}/status", encode(dict(status)))

    async def _send(self, method: str, path: str, body: bytes) -> None:
        reply = await self._origins.request(method, self._router + path, body,
                                            headers={"content-type": SDCP_MEDIA_TYPE}, timeout=ROUTER_TIMEOUT_S)
        if not 200 <= reply.status < 300:
            raise SdcpConformanceError(f"{method} {path} at the router answered {reply.status}")


def standin_app(base_uri: str, router_uri: str, origins: H2Origins, *, pinned_load: int | None = None,
                output_wait_s: float = 2.0) -> VerifierApp:
    """The reference verifier's app on the closed-form model, its scoring inline, its links on ``origins``.

    ``output_wait_s`` is the §6.7 server-chosen wait of GET output (P1-OUT-1), as short as the embedded
    reference's so that cases reading past the end do not wait long.
    """
    config = VerifierConfig(base_uri=base_uri, routers=frozenset({router_uri}), pinned_load=pinned_load,
                            output_wait_s=output_wait_s, round_wait_s=20.0)
    model = ClosedFormBigram()
    app = VerifierApp(config, model, MlcCache(origins), OriginsRouterLink(origins, router_uri, base_uri))
    app.batchers = {model.model_sha256: InlineScorer(model)}
    return app


async def serve(pki_dir: Path, party: str, router_uri: str, *, host: str = "127.0.0.1",
                pinned_load: int | None = None, stop: asyncio.Event | None = None) -> None:
    """Serve until ``stop`` is set (or SIGTERM / SIGINT), reporting status to the router meanwhile."""
    pki = load_pki(pki_dir)
    base_uri = pki.base_uris[party]
    cert, key = pki.cert(party), pki.key(party)
    origins = H2Origins(cert, key, pki.ca_cert)
    app = standin_app(base_uri, router_uri, origins, pinned_load=pinned_load)
    server = H2Server(app, ServerConfig(cert=cert, key=key, ca=pki.ca_cert, host=host,
                                        port=urlsplit(base_uri).port or 443))
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await server.start()
    status = asyncio.create_task(app.report_status_forever())
    print(f"{READY_LINE}{base_uri}", flush=True)
    try:
        await stop.wait()
    finally:
        status.cancel()
        await asyncio.gather(status, return_exceptions=True)
        await server.stop()
        await app.close()
        await origins.aclose()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pki", required=True, type=Path, help="The PKI folder (`pki init DIR --iut verifier`).")
    parser.add_argument("--party", default="verifier", help="This verifier's party in the PKI.")
    parser.add_argument("--router", required=True, help="The router's base URI (P1-TLS-2, P1-ID-2).")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--pin-load", type=int, default=None, choices=range(101), metavar="0..100",
                        help="Report this load instead of the measured one (always 0 here).")
    args = parser.parse_args(argv)
    event_loops.run(serve(args.pki, args.party, args.router, host=args.host, pinned_load=args.pin_load))


__all__ = ["READY_LINE", "ClosedFormBigram", "InlineScorer", "OriginsRouterLink", "main", "serve", "standin_app"]


if __name__ == "__main__":
    main()
