"""Commit logs (draft §6.8, P1-LOG-1/2): records, parsing, and the fence rule, without I/O."""

from __future__ import annotations

import enum
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.protocol.codec import DecodeLimits, decode_sequence, encode
from sdcp_conformance.protocol.errors import MalformedMessage

LOG_LIMITS = DecodeLimits(max_size=1 << 28, max_depth=8, max_items=1 << 25)
"""D-LOG-1: a commit log grows with its session, so it is decoded with wider bounds than a message.

256 MiB and 32 Mi items hold millions of rounds; a log beyond them is
treated as malformed (and so as an ordinary object by the cache)."""

_COMMIT_MEMBERS = ("epoch", "round", "emitted", "committed", "digest")


@dataclass(frozen=True)
class CommitRecord:
    """P1-LOG-1: ``{epoch, round, emitted: [* uint], committed, digest}``."""

    epoch: int
    round: int
    emitted: tuple[int, ...]
    committed: int
    digest: bytes

    def to_cbor(self) -> dict[str, Any]:
        return {
            "epoch": self.epoch,
            "round": self.round,
            "emitted": list(self.emitted),
            "committed": self.committed,
            "digest": self.digest,
        }


@dataclass(frozen=True)
class FenceRecord:
    """§6.8: "A fence record carries only an epoch"."""

    epoch: int

    def to_cbor(self) -> dict[str, Any]:
        return {"epoch": self.epoch}


LogRecord = CommitRecord | FenceRecord


def encode_record(record: LogRecord) -> bytes:
    """The record's deterministic CBOR encoding, one item of the log's CBOR sequence."""
    _check_record(record)
    return encode(record.to_cbor())


def record_from_item(item: Any) -> LogRecord:
    """D-LOG-2: classify one decoded item of a log.

    A map with all five commit members is a commit record; a map with
    ``epoch`` and none of the other commit members is a fence. Other keys are
    ignored, as §5.2 asks of messages. Anything else is malformed.
    """
    if not isinstance(item, Mapping):
        raise MalformedMessage("a commit log item is not a map")
    present = [name for name in _COMMIT_MEMBERS if name in item]
    if present == ["epoch"]:
        return FenceRecord(_uint(item, "epoch"))
    if len(present) != len(_COMMIT_MEMBERS):
        raise MalformedMessage(f"a commit log record has only the commit members {present}")
    emitted = item["emitted"]
    if not isinstance(emitted, list) or not all(_is_uint(token) for token in emitted):
        raise MalformedMessage("emitted is not an array of uint")
    digest = item["digest"]
    if not isinstance(digest, bytes) or len(digest) != 32:
        raise MalformedMessage("digest is not a 32-octet byte string")
    return CommitRecord(_uint(item, "epoch"), _uint(item, "round"), tuple(emitted), _uint(item, "committed"), digest)


class _ParsedLogs:
    """The last logs parsed, so that a log that only grew is parsed from where it was last read.

    An append is a GET, a PUT of the old content plus one record, and a
    read-back (P1-LOG-1, §6.8), and the cache checks each PUT against the old
    content: without this every round would parse the whole log again and
    again, and a session's cost would grow with the square of its rounds.
    A CBOR sequence's items end where the next begins, so the records of a
    known prefix are those of the longer log's first bytes.
    """

    def __init__(self, size: int = 64) -> None:
        self._size = size
        self._known: list[tuple[bytes, tuple[LogRecord, ...]]] = []
        self._lock = threading.Lock()

    def parse(self, data: bytes) -> list[LogRecord]:
        if len(data) > LOG_LIMITS.max_size:  # the bound holds for the whole log, not just the part parsed now
            raise MalformedMessage(f"a commit log of {len(data)} bytes exceeds {LOG_LIMITS.max_size}")
        with self._lock:
            best = max((known for known in self._known if data.startswith(known[0])), key=lambda k: len(k[0]),
                       default=(b"", ()))
        prefix, records = best
        tail = [record_from_item(item) for item in decode_sequence(data[len(prefix):], limits=LOG_LIMITS)]
        parsed = (*records, *tail)
        with self._lock:
            self._known = [known for known in self._known if known[0] != data][-(self._size - 1):]
            self._known.append((data, parsed))
        return list(parsed)


_PARSED = _ParsedLogs()


def parse_log(data: bytes) -> list[LogRecord]:
    """Every record of a log, in order; raises :class:`MalformedMessage` if any item is not one."""
    return _PARSED.parse(data)


def try_parse_log(data: bytes) -> list[LogRecord] | None:
    """The records, or ``None`` when ``data`` is not a commit log.

    Checks the first byte before decoding so that large opaque objects
    (``q_rows``, KV blobs) are dismissed without a scan.
    """
    if data and not 0xA0 <= data[0] <= 0xBF:  # a log's first item is a map
        return None
    try:
        return parse_log(data)
    except MalformedMessage:
        return None


def highest_fence(records: Sequence[LogRecord]) -> FenceRecord | None:
    """The fence with the highest epoch, or ``None`` when the log has no fence."""
    fences = [record for record in records if isinstance(record, FenceRecord)]
    return max(fences, key=lambda fence: fence.epoch, default=None)


def blocking_fence(prior: Sequence[LogRecord], record: LogRecord) -> FenceRecord | None:
    """The fence in ``prior`` that forbids appending ``record``, if any.

    §6.8: "after a fence record with epoch E+1, appends carrying an epoch
    lower than E+1 MUST fail." P1-LOG-2 applies it to every record, fences
    included; an equal epoch is allowed (the new verifier writes at E+1).
    """
    fence = highest_fence(prior)
    if fence is not None and record.epoch < fence.epoch:
        return fence
    return None


def fence_preceding(records: Sequence[LogRecord], record: LogRecord) -> FenceRecord | None:
    """Read-back check for a non-enforcing cache (§6.8, P1-LOG-2).

    "the verifier MUST read the log after its conditional append and treat
    its append as failed if a fence record with a higher epoch precedes its
    own record." The first occurrence of ``record`` counts; raises
    :class:`LookupError` if the log does not hold it at all (a lost append).
    """
    for index, candidate in enumerate(records):
        if candidate == record:
            return blocking_fence(records[:index], record)
    raise LookupError("the log does not contain the record")


class PutKind(enum.Enum):
    """How a PUT relates to the object it replaces, for fence enforcement."""

    PLAIN = "plain"
    """Not a commit-log write: ordinary object semantics."""
    APPEND = "append"
    """Extends a commit log (or creates one) with records the fence rule allows."""
    FENCED_APPEND = "fenced-append"
    """Extends a commit log with a record below its highest fence."""
    FENCED_REWRITE = "fenced-rewrite"
    """Replaces a fenced commit log with content that does not extend it."""


@dataclass(frozen=True)
class PutCheck:
    kind: PutKind
    fence: FenceRecord | None = None
    offending: LogRecord | None = None


def check_put(old: bytes | None, new: bytes) -> PutCheck:
    """D-MLC-3: how the cache recognises a commit log, and the P1-LOG-2 verdict on a PUT.

    By content, not by path, because the router names the log freely
    (P1-LOG-3): a PUT is an append when the current content is a commit log
    (a CBOR sequence of P1-LOG-1 records; a missing or empty object counts as
    an empty log) and the new content is that content, byte for byte, followed
    by one or more records. Each appended record is checked against the
    fences before it, earlier records of the same PUT included. A PUT that
    replaces a log holding a fence by anything that does not extend it would
    erase the fence, so an enforcing cache refuses it too.
    """
    old = old or b""
    old_records = try_parse_log(old)
    if old_records is None or new == old:  # rewriting identical bytes erases nothing
        return PutCheck(PutKind.PLAIN)
    added = try_parse_log(new[len(old) :]) if new.startswith(old) else None
    if added:
        return _check_appended(old_records, added)
    fence = highest_fence(old_records)
    if fence is not None:
        return PutCheck(PutKind.FENCED_REWRITE, fence)
    return PutCheck(PutKind.PLAIN)


def _check_appended(prior: list[LogRecord], added: list[LogRecord]) -> PutCheck:
    log = list(prior)
    for record in added:
        fence = blocking_fence(log, record)
        if fence is not None:
            return PutCheck(PutKind.FENCED_APPEND, fence, record)
        log.append(record)
    return PutCheck(PutKind.APPEND)


def _is_uint(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _uint(item: Mapping[str, Any], name: str) -> int:
    value = item[name]
    if not _is_uint(value):
        raise MalformedMessage(f"{name} is not a uint")
    return int(value)


def _check_record(record: LogRecord) -> None:
    values = [record.epoch]
    if isinstance(record, CommitRecord):
        values += [record.round, record.committed, *record.emitted]
        if len(record.digest) != 32:
            raise InvalidArgument("a commit record's digest is 32 octets")
    if not all(_is_uint(value) for value in values):
        raise InvalidArgument(f"a log record holds only uints: {record}")


__all__ = [
    "LOG_LIMITS",
    "CommitRecord",
    "FenceRecord",
    "LogRecord",
    "PutCheck",
    "PutKind",
    "blocking_fence",
    "check_put",
    "encode_record",
    "fence_preceding",
    "highest_fence",
    "parse_log",
    "record_from_item",
    "try_parse_log",
]
