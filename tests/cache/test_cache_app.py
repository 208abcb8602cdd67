"""The MLC handler called directly: P1-MLC-1 objects and ETags, P1-MLC-3 leases, P1-LOG-2/3 logs."""

from __future__ import annotations

from pathlib import Path

import cbor2
import pytest

from sdcp_conformance.cache.app import CacheApp
from sdcp_conformance.cache.commit_log import CommitRecord, FenceRecord, encode_record
from sdcp_conformance.cache.store import ObjectStore, SqliteStore
from sdcp_conformance.transport.types import Request
from tests.cache.conftest import FakeClock
from tests.cache.helpers import LOG, problem_type, request, run

STALE_EPOCH = "urn:ietf:params:sdcp:problem:sdcp-stale-epoch"
DIGEST = b"\x11" * 32


def commit_bytes(epoch: int, round_: int) -> bytes:
    # Written with cbor2, not the code under test; key order does not matter to the cache.
    record = {"epoch": epoch, "round": round_, "emitted": [9], "committed": round_, "digest": DIGEST}
    return bytes(cbor2.dumps(record))


def fence_bytes(epoch: int) -> bytes:
    return bytes(cbor2.dumps({"epoch": epoch}))


@pytest.fixture
def app(store: ObjectStore, clock: FakeClock) -> CacheApp:
    return CacheApp(store, clock=clock)


def test_get_of_a_missing_object_is_404(app: CacheApp) -> None:
    response = run(app(request("GET", "/none")))
    assert response.status == 404
    assert problem_type(response) == "about:blank"


def test_put_creates_201_then_get_returns_bytes_and_the_same_etag(app: CacheApp) -> None:
    created = run(app(request("PUT", "/obj", b"\x00\x01\x02")))
    assert created.status == 201
    got = run(app(request("GET", "/obj")))
    assert (got.status, got.body) == (200, b"\x00\x01\x02")
    assert got.header("etag") == created.header("etag") is not None
    head = run(app(request("HEAD", "/obj")))
    assert (head.status, head.body, head.header("etag")) == (200, b"", created.header("etag"))
    assert head.header("content-length") == "3"


def test_put_over_an_existing_object_is_204_with_a_new_etag(app: CacheApp) -> None:
    first = run(app(request("PUT", "/obj", b"a")))
    second = run(app(request("PUT", "/obj", b"a")))
    assert second.status == 204
    assert second.header("etag") not in (None, first.header("etag"))


def test_if_match_succeeds_only_on_the_current_etag(app: CacheApp) -> None:
    """P1-MLC-1: "PUT with If-Match succeeds only if the ETag still matches (else 412)"."""
    etag = run(app(request("PUT", "/obj", b"v1"))).header("etag")
    assert etag is not None
    ok = run(app(request("PUT", "/obj", b"v2", {"If-Match": etag})))
    assert ok.status == 204
    stale = run(app(request("PUT", "/obj", b"v3", {"If-Match": etag})))
    assert stale.status == 412
    assert stale.header("etag") == ok.header("etag")
    assert run(app(request("GET", "/obj"))).body == b"v2"
    weak = run(app(request("PUT", "/obj", b"v4", {"If-Match": f"W/{ok.header('etag')}"})))
    assert weak.status == 412  # If-Match compares strongly (RFC 9110 §13.1.1)
    listed = run(app(request("PUT", "/obj", b"v5", {"If-Match": f'"x", {ok.header("etag")}'})))
    assert listed.status == 204


def test_if_match_on_a_missing_object_is_412(app: CacheApp) -> None:
    assert run(app(request("PUT", "/obj", b"v", {"If-Match": "*"}))).status == 412
    assert run(app(request("GET", "/obj"))).status == 404


def test_if_none_match_star_creates_only_once(app: CacheApp) -> None:
    """P1-LOG-3: "The first append creates it with If-None-Match: *"."""
    assert run(app(request("PUT", LOG, fence_bytes(1), {"If-None-Match": "*"}))).status == 201
    again = run(app(request("PUT", LOG, fence_bytes(2), {"If-None-Match": "*"})))
    assert again.status == 412
    assert run(app(request("GET", LOG))).body == fence_bytes(1)


def test_conditional_get_with_the_current_etag_is_304(app: CacheApp) -> None:
    etag = run(app(request("PUT", "/obj", b"v"))).header("etag")
    assert etag is not None
    assert run(app(request("GET", "/obj", headers={"If-None-Match": etag}))).status == 304
    assert run(app(request("GET", "/obj", headers={"If-None-Match": '"other"'}))).status == 200


def test_delete_removes_and_honours_if_match(app: CacheApp) -> None:
    etag = run(app(request("PUT", "/obj", b"v"))).header("etag")
    assert run(app(request("DELETE", "/obj", headers={"If-Match": '"nope"'}))).status == 412
    assert run(app(request("DELETE", "/obj", headers={"If-Match": str(etag)}))).status == 204
    assert run(app(request("GET", "/obj"))).status == 404
    assert run(app(request("DELETE", "/obj"))).status == 404


def test_unknown_methods_get_405_with_allow(app: CacheApp) -> None:
    response = run(app(request("POST", "/obj", b"x")))
    assert response.status == 405
    assert response.header("allow") == "GET, HEAD, PUT, DELETE"


def test_objects_are_named_by_path_and_the_query_is_ignored(app: CacheApp) -> None:
    run(app(request("PUT", "/a/b", b"ab")))
    with_query = Request("GET", "/a/b", "x=1", (), b"", None)
    assert run(app(with_query)).body == b"ab"
    assert run(app(request("GET", "/a"))).status == 404


def test_lease_keeps_the_object_that_long_and_no_longer(app: CacheApp, clock: FakeClock) -> None:
    """P1-MLC-3: "the MLC keeps the object at least that long"."""
    assert run(app(request("PUT", "/q", b"rows", {"SDCP-Lease": "2000"}))).status == 201
    clock.advance(1.999)
    assert run(app(request("GET", "/q"))).status == 200
    clock.advance(0.001)
    assert run(app(request("GET", "/q"))).status == 404


def test_object_without_lease_outlives_any_clock(app: CacheApp, clock: FakeClock) -> None:
    run(app(request("PUT", "/p", b"prompt")))
    clock.advance(10**9)
    assert run(app(request("GET", "/p"))).status == 200


@pytest.mark.parametrize("value", ["-5", "1.5", "soon", "", "١٠"])
def test_malformed_lease_is_400_and_stores_nothing(app: CacheApp, value: str) -> None:
    response = run(app(request("PUT", "/q", b"rows", {"SDCP-Lease": value})))
    assert response.status == 400
    assert run(app(request("GET", "/q"))).status == 404


# ---------------------------------------------------------------------- fences (P1-LOG-2)


def _seed_fenced_log(app: CacheApp) -> str:
    body = commit_bytes(1, 1) + fence_bytes(2)
    etag = run(app(request("PUT", LOG, body, {"If-None-Match": "*"}))).header("etag")
    assert etag is not None
    return etag


def test_enforcing_cache_answers_409_to_a_record_below_the_fence(app: CacheApp) -> None:
    """P1-LOG-2: "answers 409 to a PUT whose new record's epoch is below the highest fence"."""
    etag = _seed_fenced_log(app)
    body = commit_bytes(1, 1) + fence_bytes(2)
    refused = run(app(request("PUT", LOG, body + commit_bytes(1, 2), {"If-Match": etag})))
    assert refused.status == 409
    assert problem_type(refused) == STALE_EPOCH
    lower_fence = run(app(request("PUT", LOG, body + fence_bytes(1), {"If-Match": etag})))
    assert lower_fence.status == 409
    assert run(app(request("GET", LOG))).body == body
    accepted = run(app(request("PUT", LOG, body + commit_bytes(2, 2), {"If-Match": etag})))
    assert accepted.status == 204


def test_enforcing_cache_refuses_a_rewrite_that_would_erase_the_fence(app: CacheApp) -> None:
    etag = _seed_fenced_log(app)
    rewrite = commit_bytes(1, 1) + commit_bytes(1, 2)
    response = run(app(request("PUT", LOG, rewrite, {"If-Match": etag})))
    assert response.status == 409
    assert problem_type(response) == STALE_EPOCH


def test_412_is_answered_before_the_fence_check(app: CacheApp) -> None:
    _seed_fenced_log(app)
    body = commit_bytes(1, 1) + fence_bytes(2) + commit_bytes(1, 2)
    assert run(app(request("PUT", LOG, body, {"If-Match": '"stale"'}))).status == 412


def test_non_enforcing_cache_stores_the_stale_record_after_the_fence(app: CacheApp) -> None:
    etag = _seed_fenced_log(app)
    app.enforce_fences = False
    body = commit_bytes(1, 1) + fence_bytes(2) + commit_bytes(1, 2)
    assert run(app(request("PUT", LOG, body, {"If-Match": etag}))).status == 204
    assert run(app(request("GET", LOG))).body == body


def test_fences_are_enforced_on_the_records_the_app_itself_encodes(app: CacheApp) -> None:
    old = encode_record(CommitRecord(4, 9, (1, 2), 20, DIGEST)) + encode_record(FenceRecord(5))
    etag = run(app(request("PUT", LOG, old))).header("etag")
    new = old + encode_record(CommitRecord(4, 10, (3,), 21, DIGEST))
    assert run(app(request("PUT", LOG, new, {"If-Match": str(etag)}))).status == 409


def test_non_log_objects_are_never_fenced(app: CacheApp) -> None:
    run(app(request("PUT", "/q", b"\x00\x00\x80\x3f" * 4)))
    assert run(app(request("PUT", "/q", b"\x00" * 3))).status == 204


def test_a_reopened_sqlite_store_serves_every_acknowledged_object(tmp_path: Path) -> None:
    database = tmp_path / "mlc.db"
    first = CacheApp(SqliteStore(database))
    acknowledged = {}
    for i in range(4):
        response = run(first(request("PUT", f"/obj/{i}", bytes([i]) * 10)))
        assert response.status == 201
        acknowledged[f"/obj/{i}"] = (bytes([i]) * 10, response.header("etag"))
    log = commit_bytes(1, 1) + fence_bytes(2)
    acknowledged[LOG] = (log, run(first(request("PUT", LOG, log))).header("etag"))
    first.store.close()

    second = CacheApp(SqliteStore(database))
    try:
        for path, (body, etag) in acknowledged.items():
            got = run(second(request("GET", path)))
            assert (got.status, got.body, got.header("etag")) == (200, body, etag)
        # The fence survives the restart and is still enforced.
        log_etag = str(acknowledged[LOG][1])
        stale = run(second(request("PUT", LOG, log + commit_bytes(1, 2), {"If-Match": log_etag})))
        assert stale.status == 409
    finally:
        second.store.close()
