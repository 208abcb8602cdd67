"""Starts the Node.js stand-in drafter of ``standin_node_drafter/``: an SDCP drafter the harness did not write.

Run: ``python -m tests.standins.standin_node_drafter --pki DIR --party drafter --router URI
--cache URI --model bigram-draft-near``, the arguments ``sdcp-conformance pki init DIR --iut drafter`` prints
for ``serve drafter`` (of whose models it serves the closed-form bigram one only); ``--install`` only installs
its npm packages. Its deadline for a verdict is :data:`PROPOSAL_TIMEOUT_S`: a target file that says so
(``[harness] proposal_timeout_s``) lets the harness run the case of a proposal never answered.

It is a drafter of its own, written in JavaScript from the draft and the profile without the reference drafter
(``standin_node_drafter/*.js``), and it passes the drafter suite; ``python -m tests.standins.mutants
--role drafter`` plants bugs in copies of it. It serves closed-form bigram draft models: their logits tables are
written to the cache once per model digest, and its configuration, as JSON, beside them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from sdcp_conformance.errors import SdcpConformanceError
from sdcp_conformance.models.registry import mock_model
from sdcp_conformance.transport.pki import load_pki
from tests.standins.node_packages import become_node, cache_root, failing_as, install, installed_or_said, write_once
from tests.standins.standin_node import logits_file

SOURCE = Path(__file__).resolve().parent / "standin_node_drafter"
SOURCES = ("package.json", "package-lock.json", "server.js", "protocol.js")
PROPOSAL_TIMEOUT_S = 2.0
"""How long the stand-in waits for a verdict before it resends the proposal (§6.9)."""
TIMINGS_MS = {
    # Every outgoing call has a deadline; leases outlive every retry of a proposal (P1-DRF-8).
    "call_timeout_ms": 5000, "proposal_timeout_ms": int(PROPOSAL_TIMEOUT_S * 1000), "output_timeout_ms": 10000,
    "status_timeout_ms": 2000, "resync_ms": 15000, "retry_window_ms": 45000, "backoff_ms": 100,
    "max_backoff_ms": 1000, "lease_ms": 60000, "status_ttl_ms": 3000, "capacity": 64,
}


def installed() -> Path:
    """A folder with the stand-in drafter's sources and its pinned npm packages, installed on first use."""
    return install(SOURCE, SOURCES, "standin-node-drafter")


def _slash(uri: str) -> str:
    return uri if uri.endswith("/") else uri + "/"


def configuration(pki_dir: Path, party: str, routers: Sequence[str], cache: str, model: str,
                  host: str | None) -> dict[str, object]:
    """What ``server.js`` reads from the file named on its command line."""
    pki = load_pki(pki_dir)
    info = mock_model(model)
    if info.closed_form != "bigram":
        raise SdcpConformanceError(f"{model}: the stand-in drafter serves closed-form bigram models only")
    return {
        "base_uri": pki.base_uris[party], "host": host, "cert": str(Path(pki.cert(party)).resolve()),
        "key": str(Path(pki.key(party)).resolve()), "ca": str(Path(pki.ca_cert).resolve()),
        "routers": [_slash(router) for router in routers], "cache": _slash(cache),
        "model": {"id": model, "model_sha256": info.model_sha256.hex(), "tokenizer_sha256": info.tokenizer_sha256.hex(),
                  "vocab_size": info.vocab_size, "logits": str(logits_file(model))},
        **TIMINGS_MS,
    }


def served_model(models: Sequence[str]) -> str:
    """The model it serves out of those ``serve drafter`` would serve: the first closed-form bigram one. The others
    (``ctx-draft-near``) are said on stderr: a target file listing them has the cases needing them fail, so its
    ``models`` must leave them out (those cases are then skipped)."""
    bigram = [model for model in models or ["bigram-draft-near"] if mock_model(model).closed_form == "bigram"]
    if not bigram:
        raise SdcpConformanceError(f"{', '.join(models)}: the stand-in drafter serves closed-form bigram models only")
    left = [model for model in models if model != bigram[0]]
    if left:
        print(f"standin_node_drafter: serves {bigram[0]} only, not {', '.join(left)}", file=sys.stderr)
    return bigram[0]


def configuration_file(config: dict[str, object]) -> Path:
    """The configuration written once into the cache, named by its content."""
    data = json.dumps(config, indent=1, sort_keys=True).encode()
    path = cache_root() / "standin-node-drafter-configs" / f"{hashlib.sha256(data).hexdigest()[:16]}.json"
    return write_once(path, lambda: data)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--install", action="store_true", help="Install the npm packages and exit.")
    parser.add_argument("--pki", type=Path, help="The PKI folder (`pki init DIR --iut drafter`).")
    parser.add_argument("--party", default="drafter")
    parser.add_argument("--router", action="append", default=[], help="A router's base URI (repeat).")
    parser.add_argument("--cache", help="The MLC's base URI.")
    parser.add_argument("--model", action="append", default=[],
                        help="A draft model (repeat); it serves the first closed-form bigram one (default "
                             "bigram-draft-near) and leaves the others out.")
    parser.add_argument("--host", default=None)
    args = parser.parse_args(argv)
    with failing_as("standin_node_drafter"):
        prepared = installed_or_said(installed, args.install)
        if prepared is None:
            return
        if args.pki is None or not args.router or args.cache is None:
            parser.error("--pki, --router and --cache are required")
        model = served_model(args.model)
        path = configuration_file(configuration(args.pki, args.party, args.router, args.cache, model, args.host))
    node, folder = prepared
    become_node(node, [str(folder / "server.js"), str(path)])


__all__ = ["PROPOSAL_TIMEOUT_S", "SOURCE", "SOURCES", "configuration", "configuration_file", "installed", "main",
           "served_model"]


if __name__ == "__main__":
    main()
