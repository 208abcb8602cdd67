"""The requirement table's row: one sentence the harness judges, and how a refusal under it must look.

h11 keeps every legal (state, event) pair in one table with the RFC sentence
beside it; the judge keeps every sentence it judges in one table the same
way. A row names its source (a draft section or a profile item), quotes the
sentence verbatim, carries its level, and — where the sentence demands a
refusal — the status and problem type that refusal must have, with any
alternatives the texts allow. Cases, the fuzzers and the coverage table read
the same rows, so "is this MUST tested?" and "how is it judged?" have one
answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.judge.levels import Level
from sdcp_conformance.protocol.problems import ProblemType

ROLES = ("verifier", "drafter", "router", "cache", "any")
DECLARATION_SOURCE = "declaration"
"""The source of a row that holds an IUT to its vendor's declaration, not to a sentence of the draft or profile."""
"""``any``: the sentence binds every party (transport, message encoding)."""


@dataclass(frozen=True)
class Refusal:
    """How an IUT must refuse under a row: ``status`` with ``problem`` (None: any body), or one of ``also``.

    ``type_level`` is the level at which the exact status and type are judged,
    when it differs from the row's own: the draft may demand the refusal
    ("The proposal MUST carry q_rows") while only the profile names its type
    (P1-Q-1). A 2xx, a 5xx or no answer is judged at the row's level; another
    4xx at ``type_level``.
    """

    status: int
    problem: ProblemType | None
    also: tuple[tuple[int, ProblemType | None], ...] = ()
    type_level: Level | None = None
    any_client_error: bool = False
    """Any 4xx will do (where neither text names a status)."""

    def accepts(self, status: int | None, problem: ProblemType | None) -> bool:
        if self.any_client_error and status is not None and 400 <= status < 500:
            return True
        return any(status == want_status and (want is None or problem is want)
                   for want_status, want in ((self.status, self.problem), *self.also))

    def describe(self) -> str:
        if self.any_client_error:
            return "a 4xx refusal"
        return " or ".join(_shown(status, problem) for status, problem in ((self.status, self.problem), *self.also))


def refusal(problem: ProblemType, *also: ProblemType | tuple[int, ProblemType | None],
            type_level: Level | None = None) -> Refusal:
    """A refusal with ``problem``'s own Table 2 status (and alternatives)."""
    extra = tuple(item if isinstance(item, tuple) else (item.status, item) for item in also)
    return Refusal(problem.status, problem, extra, type_level)


def _shown(status: int, problem: ProblemType | None) -> str:
    return f"{status} {problem.suffix}" if problem is not None else str(status)


@dataclass(frozen=True)
class Row:
    """One requirement the harness judges."""

    id: str
    """Stable forever: ``R-<section>-<NAME>`` for a draft sentence, ``P1-…[/<name>]`` for a profile item."""
    source: str
    """Where the sentence stands: a draft section (``6.3``) or a profile item (``P1-ERR-2``)."""
    quote: str
    """Verbatim from the draft or the profile (parts joined by `` ... ``; a test checks it)."""
    level: Level
    binds: str
    """The party the sentence binds: verifier, drafter, router or cache."""
    refusal: Refusal | None = None
    ambient: bool = False
    """Judged in every conversation, whatever the case is about (the digest chain, a valid request served)."""
    not_judged: str = ""
    """Why no case judges this row (required when none does)."""
    not_judged_by: tuple[tuple[str, str], ...] = ()
    """(role, why) for a row binding every party that one role's suite has no occasion to judge."""

    def unjudged_reason(self, role: str) -> str:
        """Why ``role``'s suite judges no case against this row ("" when it should)."""
        return self.not_judged or dict(self.not_judged_by).get(role, "")

    def __post_init__(self) -> None:
        if self.binds not in ROLES:
            raise InvalidArgument(f"row {self.id}: binds {self.binds!r} is not one of {ROLES}")

    @property
    def from_draft(self) -> bool:
        return not self.source.startswith("P1-") and not self.from_declaration

    @property
    def from_declaration(self) -> bool:
        """The vendor's own claim (``DECL-CLAIM``, D-JUDGE-DECL-1): judged strictly, quoting no text of ours."""
        return self.source == DECLARATION_SOURCE

    @property
    def type_level(self) -> Level:
        if self.refusal is not None and self.refusal.type_level is not None:
            return self.refusal.type_level
        return self.level


class Table:
    """Rows by ID; IDs are unique, and a lookup of an unknown ID is a harness bug, said at once."""

    def __init__(self, rows: Iterable[Row] = ()) -> None:
        self._rows: dict[str, Row] = {}
        self.extend(rows)

    def extend(self, rows: Iterable[Row]) -> None:
        for row in rows:
            if row.id in self._rows:
                raise InvalidArgument(f"duplicate requirement row {row.id}")
            self._rows[row.id] = row

    def __getitem__(self, row_id: str) -> Row:
        try:
            return self._rows[row_id]
        except KeyError:
            raise InvalidArgument(f"no requirement row {row_id!r}") from None

    def __contains__(self, row_id: object) -> bool:
        return row_id in self._rows

    def __iter__(self) -> Iterator[Row]:
        return iter(self._rows.values())

    def __len__(self) -> int:
        return len(self._rows)

    def binding(self, role: str) -> list[Row]:
        return [row for row in self if row.binds == role]


__all__ = ["ROLES", "Refusal", "Row", "Table", "refusal"]
