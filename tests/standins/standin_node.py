"""Starts the fast stand-in verifier of ``standin_node/`` (Node.js, its HTTP/2 in C): configuration and install.

Run: ``python -m tests.standins.standin_node --pki DIR --party verifier --router URI`` (the PKI and
router URI that ``sdcp-conformance pki init DIR --iut verifier`` prints), like
:mod:`~tests.standins.standin_verifier`; ``--install`` only installs its npm package and exits.

Why a second stand-in (issue 16): the Python one spends as much CPU per round on HTTP/2 as the harness does,
so against it the benchmark measures the two together. This one serves a round in a fraction of that, so the
harness's own limit shows. It is a verifier of its own, written from the draft and the profile in JavaScript
(``standin_node/*.js``), judged by the harness like any other; it serves the ``bigram`` closed form only.

This module prepares what the Node.js process needs and then becomes it (``exec``), so that the process the
caller started, its PID and its CPU time, are the verifier's:

* its modules and npm packages (``cbor-x``, ``cbor2``, pinned by ``standin_node/package-lock.json``) go into a
  cache folder (``$XDG_CACHE_HOME/sdcp-conformance``), copied and installed there once per version of the
  sources, under a file lock, never into the package folder;
* the models' logits tables are written there once per model digest (V x V binary64);
* the configuration travels in the environment (:data:`CONFIG_ENV`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlsplit

from sdcp_conformance.models.bigram import BIGRAM_TARGET, bigram_table
from sdcp_conformance.models.registry import mock_model
from sdcp_conformance.transport.pki import load_pki
from tests.standins.node_packages import (
    StandinUnavailable,
    become_node,
    cache_root,
    failing_as,
    install,
    installed_or_said,
    node_binary,
    write_once,
)

SOURCE = Path(__file__).resolve().parent / "standin_node"
CONFIG_ENV = "SDCP_STANDIN_CONFIG"
NODE_ARGS_ENV = "SDCP_STANDIN_NODE_ARGS"
"""Extra options for ``node`` (say ``--cpu-prof --cpu-prof-dir=DIR`` to profile the stand-in)."""
CALL_TIMEOUT_MS = 10_000
"""Every call the stand-in makes to the MLC or the router has this deadline."""
OUTPUT_WAIT_MS = 2_000
ROUND_WAIT_MS = 20_000
STATUS_TTL_MS = 5_000


SOURCES = ("package.json", "package-lock.json", "server.js", "protocol.js", "session.js", "links.js")
"""What the stand-in's folder holds: its npm manifest and lockfile, and its modules (ECMAScript modules, which
resolve their imports from ``node_modules`` beside them, not from ``NODE_PATH``)."""


def installed() -> Path:
    """A folder with the stand-in's sources and its pinned npm packages, installed on first use."""
    return install(SOURCE, SOURCES, "standin-node")


def logits_file(model_id: str) -> Path:
    """The model's table as V x V little-endian binary64, written once per model digest."""
    path = cache_root() / "standin-node-models" / f"{mock_model(model_id).model_sha256.hex()}.f64"
    return write_once(path, lambda: bigram_table(model_id).astype("<f8").tobytes())


def configuration(pki_dir: Path, party: str, router_uri: str, *, host: str,
                  pinned_load: int | None) -> dict[str, object]:
    """What ``server.js`` reads from :data:`CONFIG_ENV`."""
    pki = load_pki(pki_dir)
    info = mock_model(BIGRAM_TARGET)
    router = router_uri if router_uri.endswith("/") else router_uri + "/"
    return {
        "base_uri": pki.base_uris[party], "host": host, "router": router, "routers": [router],
        "cert": str(pki.cert(party)), "key": str(pki.key(party)), "ca": str(pki.ca_cert),
        "models": [{"target": info.model_sha256.hex(), "tokenizer": info.tokenizer_sha256.hex(),
                    "vocab": info.vocab_size, "logits": str(logits_file(BIGRAM_TARGET))}],
        "pinned_load": pinned_load, "call_timeout_ms": CALL_TIMEOUT_MS, "output_wait_ms": OUTPUT_WAIT_MS,
        "round_wait_ms": ROUND_WAIT_MS, "status_ttl_ms": STATUS_TTL_MS,
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--install", action="store_true", help="Install the npm package and exit.")
    parser.add_argument("--pki", type=Path, help="The PKI folder (`pki init DIR --iut verifier`).")
    parser.add_argument("--party", default="verifier", help="This verifier's party in the PKI.")
    parser.add_argument("--router", help="The router's base URI (P1-TLS-2, P1-ID-2).")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--pin-load", type=int, default=None, choices=range(101), metavar="0..100",
                        help="Report this load instead of the measured one.")
    args = parser.parse_args(argv)
    with failing_as("standin_node"):
        prepared = installed_or_said(installed, args.install)
        if prepared is None:
            return
        if args.pki is None or args.router is None:
            parser.error("--pki and --router are required")
        config = configuration(args.pki, args.party, args.router, host=args.host, pinned_load=args.pin_load)
    if urlsplit(str(config["base_uri"])).port is None:
        sys.exit("standin_node: the party's base URI names no port")
    node, folder = prepared
    extra = os.environ.get(NODE_ARGS_ENV, "").split()
    become_node(node, [*extra, str(folder / "server.js")], {**os.environ, CONFIG_ENV: json.dumps(config)})


__all__ = ["CONFIG_ENV", "NODE_ARGS_ENV", "SOURCE", "SOURCES", "StandinUnavailable", "cache_root", "configuration",
           "installed", "logits_file", "main", "node_binary"]


if __name__ == "__main__":
    main()
