"""The MLC over real HTTP/2 + TLS 1.3 + mTLS: appends racing on the network, faults, restarts."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from sdcp_conformance.cache.app import CacheApp
from sdcp_conformance.cache.append import (
    AppendStatus,
    CacheTransportError,
    append_record,
)
from sdcp_conformance.cache.clients import HttpxObjectClient
from sdcp_conformance.cache.commit_log import CommitRecord, FenceRecord, encode_record
from sdcp_conformance.cache.store import MemoryStore, ObjectStore, SqliteStore
from sdcp_conformance.cache.transcript import Transcript
from sdcp_conformance.transport.pki import Pki, init_pki
from sdcp_conformance.transport.server import RunningServer, ServerConfig, run_server_in_thread
from sdcp_conformance.transport.tls import client_ssl_context
from sdcp_conformance.transport.types import TransportFault
from tests.cache.helpers import run
from tests.cache.test_cache_append import as_item, canonical, cbor_items, check_race_transcript

PARTIES = {
    "cache": "https://127.0.0.1:9445/cache/",
    "verifier": "https://127.0.0.1:9442/verifier/",
    "router": "https://127.0.0.1:9441/router/",
}
DIGEST = b"\x44" * 32
TIMEOUT = 10.0


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return init_pki(tmp_path_factory.mktemp("cache-pki"), PARTIES)


@contextlib.contextmanager
def serve(pki: Pki, app: CacheApp) -> Iterator[RunningServer]:
    config = ServerConfig(pki.cert("cache"), pki.key("cache"), pki.ca_cert)
    with run_server_in_thread(app, config, timeout=TIMEOUT) as running:
        yield running


def http_client(pki: Pki, party: str = "verifier") -> httpx.AsyncClient:
    ctx = client_ssl_context(pki.cert(party), pki.key(party), pki.ca_cert)
    return httpx.AsyncClient(http1=False, http2=True, verify=ctx, timeout=TIMEOUT)


def commit(round_: int, epoch: int = 1) -> CommitRecord:
    return CommitRecord(epoch, round_, (round_ % 7,), round_, DIGEST)


def test_put_and_get_over_tls_carry_bytes_etag_and_the_peer_identity(pki: Pki) -> None:
    app = CacheApp(transcript=Transcript())

    async def scenario(base: str) -> None:
        async with http_client(pki, "router") as client:
            put = await client.put(base + "objects/a", content=b"\x01\x02")
            assert put.status_code == 201
            got = await client.get(base + "objects/a")
            assert (got.status_code, got.content) == (200, b"\x01\x02")
            assert got.headers["etag"] == put.headers["etag"]
            stale = await client.put(base + "objects/a", content=b"x", headers={"if-match": '"0"'})
            assert stale.status_code == 412

    with serve(pki, app) as server:
        run(scenario(server.base_uri))
    assert app.transcript is not None
    assert {entry.peer for entry in app.transcript.entries} == {PARTIES["router"]}


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_eight_writers_racing_over_the_network_lose_nothing(pki: Pki, tmp_path: Path, kind: str) -> None:
    store: ObjectStore = MemoryStore() if kind == "memory" else SqliteStore(tmp_path / "c.db")
    app = CacheApp(store, transcript=Transcript())
    writers, each = 8, 4

    async def writer(uri: str, index: int, start: asyncio.Barrier) -> list[AppendStatus]:
        async with http_client(pki) as client:  # one connection per writer
            objects = HttpxObjectClient(client, timeout=TIMEOUT)
            await objects.get(uri + "-warm-up")  # connect before the race starts
            await start.wait()  # every writer is connected: they now race for real
            return [
                (await append_record(objects, uri, commit(100 * index + k), max_conflicts=10_000)).status
                for k in range(each)
            ]

    async def scenario(uri: str) -> list[list[AppendStatus]]:
        start = asyncio.Barrier(writers)
        return list(await asyncio.gather(*(writer(uri, i, start) for i in range(writers))))

    try:
        with serve(pki, app) as server:
            uri = server.base_uri + "logs/race"
            results = run(scenario(uri))
        assert all(s is AppendStatus.APPENDED for statuses in results for s in statuses)
        stored = store.get("/logs/race", now=0.0)
        assert stored is not None
        final = cbor_items(stored.data)
        expected = [as_item(commit(100 * i + k)) for i in range(writers) for k in range(each)]
        assert Counter(map(canonical, final)) == Counter(map(canonical, expected))
        assert len(final) == writers * each
        assert app.transcript is not None
        check_race_transcript(app.transcript.entries)
    finally:
        store.close()


def test_a_fenced_append_over_the_network_is_refused_with_409(pki: Pki) -> None:
    app = CacheApp()

    async def scenario(uri: str) -> None:
        async with http_client(pki, "router") as router_http, http_client(pki) as verifier_http:
            router = HttpxObjectClient(router_http)
            verifier = HttpxObjectClient(verifier_http)
            assert (await append_record(verifier, uri, commit(1))).status is AppendStatus.APPENDED
            current = await verifier.get(uri)
            assert (await append_record(router, uri, FenceRecord(2))).status is AppendStatus.APPENDED
            # The old verifier writes with the ETag it read after the fence: 409, not 412.
            after = await verifier.get(uri)
            body = after.body + encode_record(commit(2))
            refused = await verifier.put(uri, body, if_match=after.etag)
            assert refused.status == 409
            assert current.etag != after.etag
            outcome = await append_record(verifier, uri, commit(2))
            assert (outcome.status, outcome.fence) == (AppendStatus.FENCED, FenceRecord(2))

    with serve(pki, app) as server:
        run(scenario(server.base_uri + "logs/fenced"))


@pytest.mark.parametrize("fault", [TransportFault.RESET_STREAM, TransportFault.CLOSE_CONNECTION])
def test_an_injected_transport_fault_reaches_the_client_as_a_transport_error(pki: Pki, fault: TransportFault) -> None:
    app = CacheApp(transcript=Transcript())

    async def scenario(uri: str) -> None:
        async with http_client(pki) as client:
            objects = HttpxObjectClient(client)
            assert (await objects.put(uri, b"rows")).status == 201
            app.faults.transport_gets("/q/1", 1, fault=fault)
            with pytest.raises(CacheTransportError):
                await objects.get(uri)
        async with http_client(pki) as client:  # a fresh connection after a closed one
            assert (await HttpxObjectClient(client).get(uri)).body == b"rows"

    with serve(pki, app) as server:
        run(scenario(server.base_uri + "q/1"))
    assert app.transcript is not None
    assert [entry.transport_fault for entry in app.transcript.entries] == [None, fault.value, None]


def test_a_restarted_sqlite_backed_server_returns_every_acknowledged_object(pki: Pki, tmp_path: Path) -> None:
    database = tmp_path / "mlc.db"
    acknowledged: dict[str, tuple[bytes, str]] = {}

    async def write(base: str) -> None:
        async with http_client(pki) as client:
            objects = HttpxObjectClient(client)
            for i in range(6):
                reply = await objects.put(f"{base}obj/{i}", bytes([i]) * 100, lease_ms=3_600_000)
                assert reply.status == 201 and reply.etag is not None
                acknowledged[f"obj/{i}"] = (bytes([i]) * 100, reply.etag)
            for round_ in range(1, 4):
                outcome = await append_record(objects, base + "logs/s", commit(round_))
                assert outcome.status is AppendStatus.APPENDED and outcome.etag is not None
            final = await objects.get(base + "logs/s")
            acknowledged["logs/s"] = (final.body, str(final.etag))

    async def read(base: str) -> dict[str, tuple[bytes, str]]:
        async with http_client(pki) as client:
            objects = HttpxObjectClient(client)
            found = {}
            for name in acknowledged:
                reply = await objects.get(base + name)
                assert reply.status == 200, name
                found[name] = (reply.body, str(reply.etag))
            outcome = await append_record(objects, base + "logs/s", commit(4))
            assert outcome.status is AppendStatus.APPENDED
            return found

    first = SqliteStore(database)
    try:
        with serve(pki, CacheApp(first)) as server:
            run(write(server.base_uri))
    finally:
        first.close()
    second = SqliteStore(database)
    try:
        with serve(pki, CacheApp(second)) as server:
            assert run(read(server.base_uri)) == acknowledged
    finally:
        second.close()
