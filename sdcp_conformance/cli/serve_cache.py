"""``sdcp-conformance serve cache``: run the MLC as a process over HTTP/2 + TLS 1.3 with mTLS."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from urllib.parse import urlsplit

import click

from sdcp_conformance.cache.app import CacheApp
from sdcp_conformance.cache.store import MemoryStore, ObjectStore, SqliteStore
from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.transport import event_loops
from sdcp_conformance.transport.pki import load_pki
from sdcp_conformance.transport.server import H2Server, ServerConfig

READY_PREFIX = "serving MLC at "
"""The first line the command prints, followed by the base URI, once it accepts connections."""


def _tls_files(
    pki_dir: Path | None, party: str, cert: Path | None, key: Path | None, ca: Path | None
) -> tuple[Path, Path, Path, int | None]:
    """Certificate, key, CA and the port named in the party's base URI (``None`` without --pki)."""
    if pki_dir is not None:
        if cert or key or ca:
            raise click.UsageError("give either --pki or --cert/--key/--ca, not both")
        try:
            pki = load_pki(pki_dir)
            port = urlsplit(pki.base_uris[party]).port if party in pki.base_uris else None
            return pki.cert(party), pki.key(party), pki.ca_cert, port
        except InvalidArgument as exc:
            raise click.UsageError(str(exc)) from exc
    if cert is None or key is None or ca is None:
        raise click.UsageError("give --pki DIR, or all of --cert, --key and --ca")
    return cert, key, ca, None


async def _serve(app: CacheApp, config: ServerConfig) -> None:
    server = H2Server(app, config)
    await server.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    click.echo(READY_PREFIX + server.base_uri)
    try:
        await stop.wait()
    finally:
        await server.stop()


@click.command("cache")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=None,
    help="Port to listen on; default: the port of the party's base URI with --pki, else 0 (any).",
)
@click.option(
    "--pki",
    "pki_dir",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help="A PKI from `pki init`; the cache serves with the certificate of --party.",
)
@click.option("--party", default="cache", show_default=True, help="Party name in the PKI.")
@click.option("--cert", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--key", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--ca", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option(
    "--db",
    type=click.Path(dir_okay=False, path_type=Path),
    help="SQLite file to keep objects in across restarts (default: memory only).",
)
@click.option(
    "--no-fence-enforcement",
    is_flag=True,
    help="Play an MLC that does not enforce fences (P1-LOG-2); writers must read back.",
)
def serve_cache(
    host: str,
    port: int | None,
    pki_dir: Path | None,
    party: str,
    cert: Path | None,
    key: Path | None,
    ca: Path | None,
    db: Path | None,
    no_fence_enforcement: bool,
) -> None:
    """Serve the multi-level cache: objects by path, ETags, leases and commit-log fences."""
    cert_path, key_path, ca_path, party_port = _tls_files(pki_dir, party, cert, key, ca)
    chosen_port = port if port is not None else (party_port or 0)
    config = ServerConfig(cert_path, key_path, ca_path, host=host, port=chosen_port)
    store: ObjectStore = SqliteStore(db) if db is not None else MemoryStore()
    app = CacheApp(store, enforce_fences=not no_fence_enforcement)
    try:
        event_loops.run(_serve(app, config))
    finally:
        store.close()


__all__ = ["READY_PREFIX", "serve_cache"]
