"""Commit-log records, parsing, the P1-LOG-2 fence rule and how the cache recognises an append."""

from __future__ import annotations

import struct

import cbor2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdcp_conformance.cache.commit_log import (
    CommitRecord,
    FenceRecord,
    LogRecord,
    PutKind,
    blocking_fence,
    check_put,
    encode_record,
    fence_preceding,
    highest_fence,
    parse_log,
    try_parse_log,
)
from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.protocol.errors import MalformedMessage

DIGEST = bytes(range(32))


def commit(epoch: int, round_: int, emitted: tuple[int, ...] = (7,)) -> CommitRecord:
    return CommitRecord(epoch, round_, emitted, round_, DIGEST)


def test_fence_record_encodes_as_a_one_member_map() -> None:
    # a1 (map of 1), 65 "epoch", 02
    assert encode_record(FenceRecord(2)) == b"\xa1\x65epoch\x02"


def test_commit_record_encodes_deterministically_with_keys_in_rfc8949_order() -> None:
    # RFC 8949 §4.2.1 sorts keys by their encoded bytes: shorter text first,
    # then bytewise: "epoch" < "round" (5 chars), "digest", "emitted", "committed".
    expected = (
        b"\xa5"
        + b"\x65epoch\x01"
        + b"\x65round\x03"
        + b"\x66digest\x58\x20"
        + DIGEST
        + b"\x67emitted\x82\x05\x06"
        + b"\x69committed\x07"
    )
    assert encode_record(CommitRecord(1, 3, (5, 6), 7, DIGEST)) == expected


def test_encode_refuses_records_outside_the_shape() -> None:
    with pytest.raises(InvalidArgument):
        encode_record(CommitRecord(1, 1, (1,), 1, b"short"))
    with pytest.raises(InvalidArgument):
        encode_record(FenceRecord(-1))


def test_parse_log_reads_a_sequence_written_by_cbor2() -> None:
    data = cbor2.dumps({"epoch": 1, "round": 1, "emitted": [4], "committed": 1, "digest": DIGEST})
    data += cbor2.dumps({"epoch": 2})
    data += cbor2.dumps({"epoch": 2, "round": 2, "emitted": [], "committed": 1, "digest": DIGEST})
    assert parse_log(data) == [
        CommitRecord(1, 1, (4,), 1, DIGEST),
        FenceRecord(2),
        CommitRecord(2, 2, (), 1, DIGEST),
    ]


def test_unknown_keys_are_ignored_in_records() -> None:
    data = cbor2.dumps({"epoch": 3, "by": "router"})
    assert parse_log(data) == [FenceRecord(3)]


@pytest.mark.parametrize(
    "item",
    [
        [1, 2],
        {"round": 1},
        {"epoch": 1, "round": 1},
        {"epoch": -1},
        {"epoch": True},
        {"epoch": 1, "round": 1, "emitted": [1], "committed": 1, "digest": b"\x00"},
        {"epoch": 1, "round": 1, "emitted": [-1], "committed": 1, "digest": DIGEST},
        {"epoch": 1, "round": 1, "emitted": 5, "committed": 1, "digest": DIGEST},
    ],
)
def test_items_that_are_not_records_make_the_log_malformed(item: object) -> None:
    with pytest.raises(MalformedMessage):
        parse_log(cbor2.dumps({"epoch": 1}) + cbor2.dumps(item))


def test_empty_bytes_are_an_empty_log_and_opaque_bytes_are_not_a_log() -> None:
    assert try_parse_log(b"") == []
    q_rows = struct.pack("<4f", 0.25, 0.25, 0.25, 0.25)
    assert try_parse_log(q_rows) is None
    assert try_parse_log(cbor2.dumps([1, 2, 3])) is None  # a token list


def test_highest_fence_and_blocking_fence() -> None:
    log: list[LogRecord] = [commit(1, 1), FenceRecord(3), FenceRecord(2), commit(3, 2)]
    assert highest_fence(log) == FenceRecord(3)
    assert highest_fence([commit(1, 1)]) is None
    assert blocking_fence(log, commit(2, 3)) == FenceRecord(3)
    assert blocking_fence(log, FenceRecord(2)) == FenceRecord(3)
    assert blocking_fence(log, commit(3, 3)) is None  # equal epoch: the new verifier
    assert blocking_fence(log, FenceRecord(4)) is None


def test_fence_preceding_finds_a_higher_fence_before_the_record_only() -> None:
    ours = commit(1, 5)
    assert fence_preceding([commit(1, 4), FenceRecord(2), ours], ours) == FenceRecord(2)
    assert fence_preceding([commit(1, 4), ours, FenceRecord(2)], ours) is None
    with pytest.raises(LookupError):
        fence_preceding([commit(1, 4)], ours)


def test_check_put_classifies_appends_creations_and_plain_writes() -> None:
    log = encode_record(commit(1, 1))
    fenced = log + encode_record(FenceRecord(2))
    assert check_put(None, log).kind is PutKind.APPEND
    assert check_put(log, log + encode_record(commit(1, 2))).kind is PutKind.APPEND
    assert check_put(fenced, fenced + encode_record(commit(2, 2))).kind is PutKind.APPEND
    assert check_put(None, b"opaque").kind is PutKind.PLAIN
    assert check_put(b"\x00\x01", b"\x00\x01" + log).kind is PutKind.PLAIN
    assert check_put(log, b"replaced").kind is PutKind.PLAIN  # no fence to protect


def test_check_put_refuses_records_below_the_fence_and_rewrites_that_drop_it() -> None:
    fenced = encode_record(commit(1, 1)) + encode_record(FenceRecord(2))
    stale = check_put(fenced, fenced + encode_record(commit(1, 2)))
    assert (stale.kind, stale.fence, stale.offending) == (
        PutKind.FENCED_APPEND,
        FenceRecord(2),
        commit(1, 2),
    )
    rewrite = check_put(fenced, encode_record(commit(1, 1)) + encode_record(commit(1, 2)))
    assert (rewrite.kind, rewrite.fence) == (PutKind.FENCED_REWRITE, FenceRecord(2))
    assert check_put(fenced, fenced).kind is PutKind.PLAIN  # rewriting the same bytes


def test_check_put_applies_fences_written_earlier_in_the_same_put() -> None:
    new = encode_record(FenceRecord(5)) + encode_record(commit(4, 1))
    assert check_put(None, new).kind is PutKind.FENCED_APPEND


_records = st.one_of(
    st.builds(FenceRecord, st.integers(0, 6)),
    st.builds(
        CommitRecord,
        st.integers(0, 6),
        st.integers(0, 50),
        st.lists(st.integers(0, 1000), max_size=3).map(tuple),
        st.integers(0, 100),
        st.just(DIGEST),
    ),
)


@settings(derandomize=True, max_examples=150)
@given(log=st.lists(_records, max_size=8), new=_records)
def test_an_append_is_refused_exactly_when_its_epoch_is_below_some_fence(log: list[LogRecord], new: LogRecord) -> None:
    old = b"".join(encode_record(record) for record in log)
    # Brute force: is there any fence in the log with a larger epoch?
    below_some_fence = any(isinstance(r, FenceRecord) and r.epoch > new.epoch for r in log)
    kind = check_put(old, old + encode_record(new)).kind
    assert kind is (PutKind.FENCED_APPEND if below_some_fence else PutKind.APPEND)
    assert parse_log(old + encode_record(new)) == [*log, new]
