"""CBOR for SDCP: deterministic encoding and bounded decoding of untrusted bytes.

Encoding follows the core deterministic encoding of RFC 8949 §4.2.1, which the
draft requires for the contract digest (§4.1) and the profile for every message
(P1-MSG-1): preferred (shortest) serialization, definite lengths, and map keys
sorted by the bytewise lexicographic order of their own deterministic
encodings. cbor2 encodes the leaves; the map order is ours, because cbor2's
``canonical=True`` sorts keys the RFC 7049 way (shortest key first), which
differs from RFC 8949 once keys of different lengths or major types mix.

Decoding never hands untrusted bytes straight to cbor2: ``cbor2.loads``
ignores trailing bytes, keeps the last of duplicate map keys, resolves the
shared-reference tags 28/29, and trusts declared lengths. A well-formedness
scan (RFC 8949 Appendix C) runs first, bounded in size, nesting depth, item
count and map size, and rejects duplicate keys, tags, trailing bytes and any
declared length longer than the input, before cbor2 builds a single object.
So a 20-byte message can never make the decoder allocate gigabytes.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import cbor2

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.protocol.errors import MalformedMessage

MAX_MESSAGE_SIZE = 16 * 1024 * 1024
"""P1-MSG-2: bodies over 16 MiB may be refused."""


@dataclass(frozen=True)
class DecodeLimits:
    """Bounds applied to untrusted CBOR before any object is built."""

    max_size: int = MAX_MESSAGE_SIZE
    max_depth: int = 32
    max_items: int = 1 << 21
    max_map_entries: int = 1024
    allow_indefinite: bool = True


DEFAULT_LIMITS = DecodeLimits()

_MT_UINT, _MT_NINT, _MT_BYTES, _MT_TEXT, _MT_ARRAY, _MT_MAP, _MT_TAG, _MT_SIMPLE = range(8)
_BREAK = 0xFF


# --------------------------------------------------------------------------- encoding


def encode(obj: Any) -> bytes:
    """Encode ``obj`` with RFC 8949 §4.2.1 core deterministic encoding.

    Accepts the CBOR data model SDCP uses: ``int`` (any size), ``float``,
    ``bool``, ``None``, ``str``, ``bytes``, lists/tuples and mappings.
    """
    out = bytearray()
    _encode_into(obj, out)
    return bytes(out)


def _head(major: int, argument: int) -> bytes:
    if argument < 24:
        return bytes([major << 5 | argument])
    for additional, width in ((24, 1), (25, 2), (26, 4), (27, 8)):
        if argument < 1 << (8 * width):
            return bytes([major << 5 | additional]) + argument.to_bytes(width, "big")
    raise InvalidArgument(f"length {argument} does not fit a CBOR head")


_SIMPLE_LEAVES = {True: b"\xf5", False: b"\xf4"}
_UINT_LIMIT = 1 << 64


def _encode_into(obj: Any, out: bytearray) -> None:
    kind = type(obj)
    # The leaves SDCP messages are made of, written here directly: their preferred serialization is the
    # shortest head (RFC 8949 §4.2.1), exactly what cbor2's canonical mode writes, without a call into it
    # per leaf. Anything else (floats, big integers, subclasses) goes the general way below.
    if kind is int and -_UINT_LIMIT <= obj < _UINT_LIMIT:
        out += _head(_MT_UINT, obj) if obj >= 0 else _head(_MT_NINT, -1 - obj)
    elif kind is bytes:
        out += _head(_MT_BYTES, len(obj))
        out += obj
    elif kind is str and obj.isascii():
        out += _head(_MT_TEXT, len(obj))
        out += obj.encode("ascii")
    elif kind is bool:
        out += _SIMPLE_LEAVES[obj]
    elif obj is None:
        out += b"\xf6"
    elif isinstance(obj, Mapping):
        pairs = sorted((encode(key), encode(value)) for key, value in obj.items())
        for (key_a, _), (key_b, _) in itertools.pairwise(pairs):
            if key_a == key_b:
                raise InvalidArgument(f"map has two keys that encode alike: {key_a.hex()}")
        out += _head(_MT_MAP, len(pairs))
        for key, value in pairs:
            out += key
            out += value
    elif isinstance(obj, (list, tuple)):
        out += _head(_MT_ARRAY, len(obj))
        for item in obj:
            _encode_into(item, out)
    elif isinstance(obj, (bytearray, memoryview)):
        out += cbor2.dumps(bytes(obj), canonical=True)
    elif isinstance(obj, (bool, int, float, str, bytes)):
        # cbor2's canonical mode gives the preferred serialization of leaves,
        # including the shortest float that keeps the value (RFC 8949 §4.2.2).
        out += cbor2.dumps(obj, canonical=True)
    else:
        raise InvalidArgument(f"cannot encode {type(obj).__name__} as SDCP CBOR")


# --------------------------------------------------------------------------- decoding


def decode(data: bytes, *, limits: DecodeLimits = DEFAULT_LIMITS) -> Any:
    """Decode exactly one well-formed CBOR item from untrusted ``data``.

    Raises :class:`MalformedMessage` (``sdcp-bad-message``) for anything that
    is not one complete item within ``limits``.
    """
    data = _as_bytes(data, limits)
    end = _Scanner(data, limits).scan_item(0)
    if end != len(data):
        raise MalformedMessage(f"{len(data) - end} trailing bytes after the CBOR item")
    return _build(data)


def decode_sequence(data: bytes, *, limits: DecodeLimits = DEFAULT_LIMITS) -> list[Any]:
    """Decode a CBOR sequence (RFC 8742), as commit logs are stored (P1-LOG-1)."""
    return list(iter_sequence(data, limits=limits))


def iter_sequence(data: bytes, *, limits: DecodeLimits = DEFAULT_LIMITS) -> Iterator[Any]:
    data = _as_bytes(data, limits)
    known, items = _KNOWN.longest_prefix(data, limits)
    start, ends = 0, list(known)
    for end in known:  # items a scan of this very prefix found well-formed: built, not scanned again
        yield _build(data[start:end])
        start = end
    scanner = _Scanner(data, limits)
    scanner.items = items
    while start < len(data):
        end = scanner.scan_item(start)
        yield _build(data[start:end])
        ends.append(end)
        start = end
    _KNOWN.remember(data, limits, tuple(ends), scanner.items)


class _KnownSequences:
    """Where the items of CBOR sequences scanned lately end, so that one extending them is scanned only past them.

    A commit log is read again after every append and a transcript renders
    every read, so a log of n records would be scanned n times over. A prefix
    that ends at an item boundary has the same items in any longer input: the
    scan of an item looks at its own bytes, and more input only gives more
    room. Only sequences of two items or more are kept, for the default
    limits, and a bounded number of bytes of them.
    """

    HEAD = 32
    """Sequences are filed by their first bytes (a log's first record: its session's digest among them)."""
    PER_HEAD = 8
    BYTES_LIMIT = 8 << 20
    """At most this many bytes of sequences are kept (then the memory starts afresh); larger ones never."""

    def __init__(self) -> None:
        self._by_head: dict[bytes, list[tuple[bytes, tuple[int, ...], int]]] = {}
        self._bytes = 0
        self._lock = threading.Lock()

    def longest_prefix(self, data: bytes, limits: DecodeLimits) -> tuple[tuple[int, ...], int]:
        """The item ends (and the item count) of the longest known sequence that ``data`` starts with."""
        if limits != DEFAULT_LIMITS:
            return (), 0
        with self._lock:
            candidates = list(self._by_head.get(data[: self.HEAD], ()))
        best: tuple[tuple[int, ...], int] = ((), 0)
        longest = 0
        for known, ends, items in candidates:
            if longest < len(known) <= len(data) and data.startswith(known):
                best, longest = (ends, items), len(known)
        return best

    def remember(self, data: bytes, limits: DecodeLimits, ends: tuple[int, ...], items: int) -> None:
        if limits != DEFAULT_LIMITS or len(ends) < 2 or len(data) > self.BYTES_LIMIT // 8:
            return
        with self._lock:
            if self._bytes + len(data) > self.BYTES_LIMIT:
                self._by_head.clear()
                self._bytes = 0
            entries = self._by_head.get(data[: self.HEAD], [])
            # The prefixes it supersedes go, and the oldest beyond PER_HEAD: logs of sessions whose first
            # records agree (one prompt, one first emission) share a head without being prefixes of each other.
            kept = [entry for entry in entries if not data.startswith(entry[0])][1 - self.PER_HEAD:]
            self._bytes += len(data) - sum(len(entry[0]) for entry in entries if entry not in kept)
            self._by_head[data[: self.HEAD]] = [*kept, (data, ends, items)]


_KNOWN = _KnownSequences()


def _as_bytes(data: Any, limits: DecodeLimits) -> bytes:
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise InvalidArgument(f"CBOR input must be bytes, not {type(data).__name__}")
    if len(data) > limits.max_size:
        raise MalformedMessage(f"CBOR input of {len(data)} bytes exceeds {limits.max_size}")
    return bytes(data)


def _build(item: bytes) -> Any:
    try:
        return cbor2.loads(item)
    except Exception as exc:  # cbor2 raises several types; all mean "malformed"
        raise MalformedMessage(f"CBOR item could not be decoded: {exc}") from exc


class _Scanner:
    """Checks well-formedness of RFC 8949 Appendix C within bounds, building nothing."""

    def __init__(self, data: bytes, limits: DecodeLimits) -> None:
        self._data = data
        self._limits = limits
        self.items = 0
        """Items scanned so far (every item counts against ``max_items``)."""

    def scan_item(self, pos: int, depth: int = 0) -> int:
        """Return the offset just past the item starting at ``pos``."""
        if depth > self._limits.max_depth:
            raise MalformedMessage(f"CBOR nesting deeper than {self._limits.max_depth}")
        self.items += 1
        if self.items > self._limits.max_items:
            raise MalformedMessage(f"CBOR input has more than {self._limits.max_items} items")
        data = self._data
        if pos < len(data) and data[pos] & 0x1F < 24:  # the head is one byte (most items): read it here
            initial = data[pos]
            major, additional, argument, pos = initial >> 5, initial & 0x1F, initial & 0x1F, pos + 1
        else:
            major, additional, argument, pos = self._head(pos)
        if additional == 31:
            return self._scan_indefinite(major, pos, depth)
        if major in (_MT_UINT, _MT_NINT):
            return pos
        if major in (_MT_BYTES, _MT_TEXT):
            return self._skip(pos, argument)
        if major == _MT_ARRAY:
            self._require_room(pos, argument)
            for _ in range(argument):
                pos = self.scan_item(pos, depth + 1)
            return pos
        if major == _MT_MAP:
            return self._scan_map(pos, argument, depth)
        if major == _MT_TAG:
            raise MalformedMessage("CBOR tags are not used by SDCP")
        return self._scan_simple(additional, argument, pos)

    def _head(self, pos: int) -> tuple[int, int, int, int]:
        if pos >= len(self._data):
            raise MalformedMessage("CBOR input ends inside an item")
        initial = self._data[pos]
        major, additional = initial >> 5, initial & 0x1F
        pos += 1
        if additional < 24:
            return major, additional, additional, pos
        if additional in (28, 29, 30):
            raise MalformedMessage(f"reserved additional information {additional}")
        if additional == 31:
            if major in (_MT_UINT, _MT_NINT, _MT_TAG):
                raise MalformedMessage("indefinite length on a major type that has none")
            if major == _MT_SIMPLE:
                raise MalformedMessage("break code outside an indefinite-length item")
            if not self._limits.allow_indefinite:
                raise MalformedMessage("indefinite-length items are not accepted here")
            return major, additional, 0, pos
        width = 1 << (additional - 24)
        end = pos + width
        if end > len(self._data):
            raise MalformedMessage("CBOR input ends inside an item head")
        return major, additional, int.from_bytes(self._data[pos:end], "big"), end

    def _skip(self, pos: int, length: int) -> int:
        if length > len(self._data) - pos:
            raise MalformedMessage(f"declared length {length} exceeds the remaining input")
        return pos + length

    def _require_room(self, pos: int, count: int) -> None:
        # Every item takes at least one byte: a count beyond the remaining
        # input is malformed, and is caught before anything is iterated.
        if count > len(self._data) - pos:
            raise MalformedMessage(f"declared count {count} exceeds the remaining input")

    def _scan_map(self, pos: int, entries: int, depth: int) -> int:
        if entries > self._limits.max_map_entries:
            raise MalformedMessage(f"map with {entries} entries exceeds {self._limits.max_map_entries}")
        self._require_room(pos, 2 * entries)
        seen: set[Any] = set()
        for _ in range(entries):
            key_end = self.scan_item(pos, depth + 1)
            self._check_duplicate_key(seen, self._data[pos:key_end])
            pos = self.scan_item(key_end, depth + 1)
        return pos

    def _check_duplicate_key(self, seen: set[Any], encoded_key: bytes) -> None:
        # Keys are compared as decoded values, so two encodings of one key
        # (say a non-shortest length) count as the duplicate they are.
        identity: Any = _simple_key(encoded_key)
        if identity is None:
            value = _build(encoded_key)
            identity = (type(value), value) if _hashable(value) else encoded_key
        else:
            value = identity[1]
        if identity in seen:
            raise MalformedMessage(f"duplicate map key {value!r}")
        seen.add(identity)
        if len(seen) > self._limits.max_map_entries:
            raise MalformedMessage(f"map exceeds {self._limits.max_map_entries} entries")

    def _scan_indefinite(self, major: int, pos: int, depth: int) -> int:
        entries = 0
        seen: set[Any] = set()
        while True:
            if pos >= len(self._data):
                raise MalformedMessage("CBOR input ends inside an indefinite-length item")
            if self._data[pos] == _BREAK:
                if major == _MT_MAP and entries % 2:
                    raise MalformedMessage("indefinite-length map has a key without a value")
                return pos + 1
            if major in (_MT_BYTES, _MT_TEXT):
                chunk_major, additional, length, pos = self._head(pos)
                if chunk_major != major or additional == 31:
                    raise MalformedMessage("indefinite-length string has a foreign chunk")
                pos = self._skip(pos, length)
                continue
            item_end = self.scan_item(pos, depth + 1)
            if major == _MT_MAP and entries % 2 == 0:
                self._check_duplicate_key(seen, self._data[pos:item_end])
            pos = item_end
            entries += 1

    def _scan_simple(self, additional: int, argument: int, pos: int) -> int:
        if additional == 24 and argument < 32:
            raise MalformedMessage(f"two-byte simple value {argument} is not well-formed")
        return pos


def _simple_key(encoded: bytes) -> tuple[type, Any] | None:
    """The identity ``(type, value)`` of a map key that is a definite text string or an integer, read straight
    from its bytes (most keys are: building each with cbor2 was most of a scan's cost); None for any other key.

    The scan has already checked the key's head and length, so only the value is read here: the same value
    :func:`_build` would give, a non-shortest head included (which is why a duplicate under another encoding is
    still caught). Text that is not UTF-8 is malformed, as cbor2 says too.
    """
    initial = encoded[0]
    major, additional = initial >> 5, initial & 0x1F
    if additional == 31 or major not in (_MT_UINT, _MT_NINT, _MT_TEXT):
        return None
    start = 1 if additional < 24 else 1 + (1 << (additional - 24))
    argument = additional if additional < 24 else int.from_bytes(encoded[1:start], "big")
    if major == _MT_UINT:
        return int, argument
    if major == _MT_NINT:
        return int, -1 - argument
    try:
        return str, encoded[start:].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedMessage(f"CBOR item could not be decoded: text string is not UTF-8 ({exc})") from exc


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


# --------------------------------------------------------------------------- diagnostics


def diagnostic(value: Any) -> str:
    """CBOR diagnostic notation (RFC 8949 §8) of a value, or of encoded bytes.

    Used for transcripts: bytes given here are rendered as the CBOR item(s)
    they encode when well-formed, else as a hex byte string. Compact (one
    line) and with every byte string in hex, so digests read as digests.
    """
    import cbor_diag

    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        text = sequence_diagnostic(data)
        return f"h'{data.hex()}'" if text is None else text
    return _rendered(cbor_diag, encode(value))


def sequence_diagnostic(data: bytes, *, maps_only: bool = False) -> str | None:
    """Diagnostic notation of ``data`` when it is a well-formed CBOR item or sequence (what
    :func:`decode_sequence` accepts), else None; one pass, where a check with :func:`decode_sequence` first would
    build every item of a long commit log a second time.

    ``maps_only``: a sequence of two items or more is rendered only when its items are maps, as a commit log's
    are (P1-LOG-1); else None, found at the first item that is not a map. A raw blob often starts like a long
    sequence of small items (zero bytes are each a CBOR 0), which a full scan would walk to its end.
    """
    import cbor_diag

    try:
        items = _item_slices(data, maps_only=maps_only)
        fresh = {item: _build(item) for item in items if item not in _RENDERED}
    except (MalformedMessage, InvalidArgument):
        return None
    if len(items) == 1:
        return _rendered(cbor_diag, data)  # as sent, encoding quirks included
    parts = []
    for item in items:
        text = _RENDERED.get(item)
        if text is None:
            built = fresh[item] if item in fresh else _build(item)  # _remember may have cleared the memory
            try:
                text = _rendered(cbor_diag, encode(built))
            except InvalidArgument:  # a simple value, a tag, undefined: no SDCP message holds one; shown as sent
                text = _rendered(cbor_diag, item)
            _remember(item, text)
        parts.append(text)
    return ", ".join(parts)


def _rendered(cbor_diag: Any, data: bytes) -> str:
    """``cbor_diag``'s notation of ``data``, else its hex: the Rust renderer panics on some well-formed input (an
    empty indefinite-length string, ``7fff``), and a panic surfaces as a BaseException that would otherwise end
    the report writing over one hostile body."""
    try:
        return str(cbor_diag.cbor2diag(data, pretty=False))
    except (KeyboardInterrupt, SystemExit, GeneratorExit):
        raise
    except BaseException:  # pyo3's PanicException derives from BaseException, not Exception
        return f"h'{data.hex()}'"


_RENDERED: dict[bytes, str] = {}
"""Items of sequences already rendered, by their bytes: a commit log is read again after every append, so a
transcript holds each record many times over; each is rendered once."""
_RENDERED_LIMIT = 4096
_RENDERED_ITEM_BYTES = 4096
"""Larger items are rendered every time (the cache stays small whatever the IUT writes)."""


def _remember(item: bytes, text: str) -> None:
    if len(item) > _RENDERED_ITEM_BYTES:
        return
    if len(_RENDERED) >= _RENDERED_LIMIT:
        _RENDERED.clear()
    _RENDERED[item] = text


def _item_slices(data: bytes, *, maps_only: bool = False) -> list[bytes]:
    """The items of a well-formed CBOR sequence, as byte slices (the scan of :func:`decode_sequence`).

    ``maps_only``: a sequence of two items or more must be of maps; the scan stops at the first item that is not.
    """
    data = _as_bytes(data, DEFAULT_LIMITS)
    known, items = _KNOWN.longest_prefix(data, DEFAULT_LIMITS)
    ends = list(known)
    if maps_only and ends and not all(data[begin] >> 5 == _MT_MAP for begin in [0, *ends[:-1]]):
        raise MalformedMessage("a sequence of items that are not all maps")
    scanner = _Scanner(data, DEFAULT_LIMITS)
    scanner.items = items
    start = ends[-1] if ends else 0
    while start < len(data):
        # From the second item on, every item (the first among them) must be a map.
        if maps_only and ends and (data[start] >> 5 != _MT_MAP or (len(ends) == 1 and data[0] >> 5 != _MT_MAP)):
            raise MalformedMessage("a sequence of items that are not all maps")
        start = scanner.scan_item(start)
        ends.append(start)
    _KNOWN.remember(data, DEFAULT_LIMITS, tuple(ends), scanner.items)
    return [data[begin:end] for begin, end in itertools.pairwise([0, *ends])]


__all__ = [
    "DEFAULT_LIMITS",
    "MAX_MESSAGE_SIZE",
    "DecodeLimits",
    "decode",
    "decode_sequence",
    "diagnostic",
    "encode",
    "iter_sequence",
    "sequence_diagnostic",
]
