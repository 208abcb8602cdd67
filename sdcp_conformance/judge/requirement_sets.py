"""Requirement sets: the rows a certification is scored against, frozen per draft revision and profile version.

The harness's requirement table (:data:`~sdcp_conformance.judge.TABLE`) grows with every release; a certification
must not. A released set is a file under ``judge/sets/`` naming every row it scores with the level it has there
(MCP's conformance suite: one requirement set per spec revision, immutable once released). ``released.toml`` lists
the released sets in release order with each file's SHA-256; a released file never changes (a test holds every
file to its digest). The newest listed set is the default of ``certify``; ``certify --requirements NAME`` scores
against an older one.

Scoring under a set (D-JUDGE-SET-1, ``judge/decisions.toml``): a finding on a row the set holds counts at the level the
set gives that row (its refusal's type level, for a finding on a refusal's status or type); a finding on a row the
set does not hold — a row added after the set was released — or holds as ``not_scored`` is reported with its
reason and counts toward no verdict.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.judge.levels import Level
from sdcp_conformance.judge.rows import Table

SETS_PACKAGE = "sdcp_conformance.judge"
SETS_FOLDER = "sets"
MANIFEST = "released.toml"
FORMAT = "sdcp-requirement-set/1"
VALIDITY_DAYS = 365
"""D-JUDGE-SET-2: a certification is current for this many days after its run finished, and while the set it was
judged against is the newest released one; after either it is stale (it still verifies)."""


@dataclass(frozen=True)
class SetRow:
    """A row as a released set scores it."""

    level: Level
    type_level: Level
    source: str
    binds: str


@dataclass(frozen=True)
class RequirementSet:
    """One released set: its rows and the rows it lists but does not score."""

    name: str
    draft: str
    profile: str
    released: dt.date
    rows: Mapping[str, SetRow]
    not_scored: Mapping[str, str] = field(default_factory=dict)
    """Row ID → why the set does not score it (pending, say)."""
    sha256: str = ""
    """The SHA-256 of the set's file (what ``released.toml`` records)."""

    def unscored_reason(self, row: str) -> str:
        """Why a finding on ``row`` counts toward no verdict under this set ("" when it counts)."""
        if not row:
            return ""  # an observation no row binds: INFORMATIONAL, never counted against anyone
        if row in self.not_scored:
            return f"not scored in {self.name}: {self.not_scored[row]}"
        if row not in self.rows:
            return f"not scored in {self.name}: the row was added after the set was released"
        return ""

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "draft": self.draft, "profile": self.profile,
                "released": self.released.isoformat(), "sha256": self.sha256, "rows": len(self.rows),
                "not_scored": len(self.not_scored)}


def set_document(name: str, draft: str, profile: str, released: dt.date, table: Table,
                 not_scored: Mapping[str, str] | None = None) -> bytes:
    """The file of a new set holding every row of ``table`` (what ``tools/release_requirements.py`` writes)."""
    rows = {row.id: {"level": row.level.value, "type_level": row.type_level.value, "source": row.source,
                     "binds": row.binds} for row in table}
    document = {"format": FORMAT, "name": name, "draft": draft, "profile": profile,
                "released": released.isoformat(), "rows": dict(sorted(rows.items())),
                "not_scored": dict(sorted((not_scored or {}).items()))}
    return (json.dumps(document, indent=1, sort_keys=False, ensure_ascii=False) + "\n").encode("utf-8")


def parse_set(data: bytes, where: str) -> RequirementSet:
    """A set from its file's bytes; a malformed file is an :class:`InvalidArgument` naming ``where``."""
    try:
        document = json.loads(data)
        if document.get("format") != FORMAT:
            raise ValueError(f"format {document.get('format')!r} is not {FORMAT}")
        rows = {row_id: SetRow(Level(row["level"]), Level(row["type_level"]), str(row["source"]), str(row["binds"]))
                for row_id, row in document["rows"].items()}
        return RequirementSet(str(document["name"]), str(document["draft"]), str(document["profile"]),
                              dt.date.fromisoformat(document["released"]), rows,
                              {str(k): str(v) for k, v in document.get("not_scored", {}).items()},
                              hashlib.sha256(data).hexdigest())
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InvalidArgument(f"{where}: not a requirement set ({exc})") from exc


def _folder() -> Any:
    return resources.files(SETS_PACKAGE).joinpath(SETS_FOLDER)


@cache
def manifest() -> tuple[dict[str, str], ...]:
    """The released sets in release order (name, file, sha256, released), as ``released.toml`` lists them."""
    entries = tomllib.loads(_folder().joinpath(MANIFEST).read_text(encoding="utf-8")).get("set", [])
    return tuple({key: str(value) for key, value in entry.items()} for entry in entries)


def released_names() -> list[str]:
    return [entry["name"] for entry in manifest()]


def newest_name() -> str:
    return released_names()[-1]


@cache
def load_set(name: str | None = None) -> RequirementSet:
    """A released set by name (the newest when None); its file must match the digest ``released.toml`` records."""
    name = name or newest_name()
    entry = next((entry for entry in manifest() if entry["name"] == name), None)
    if entry is None:
        raise InvalidArgument(f"no released requirement set {name!r} (released: {', '.join(released_names())})")
    data = _folder().joinpath(entry["file"]).read_bytes()
    loaded = parse_set(data, entry["file"])
    if loaded.sha256 != entry["sha256"] or loaded.name != name:
        raise InvalidArgument(f"the requirement set file {entry['file']} is not the released {name} "
                              f"(SHA-256 {loaded.sha256}, released as {entry['sha256']}): a released set never "
                              "changes")
    return loaded


def superseded_by(name: str) -> str | None:
    """The newest released set when it is not ``name`` (None when ``name`` is the newest)."""
    newest = newest_name()
    return newest if name != newest else None


__all__ = ["FORMAT", "MANIFEST", "VALIDITY_DAYS", "RequirementSet", "SetRow", "load_set", "manifest",
           "newest_name", "parse_set", "released_names", "set_document", "superseded_by"]
