"""The MLC stores: bytes, ETags that change with every write, leases on an injected clock, restarts."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from sdcp_conformance.cache.store import ObjectStore, SqliteStore
from sdcp_conformance.errors import InvalidArgument

ETAG_SHAPE = re.compile(r'^"g(\d+)-([0-9a-f]{16})"$')


def generation(etag: str) -> int:
    match = ETAG_SHAPE.match(etag)
    assert match is not None, etag
    return int(match.group(1))


def test_put_then_get_returns_the_bytes_and_a_strong_etag_over_them(store: ObjectStore) -> None:
    stored = store.put("/a", b"\x01\x02", lease_ms=None, now=0.0)
    got = store.get("/a", now=0.0)
    assert got is not None and got.data == b"\x01\x02"
    assert got.etag == stored.etag
    match = ETAG_SHAPE.match(got.etag)
    assert match is not None
    assert match.group(2) == hashlib.sha256(b"\x01\x02").hexdigest()[:16]


def test_missing_object_is_none(store: ObjectStore) -> None:
    assert store.get("/nothing", now=0.0) is None


def test_every_write_gets_a_new_etag_even_with_identical_bytes(store: ObjectStore) -> None:
    etags = [store.put("/a", b"same", lease_ms=None, now=0.0).etag for _ in range(3)]
    etags.append(store.put("/b", b"same", lease_ms=None, now=0.0).etag)
    assert len(set(etags)) == 4


def test_delete_removes_and_reports_whether_there_was_an_object(store: ObjectStore) -> None:
    store.put("/a", b"x", lease_ms=None, now=0.0)
    assert store.delete("/a") is True
    assert store.get("/a", now=0.0) is None
    assert store.delete("/a") is False


def test_object_without_lease_is_kept_until_deleted(store: ObjectStore) -> None:
    store.put("/a", b"x", lease_ms=None, now=0.0)
    assert store.get("/a", now=1e12) is not None


def test_leased_object_is_kept_for_its_lease_and_evicted_after(store: ObjectStore) -> None:
    store.put("/q", b"rows", lease_ms=1500, now=100.0)
    assert store.get("/q", now=101.499) is not None
    assert store.get("/q", now=101.5) is None
    assert store.paths() == []  # evicted, not only hidden


def test_a_running_lease_is_never_shortened_by_a_later_shorter_one(store: ObjectStore) -> None:
    store.put("/q", b"v1", lease_ms=10_000, now=0.0)
    store.put("/q", b"v2", lease_ms=1_000, now=1.0)
    got = store.get("/q", now=9.9)
    assert got is not None and got.data == b"v2"
    assert store.get("/q", now=10.0) is None


def test_a_longer_lease_extends_and_a_put_without_lease_makes_the_object_permanent(
    store: ObjectStore,
) -> None:
    store.put("/q", b"v1", lease_ms=1_000, now=0.0)
    store.put("/q", b"v2", lease_ms=5_000, now=0.5)
    assert store.get("/q", now=5.4) is not None
    store.put("/q", b"v3", lease_ms=None, now=5.4)
    got = store.get("/q", now=1e9)
    assert got is not None and got.lease_until is None


def test_an_expired_lease_is_not_carried_into_a_new_put(store: ObjectStore) -> None:
    store.put("/q", b"v1", lease_ms=10_000, now=0.0)
    stored = store.put("/q", b"v2", lease_ms=1_000, now=20.0)
    assert stored.lease_until == pytest.approx(21.0)


def test_negative_lease_is_refused(store: ObjectStore) -> None:
    with pytest.raises(InvalidArgument):
        store.put("/a", b"x", lease_ms=-1, now=0.0)


def test_sqlite_store_after_reopen_returns_every_object_with_its_etag_and_lease(
    tmp_path: Path,
) -> None:
    path = tmp_path / "cache.db"
    first = SqliteStore(path)
    written = {f"/obj/{i}": first.put(f"/obj/{i}", bytes([i]) * (i + 1), lease_ms=None, now=0.0) for i in range(5)}
    leased = first.put("/leased", b"L", lease_ms=60_000, now=0.0)
    first.delete("/obj/4")
    first.close()

    second = SqliteStore(path)
    try:
        for name, stored in written.items():
            got = second.get(name, now=1.0)
            if name == "/obj/4":
                assert got is None
                continue
            assert got is not None
            assert (got.data, got.etag, got.lease_until) == (stored.data, stored.etag, None)
        got_leased = second.get("/leased", now=59.0)
        assert got_leased is not None and got_leased.lease_until == leased.lease_until
        # The write counter survives too: no ETag handed out before is ever reused.
        new_etag = second.put("/obj/0", b"\x00", lease_ms=None, now=1.0).etag
        assert new_etag not in {stored.etag for stored in written.values()}
        old_generations = [generation(stored.etag) for stored in written.values()]
        assert generation(new_etag) > max(old_generations)
    finally:
        second.close()
