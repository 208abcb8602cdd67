"""Starts the Node.js stand-in router of ``standin_node_router/``: an SDCP router the harness did not write.

Run: ``python -m tests.standins.standin_node_router --pki DIR --party router --cache URI
--verifier URI ... --drafter URI=MODEL ...``, the arguments ``sdcp-conformance pki init DIR --iut router``
prints for ``serve router`` (so the two are interchangeable); ``--install`` only installs its npm packages.

It is a router of its own, written in JavaScript from the draft and the profile without the reference router
(``standin_node_router/*.js``; transport and CBOR like the stand-in verifier's), and it passes the router
suite. It exists to judge the judge: ``python -m tests.standins.mutants --role router`` plants bugs in copies of
it and certifies each, so the router suite is measured against code it was not written beside. MODEL is a mock
model id, resolved here to the SHA-256 of its weights (P1-HASH-1), or that digest in hex.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from pathlib import Path

from sdcp_conformance.errors import SdcpConformanceError
from sdcp_conformance.models.registry import mock_model
from tests.standins.node_packages import become_node, failing_as, install, installed_or_said

SOURCE = Path(__file__).resolve().parent / "standin_node_router"
SOURCES = ("package.json", "package-lock.json", "server.js", "router.js", "protocol.js", "links.js")
HEX_DIGEST = re.compile(r"[0-9a-fA-F]{64}")


def installed() -> Path:
    """A folder with the stand-in router's sources and its pinned npm packages, installed on first use."""
    return install(SOURCE, SOURCES, "standin-node-router")


def drafter_argument(spec: str) -> str:
    """``URI=MODEL`` with MODEL as the digest the stand-in compares with contracts (a mock model id resolved)."""
    uri, separator, model = spec.rpartition("=")
    if not separator or not uri:
        raise SdcpConformanceError(f"--drafter {spec!r}: expected URI=MODEL")
    digest = model if HEX_DIGEST.fullmatch(model) else mock_model(model).model_sha256.hex()
    return f"{uri}={digest}"


def arguments(argv: Sequence[str] | None = None) -> tuple[argparse.Namespace, list[str]]:
    """The parsed options and the command line of ``server.js``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--install", action="store_true", help="Install the npm packages and exit.")
    parser.add_argument("--pki", type=Path, help="The PKI folder (`pki init DIR --iut router`).")
    parser.add_argument("--party", default="router")
    parser.add_argument("--cache", help="The MLC's base URI.")
    parser.add_argument("--verifier", action="append", default=[], help="A verifier's base URI (repeat).")
    parser.add_argument("--drafter", action="append", default=[], help="URI=MODEL of a drafter (repeat).")
    parser.add_argument("--host", default="127.0.0.1")
    args = parser.parse_args(argv)
    if args.install:
        return args, []
    if args.pki is None or args.cache is None or not args.verifier or not args.drafter:
        parser.error("--pki, --cache, at least one --verifier and one --drafter are required")
    line = ["--pki", str(args.pki), "--party", args.party, "--cache", args.cache, "--host", args.host]
    for verifier in args.verifier:
        line += ["--verifier", verifier]
    for drafter in args.drafter:
        line += ["--drafter", drafter_argument(drafter)]
    return args, line


def main(argv: Sequence[str] | None = None) -> None:
    with failing_as("standin_node_router"):
        args, line = arguments(argv)
        prepared = installed_or_said(installed, args.install)
    if prepared is not None:
        node, folder = prepared
        become_node(node, [str(folder / "server.js"), *line])


__all__ = ["SOURCE", "SOURCES", "arguments", "drafter_argument", "installed", "main"]


if __name__ == "__main__":
    main()
