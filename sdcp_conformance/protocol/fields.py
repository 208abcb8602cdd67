"""Member types of the SDCP CDDL (draft §4.1, §5.2) as small checkers.

Each :class:`Field` checks one decoded CBOR value against one CDDL type and
returns the Python value a typed message stores; ``dump`` turns it back into
the CBOR data model. The checkers mirror ``sdcp.cddl`` rule by rule; a test
holds the two in agreement.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

UINT_LIMIT = 1 << 64
"""A CBOR unsigned integer (major type 0) is below 2^64."""


class FieldError(Exception):
    """One member is not of its CDDL type; the message layer adds the problem type."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


@dataclass(frozen=True)
class Field:
    """A CDDL type: ``parse`` checks and converts, ``dump`` converts back."""

    name: str
    parse: Callable[[Any, str], Any]
    dump: Callable[[Any], Any] = lambda value: value


def _is_uint(value: Any) -> bool:
    # bool is an int subclass in Python, but true/false are CBOR simple values.
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < UINT_LIMIT


def uint(*, le: int | None = None, ge: int | None = None, one_of: Sequence[int] = ()) -> Field:
    def parse(value: Any, path: str) -> int:
        if not _is_uint(value):
            raise FieldError(path, f"expected uint, got {_describe(value)}")
        if le is not None and value > le:
            raise FieldError(path, f"{value} is above the bound .le {le}")
        if ge is not None and value < ge:
            raise FieldError(path, f"{value} is below the bound .ge {ge}")
        if one_of and value not in one_of:
            raise FieldError(path, f"{value} is not one of {list(one_of)}")
        return int(value)

    name = "uint" + (f" .le {le}" if le is not None else "") + (f" .ge {ge}" if ge is not None else "")
    return Field(name, parse)


def bstr(*, size: int | None = None) -> Field:
    def parse(value: Any, path: str) -> bytes:
        if not isinstance(value, bytes):
            raise FieldError(path, f"expected bstr, got {_describe(value)}")
        if size is not None and len(value) != size:
            raise FieldError(path, f"expected bstr .size {size}, got {len(value)} octets")
        return value

    return Field(f"bstr .size {size}" if size is not None else "bstr", parse)


def _instance_of(name: str, kind: type) -> Field:
    """The CDDL type ``name``: any value of the Python type ``kind``, kept as it is."""

    def parse(value: Any, path: str) -> Any:
        if not isinstance(value, kind):
            raise FieldError(path, f"expected {name}, got {_describe(value)}")
        return value

    return Field(name, parse)


def tstr() -> Field:
    return _instance_of("tstr", str)


def boolean() -> Field:
    return _instance_of("bool", bool)


def array(item: Field, *, min_items: int = 0) -> Field:
    def parse(value: Any, path: str) -> tuple[Any, ...]:
        if not isinstance(value, list):
            raise FieldError(path, f"expected array, got {_describe(value)}")
        if len(value) < min_items:
            raise FieldError(path, f"expected at least {min_items} items, got {len(value)}")
        return tuple(item.parse(element, f"{path}[{index}]") for index, element in enumerate(value))

    def dump(value: tuple[Any, ...]) -> list[Any]:
        return [item.dump(element) for element in value]

    quantifier = "+" if min_items else "*"
    return Field(f"[{quantifier} {item.name}]", parse, dump)


def choice(*alternatives: Field) -> Field:
    """A CDDL type choice ``a / b``: the first alternative that matches wins."""

    def parse(value: Any, path: str) -> Any:
        reasons = []
        for alternative in alternatives:
            try:
                return alternative.parse(value, path)
            except FieldError as exc:
                reasons.append(exc.reason)
        raise FieldError(path, "matches no alternative: " + "; ".join(reasons))

    def dump(value: Any) -> Any:
        if isinstance(value, tuple):
            return [_dump_plain(element) for element in value]
        return value

    return Field(" / ".join(alternative.name for alternative in alternatives), parse, dump)


def _dump_plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _describe(value: Any) -> str:
    if isinstance(value, bool):
        return f"bool {value}"
    if isinstance(value, int):
        return f"int {value}"
    return type(value).__name__


__all__ = [
    "UINT_LIMIT",
    "Field",
    "FieldError",
    "array",
    "boolean",
    "bstr",
    "choice",
    "tstr",
    "uint",
]
