"""The conditional append of P1-LOG-1 against the real handler and against scripted caches."""

from __future__ import annotations

import asyncio
import io
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import cbor2
import pytest

from sdcp_conformance.cache.app import CacheApp
from sdcp_conformance.cache.append import (
    AppendStatus,
    CacheReply,
    CacheTransportError,
    ConditionalAppendError,
    append_record,
)
from sdcp_conformance.cache.clients import HandlerObjectClient
from sdcp_conformance.cache.commit_log import (
    CommitRecord,
    FenceRecord,
    LogRecord,
    encode_record,
    fence_preceding,
    parse_log,
)
from sdcp_conformance.cache.transcript import Exchange, Transcript
from tests.cache.helpers import LOG, request, run

DIGEST = b"\x22" * 32
URI = "https://127.0.0.1:1/logs/session-1"  # the in-process client uses only the path


def commit(epoch: int, round_: int) -> CommitRecord:
    return CommitRecord(epoch, round_, (round_ % 50,), round_, DIGEST)


def cbor_items(data: bytes) -> list[Any]:
    """Decode a CBOR sequence with cbor2 directly, independently of the code under test."""
    stream = io.BytesIO(data)
    decoder = cbor2.CBORDecoder(stream)
    items = []
    while stream.tell() < len(data):
        items.append(decoder.decode())
    return items


def canonical(item: object) -> tuple[tuple[str, object], ...]:
    assert isinstance(item, dict)
    return tuple(sorted((key, repr(value)) for key, value in item.items()))


def as_item(record: LogRecord) -> dict[str, object]:
    if isinstance(record, FenceRecord):
        return {"epoch": record.epoch}
    return {
        "epoch": record.epoch,
        "round": record.round,
        "emitted": list(record.emitted),
        "committed": record.committed,
        "digest": record.digest,
    }


def new_app(*, enforce: bool = True) -> CacheApp:
    return CacheApp(enforce_fences=enforce, transcript=Transcript())


def log_bytes(app: CacheApp) -> bytes:
    response = run(app(request("GET", LOG)))
    assert response.status == 200
    return response.body


def entries(app: CacheApp) -> list[Exchange]:
    assert app.transcript is not None
    return app.transcript.entries


def puts(app: CacheApp) -> list[Exchange]:
    return [entry for entry in entries(app) if entry.method == "PUT"]


# ---------------------------------------------------------------------- the happy path


def test_first_append_creates_the_log_with_if_none_match_star() -> None:
    app = new_app()
    outcome = run(append_record(HandlerObjectClient(app), URI, commit(1, 1)))
    assert (outcome.status, outcome.conflicts, outcome.read_back) == (
        AppendStatus.APPENDED,
        0,
        True,
    )
    assert cbor_items(log_bytes(app)) == [as_item(commit(1, 1))]
    [put] = puts(app)
    assert ("if-none-match", "*") in put.request_headers and put.status == 201


def test_later_appends_put_the_old_content_plus_the_record_with_if_match() -> None:
    app = new_app()
    client = HandlerObjectClient(app)
    for round_ in (1, 2, 3):
        run(append_record(client, URI, commit(1, round_)))
    assert cbor_items(log_bytes(app)) == [as_item(commit(1, r)) for r in (1, 2, 3)]
    etags_read = [
        dict(entry.response_headers)["etag"] for entry in entries(app) if entry.method == "GET" and entry.status == 200
    ]
    for put in puts(app)[1:]:
        assert dict(put.request_headers)["if-match"] in etags_read


def test_outcome_etag_is_the_etag_of_the_log_after_the_append() -> None:
    app = new_app()
    outcome = run(append_record(HandlerObjectClient(app), URI, commit(1, 1)))
    assert outcome.etag == run(app(request("GET", LOG))).header("etag")


# ---------------------------------------------------------------------- the 8-writer race


class YieldingClient(HandlerObjectClient):
    """Yields to the other writers before each request, so that their GETs and PUTs interleave.

    The handler never suspends, so without a scheduling point each writer
    would run its whole append alone; ``sleep(0)`` only hands the turn on,
    nothing waits for time to pass.
    """

    async def get(self, uri: str) -> CacheReply:
        await asyncio.sleep(0)
        return await super().get(uri)

    async def put(self, uri: str, body: bytes, **kwargs: Any) -> CacheReply:
        await asyncio.sleep(0)
        return await super().put(uri, body, **kwargs)


WRITERS = 8
RECORDS_EACH = 5


async def _race(app: CacheApp) -> list[list[AppendStatus]]:
    async def writer(index: int) -> list[AppendStatus]:
        client = YieldingClient(app)
        statuses = []
        for k in range(RECORDS_EACH):
            record = commit(1, 100 * index + k)
            outcome = await append_record(client, URI, record, max_conflicts=10_000)
            statuses.append(outcome.status)
        return statuses

    return list(await asyncio.gather(*(writer(i) for i in range(WRITERS))))


def check_race_transcript(entries: list[Exchange]) -> None:
    """Each race is the set of PUTs conditioned on one validator: exactly one of them wins."""
    races: dict[str, list[int]] = defaultdict(list)
    for entry in entries:
        if entry.method != "PUT":
            continue
        headers = dict(entry.request_headers)
        validator = headers.get("if-match") or "none-match:" + headers["if-none-match"]
        races[validator].append(entry.status)
    assert races, "no PUT was recorded"
    for validator, statuses in races.items():
        winners = [status for status in statuses if 200 <= status < 300]
        assert len(winners) == 1, (validator, statuses)
        assert all(status == 412 for status in statuses if status not in winners)
    assert max(len(statuses) for statuses in races.values()) > 1, "no race actually happened"


def test_eight_concurrent_writers_lose_nothing_and_each_race_has_one_winner() -> None:
    app = new_app()
    results = run(_race(app))
    assert all(status is AppendStatus.APPENDED for statuses in results for status in statuses)
    expected = [as_item(commit(1, 100 * i + k)) for i in range(WRITERS) for k in range(RECORDS_EACH)]
    final = cbor_items(log_bytes(app))
    assert len(final) == len(expected)
    assert Counter(map(canonical, final)) == Counter(map(canonical, expected))
    # Each writer's own records appear in the order it appended them.
    for i in range(WRITERS):
        mine = [item for item in final if item["round"] // 100 == i]
        assert mine == [as_item(commit(1, 100 * i + k)) for k in range(RECORDS_EACH)]
    check_race_transcript(entries(app))
    wins = [entry for entry in puts(app) if 200 <= entry.status < 300]
    assert len(wins) == WRITERS * RECORDS_EACH


# ---------------------------------------------------------------------- fences


def test_after_a_fence_every_append_at_or_below_the_old_epoch_is_fenced_in_enforcing_mode() -> None:
    """§6.8: "after a fence record with epoch E+1, appends carrying an epoch lower than E+1 MUST fail"."""
    app = new_app()
    client = HandlerObjectClient(app)
    run(append_record(client, URI, commit(3, 1)))
    fence = run(append_record(client, URI, FenceRecord(4)))
    assert fence.status is AppendStatus.APPENDED
    before = log_bytes(app)
    for epoch in (1, 2, 3):
        outcome = run(append_record(client, URI, commit(epoch, 2)))
        assert (outcome.status, outcome.fence) == (AppendStatus.FENCED, FenceRecord(4))
        etag = run(app(request("GET", LOG))).header("etag")
        raw = before + encode_record(commit(epoch, 2))
        assert run(app(request("PUT", LOG, raw, {"If-Match": str(etag)}))).status == 409
    assert log_bytes(app) == before
    assert run(append_record(client, URI, commit(4, 2))).status is AppendStatus.APPENDED


def test_a_fence_is_visible_to_the_read_back_of_a_non_enforcing_cache() -> None:
    app = new_app(enforce=False)
    client = HandlerObjectClient(app)
    run(append_record(client, URI, commit(3, 1)))
    run(append_record(client, URI, FenceRecord(4)))
    # A writer that ignores the rule: the non-enforcing cache stores its record.
    current = run(app(request("GET", LOG)))
    stale = commit(3, 2)
    body = current.body + encode_record(stale)
    assert run(app(request("PUT", LOG, body, {"If-Match": str(current.header("etag"))}))).status == 204
    assert fence_preceding(parse_log(log_bytes(app)), stale) == FenceRecord(4)
    # The helper, re-reading before it writes, refuses to append behind the fence.
    outcome = run(append_record(client, URI, commit(3, 3)))
    assert (outcome.status, outcome.fence) == (AppendStatus.FENCED, FenceRecord(4))


@pytest.mark.parametrize("enforce", [True, False])
def test_a_writer_that_read_before_the_fence_gets_412_rereads_and_stops(enforce: bool) -> None:
    """P1-LOG-1: "On 412 the writer re-reads: if a fence with a higher epoch is now present it
    stops serving the session"."""
    app = new_app(enforce=enforce)
    router = HandlerObjectClient(app)
    run(append_record(router, URI, commit(1, 1)))

    async def fence_now() -> None:
        outcome = await append_record(router, URI, FenceRecord(2))
        assert outcome.status is AppendStatus.APPENDED

    verifier = HookedClient(HandlerObjectClient(app), after_get=[fence_now])
    outcome = run(append_record(verifier, URI, commit(1, 2)))
    assert (outcome.status, outcome.conflicts, outcome.fence) == (
        AppendStatus.FENCED,
        1,
        FenceRecord(2),
    )
    assert cbor_items(log_bytes(app)) == [as_item(commit(1, 1)), {"epoch": 2}]


# ---------------------------------------------------------------------- scripted caches


@dataclass
class HookedClient:
    """Runs the given hooks after successive GETs, to place another writer between GET and PUT."""

    inner: HandlerObjectClient
    after_get: list[Callable[[], Awaitable[None]]] = field(default_factory=list)

    async def get(self, uri: str) -> CacheReply:
        reply = await self.inner.get(uri)
        if self.after_get:
            await self.after_get.pop(0)()
        return reply

    async def put(self, uri: str, body: bytes, **kwargs: Any) -> CacheReply:
        return await self.inner.put(uri, body, **kwargs)


@dataclass
class ScriptedClient:
    """Answers from a script; records what it was asked."""

    gets: list[CacheReply]
    puts: list[CacheReply | Exception]
    asked: list[tuple[str, dict[str, object]]] = field(default_factory=list)

    async def get(self, uri: str) -> CacheReply:
        self.asked.append(("GET", {}))
        return self.gets.pop(0)

    async def put(self, uri: str, body: bytes, **kwargs: Any) -> CacheReply:
        self.asked.append(("PUT", kwargs))
        answer = self.puts.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def log_reply(*records: LogRecord, etag: str = '"e1"') -> CacheReply:
    return CacheReply(200, b"".join(encode_record(r) for r in records), etag)


@pytest.mark.parametrize(
    ("put_answer", "second_read", "read_back"),
    [
        # An enforcing cache refuses the PUT with 409; the log read again shows the fence.
        (CacheReply(409), log_reply(commit(1, 1), FenceRecord(2), etag='"e2"'), False),
        # §6.8: "treat its append as failed if a fence record with a higher epoch precedes its own".
        (CacheReply(204, etag='"e2"'), log_reply(commit(1, 1), FenceRecord(2), commit(1, 2)), True),
    ],
    ids=["409-from-an-enforcing-cache", "read-back-showing-a-higher-fence-before-the-record"],
)
def test_a_higher_fence_means_fenced_and_reports_the_fence(
    put_answer: CacheReply, second_read: CacheReply, read_back: bool
) -> None:
    client = ScriptedClient(gets=[log_reply(commit(1, 1)), second_read], puts=[put_answer])
    outcome = run(append_record(client, URI, commit(1, 2)))
    assert (outcome.status, outcome.fence, outcome.read_back) == (AppendStatus.FENCED, FenceRecord(2), read_back)


def test_read_back_with_the_fence_after_the_record_is_a_success() -> None:
    ours = commit(1, 2)
    client = ScriptedClient(
        gets=[log_reply(commit(1, 1)), log_reply(commit(1, 1), ours, FenceRecord(2))],
        puts=[CacheReply(204)],
    )
    assert run(append_record(client, URI, ours)).status is AppendStatus.APPENDED


def test_read_back_without_the_record_is_an_error() -> None:
    client = ScriptedClient(gets=[log_reply(commit(1, 1)), log_reply(commit(1, 1))], puts=[CacheReply(204)])
    with pytest.raises(ConditionalAppendError, match="lacks"):
        run(append_record(client, URI, commit(1, 2)))


def test_without_read_back_the_put_answer_decides() -> None:
    client = ScriptedClient(gets=[log_reply(commit(1, 1))], puts=[CacheReply(204, etag='"e2"')])
    outcome = run(append_record(client, URI, commit(1, 2), read_back=False))
    assert (outcome.status, outcome.etag, outcome.read_back) == (
        AppendStatus.APPENDED,
        '"e2"',
        False,
    )
    assert [kind for kind, _ in client.asked] == ["GET", "PUT"]


def test_conflicts_are_retried_a_bounded_number_of_times() -> None:
    client = ScriptedClient(gets=[log_reply() for _ in range(4)], puts=[CacheReply(412)] * 4)
    with pytest.raises(ConditionalAppendError, match="3 conflicts"):
        run(append_record(client, URI, commit(1, 1), max_conflicts=2))
    assert [kind for kind, _ in client.asked] == ["GET", "PUT"] * 3


@pytest.mark.parametrize(
    ("get", "message"),
    [(CacheReply(503), "GET answered 503"), (CacheReply(200, b"", None), "without an ETag")],
)
def test_a_failing_cache_is_an_error(get: CacheReply, message: str) -> None:
    with pytest.raises(ConditionalAppendError, match=message):
        run(append_record(ScriptedClient(gets=[get], puts=[]), URI, commit(1, 1)))


def test_an_object_that_is_not_a_log_is_an_error() -> None:
    client = ScriptedClient(gets=[CacheReply(200, b"\x00\x01", '"e"')], puts=[])
    with pytest.raises(ConditionalAppendError, match="not a commit log"):
        run(append_record(client, URI, commit(1, 1)))


def test_a_put_refused_with_5xx_is_an_error() -> None:
    client = ScriptedClient(gets=[log_reply()], puts=[CacheReply(503)])
    with pytest.raises(ConditionalAppendError, match="PUT answered 503"):
        run(append_record(client, URI, commit(1, 1)))


class LosingAnswerClient(HandlerObjectClient):
    """Loses the answer of the first PUT, after (``applied``) or instead of applying it."""

    def __init__(self, app: CacheApp, *, applied: bool) -> None:
        super().__init__(app)
        self.applied = applied
        self.lost = False

    async def put(self, uri: str, body: bytes, **kwargs: Any) -> CacheReply:
        if not self.lost:
            self.lost = True
            if self.applied:
                await super().put(uri, body, **kwargs)
            raise CacheTransportError("answer lost")
        return await super().put(uri, body, **kwargs)


@pytest.mark.parametrize("applied", [True, False])
def test_a_lost_put_answer_never_duplicates_or_loses_the_record(applied: bool) -> None:
    app = new_app()
    run(append_record(HandlerObjectClient(app), URI, commit(1, 1)))
    outcome = run(append_record(LosingAnswerClient(app, applied=applied), URI, commit(1, 2)))
    assert outcome.status is AppendStatus.APPENDED
    assert cbor_items(log_bytes(app)) == [as_item(commit(1, 1)), as_item(commit(1, 2))]
    # Applied: the re-read finds the record, no second PUT. Not applied: it never
    # reached the cache, and the retry is the second PUT.
    assert len(puts(app)) == 2
