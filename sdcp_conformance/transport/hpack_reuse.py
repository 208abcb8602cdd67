"""HPACK encoder and decoder that reuse header blocks while the dynamic table is unchanged.

Profiled: h2 normalises, validates and HPACK-encodes every outbound header
list, although the harness sends the same few lists again and again; the
decoder likewise decodes the same response blocks. The bytes on the wire are
the same; only the work is saved. Used by :class:`~.h2client.H2Client`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeAlias

import hpack
from hpack.table import HeaderTable

HPACK_MEMO_SIZE = 256
"""Header blocks each HPACK encoder and decoder remembers while its dynamic table is unchanged."""

_EncoderInput: TypeAlias = (
    "Iterable[hpack.HeaderTuple | tuple[bytes | str, bytes | str] | tuple[bytes | str, bytes | str, bool | None]]"
    " | dict[bytes | str, bytes | str]"
)


class TableMark:
    """What an HPACK dynamic table looked like, to tell later whether it changed.

    Entries are only ever added at the front (a new tuple) and evicted from the
    back, so every insertion or eviction changes the number of entries or the
    identity of the front one; a resize changes ``maxsize``.
    """

    __slots__ = ("front", "maxsize", "size")

    def __init__(self) -> None:
        self.size, self.maxsize = -1, -1
        self.front: object = None

    def matches(self, table: HeaderTable) -> bool:
        entries = table.dynamic_entries
        if len(entries) != self.size or table.maxsize != self.maxsize:
            return False
        return not entries or entries[0] is self.front

    def take(self, table: HeaderTable) -> None:
        entries = table.dynamic_entries
        self.size, self.front, self.maxsize = len(entries), entries[0] if entries else None, table.maxsize


class ReusingEncoder(hpack.Encoder):
    """An HPACK encoder that reuses a header block while the dynamic table is unchanged.

    A block depends only on the header list and the dynamic table. When encoding
    a list leaves the table as it was (every field indexed, or never indexed), the
    same list encodes to the same bytes until the table changes or a size update
    is pending (``resized``). The memo is keyed on the list and its tuples' types
    (a never-indexed field equals a plain tuple) and dropped when the table changes.
    """

    def __init__(self) -> None:
        super().__init__()
        self._memo: dict[tuple[Any, ...], bytes] = {}
        self._mark = TableMark()

    def encode(self, headers: _EncoderInput, huffman: bool = True) -> bytes:
        if isinstance(headers, dict):
            return super().encode(headers, huffman)
        fields = tuple(headers)
        key = (huffman, fields, tuple(map(type, fields)))
        table = self.header_table
        unchanged = not table.resized and self._mark.matches(table)
        if unchanged:
            block = self._memo.get(key)
            if block is not None:
                return block
        block = super().encode(fields, huffman)
        if unchanged and self._mark.matches(table):
            if len(self._memo) >= HPACK_MEMO_SIZE:
                self._memo.clear()
            self._memo[key] = block
        else:
            self._memo.clear()
            self._mark.take(table)
        return block


class ReusingDecoder(hpack.Decoder):
    """An HPACK decoder that reuses the fields of a header block while the dynamic table is unchanged.

    The mirror of :class:`ReusingEncoder`: a block whose decoding left the table
    as it was (every field indexed, or not indexed) decodes to the same fields
    until the table changes. The limits the decoder checks are part of the key.
    """

    def __init__(self) -> None:
        super().__init__()
        self._memo: dict[tuple[Any, ...], tuple[hpack.HeaderTuple, ...]] = {}
        self._mark = TableMark()

    def decode(self, data: bytes, raw: bool = False) -> Iterable[hpack.HeaderTuple]:
        key = (bytes(data), raw, self.max_header_list_size, self.max_allowed_table_size)
        table = self.header_table
        unchanged = self._mark.matches(table)
        if unchanged:
            cached = self._memo.get(key)
            if cached is not None:
                return list(cached)
        fields = list(super().decode(data, raw))
        if unchanged and self._mark.matches(table):
            if len(self._memo) >= HPACK_MEMO_SIZE:
                self._memo.clear()
            self._memo[key] = tuple(fields)
        else:
            self._memo.clear()
            self._mark.take(table)
        return fields


__all__ = ["HPACK_MEMO_SIZE", "ReusingDecoder", "ReusingEncoder", "TableMark"]
