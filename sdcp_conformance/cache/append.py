"""The conditional append of P1-LOG-1, one implementation for every writer of a commit log.

GET the log and its ETag, PUT the old content plus the new record with
``If-Match`` (``If-None-Match: *`` when the log does not exist yet,
P1-LOG-3), re-read on 412, stop at a fence with a higher epoch, and read the
log back after a successful PUT so that a cache that does not enforce fences
cannot hide one (§6.8, P1-LOG-2). It talks to the cache through
:class:`ObjectClient`, which the real HTTP client and the in-process
handler both provide.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Protocol

from sdcp_conformance.cache.commit_log import (
    FenceRecord,
    LogRecord,
    blocking_fence,
    encode_record,
    fence_preceding,
    highest_fence,
    parse_log,
)
from sdcp_conformance.errors import SdcpConformanceError
from sdcp_conformance.protocol.errors import MalformedMessage

DEFAULT_MAX_CONFLICTS = 32
"""D-LOG-3: how many 412s one append survives before giving up.

Every 412 means another writer's append succeeded, so the log makes progress
whatever happens; the bound only stops one writer from retrying forever
under sustained contention."""


@dataclass(frozen=True)
class CacheReply:
    """What an :class:`ObjectClient` call returned."""

    status: int
    body: bytes = b""
    etag: str | None = None


class ObjectClient(Protocol):
    """The little HTTP an append needs; a transport failure raises :class:`CacheTransportError`."""

    async def get(self, uri: str) -> CacheReply: ...

    async def put(
        self,
        uri: str,
        body: bytes,
        *,
        if_match: str | None = None,
        if_none_match: str | None = None,
        lease_ms: int | None = None,
    ) -> CacheReply: ...


class ConditionalAppendError(SdcpConformanceError):
    """The append could not be completed: the cache failed, or the log or its answers are wrong."""


class CacheTransportError(ConditionalAppendError):
    """No answer came back (reset, timeout): the request may or may not have been applied."""


class AppendStatus(enum.Enum):
    APPENDED = "appended"
    """The record is in the log and no higher fence precedes it."""
    FENCED = "fenced"
    """A fence with a higher epoch is in the way: the writer must stop serving the session."""


@dataclass(frozen=True)
class AppendOutcome:
    status: AppendStatus
    conflicts: int
    """How many 412s were answered with a re-read and a retry."""
    fence: FenceRecord | None
    """The fence that stopped the append (``FENCED``), if it could be read."""
    etag: str | None
    """The log's ETag after the append, when the cache sent one."""
    read_back: bool
    """Whether the log was read back and checked after the PUT."""


@dataclass(frozen=True)
class _Snapshot:
    data: bytes
    etag: str | None
    records: list[LogRecord]


async def append_record(
    client: ObjectClient,
    uri: str,
    record: LogRecord,
    *,
    read_back: bool = True,
    max_conflicts: int = DEFAULT_MAX_CONFLICTS,
) -> AppendOutcome:
    """Append ``record`` to the commit log at ``uri`` (P1-LOG-1).

    Returns ``APPENDED`` or ``FENCED``; raises :class:`ConditionalAppendError`
    when the cache fails, after ``max_conflicts`` lost races, or when the
    read-back does not hold the record. P1-LOG-3: "A verifier may always read
    back after appending", so ``read_back`` defaults to true.
    """
    encoded = encode_record(record)
    conflicts = 0
    while True:
        snapshot = await _read(client, uri)
        fence = blocking_fence(snapshot.records, record)
        if fence is not None:  # P1-LOG-1: "it stops serving the session"
            return AppendOutcome(AppendStatus.FENCED, conflicts, fence, snapshot.etag, False)
        reply = await _put_after(client, uri, snapshot, encoded)
        if reply is None or reply.status == 412:
            conflicts += 1
            if conflicts > max_conflicts:
                raise ConditionalAppendError(f"{uri}: gave up after {conflicts} conflicts")
            continue
        if reply.status == 409:  # P1-LOG-2: an enforcing cache refuses a fenced append
            return await _fenced_by_cache(client, uri, conflicts)
        if not 200 <= reply.status < 300:
            raise ConditionalAppendError(f"{uri}: PUT answered {reply.status}")
        if not read_back:
            return AppendOutcome(AppendStatus.APPENDED, conflicts, None, reply.etag, False)
        return await _check_read_back(client, uri, record, conflicts)


async def _read(client: ObjectClient, uri: str) -> _Snapshot:
    """P1-LOG-3: "the object need not exist yet" — a missing log is an empty one."""
    reply = await client.get(uri)
    if reply.status == 404:
        return _Snapshot(b"", None, [])
    if reply.status != 200:
        raise ConditionalAppendError(f"{uri}: GET answered {reply.status}")
    if reply.etag is None:
        raise ConditionalAppendError(f"{uri}: GET answered without an ETag (P1-MLC-1)")
    return _Snapshot(reply.body, reply.etag, _parse(uri, reply.body))


async def _put_after(client: ObjectClient, uri: str, snapshot: _Snapshot, encoded: bytes) -> CacheReply | None:
    """PUT old content + record, conditional on ``snapshot``; ``None`` when no answer came.

    A lost answer is treated like a lost race: the next read shows whether
    the PUT was applied, and a retry finds the log changed (a 412) or finds
    itself fenced, and never appends the record twice unless the first PUT
    really failed.
    """
    body = snapshot.data + encoded
    try:
        if snapshot.etag is None:
            return await client.put(uri, body, if_none_match="*")
        return await client.put(uri, body, if_match=snapshot.etag)
    except CacheTransportError:
        after = await _read(client, uri)
        if after.data.startswith(body):
            return CacheReply(204, etag=after.etag)
        return None


async def _fenced_by_cache(client: ObjectClient, uri: str, conflicts: int) -> AppendOutcome:
    try:
        snapshot = await _read(client, uri)
    except ConditionalAppendError:  # the cache already said "fenced"; its fence is a detail
        return AppendOutcome(AppendStatus.FENCED, conflicts, None, None, False)
    fence = highest_fence(snapshot.records)
    return AppendOutcome(AppendStatus.FENCED, conflicts, fence, snapshot.etag, False)


async def _check_read_back(client: ObjectClient, uri: str, record: LogRecord, conflicts: int) -> AppendOutcome:
    """§6.8: "treat its append as failed if a fence record with a higher epoch precedes
    its own record"."""
    snapshot = await _read(client, uri)
    try:
        fence = fence_preceding(snapshot.records, record)
    except LookupError as exc:
        raise ConditionalAppendError(f"{uri}: the read-back log lacks the appended record") from exc
    if fence is not None:
        return AppendOutcome(AppendStatus.FENCED, conflicts, fence, snapshot.etag, True)
    return AppendOutcome(AppendStatus.APPENDED, conflicts, None, snapshot.etag, True)


def _parse(uri: str, data: bytes) -> list[LogRecord]:
    try:
        return parse_log(data)
    except MalformedMessage as exc:
        raise ConditionalAppendError(f"{uri}: the object is not a commit log: {exc}") from exc


__all__ = [
    "DEFAULT_MAX_CONFLICTS",
    "AppendOutcome",
    "AppendStatus",
    "CacheReply",
    "CacheTransportError",
    "ConditionalAppendError",
    "ObjectClient",
    "append_record",
]
