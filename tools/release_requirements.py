"""Release the harness's requirement table as a new requirement set (a released set never changes).

    python tools/release_requirements.py NAME --draft draft-sdcp-00 --profile P1-2026-12-07 [--not-scored ROW=WHY]

Writes ``sdcp_conformance/judge/sets/NAME.json`` from the current table and appends the set, with the file's
SHA-256, to ``released.toml``; refuses a name already released. ``--from-json FILE`` takes the rows from a dump
of an older table instead (``{row id: {level, type_level, source, binds}}``), to record a set released before
this tool existed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import sys
from pathlib import Path

from sdcp_conformance.judge import TABLE
from sdcp_conformance.judge.levels import Level
from sdcp_conformance.judge.requirement_sets import MANIFEST, released_names, set_document
from sdcp_conformance.judge.rows import Row, Table

SETS = Path(__file__).resolve().parents[1] / "sdcp_conformance" / "judge" / "sets"


def _table_from(path: Path) -> Table:
    rows = json.loads(path.read_text(encoding="utf-8"))
    return Table(Row(row_id, row["source"], "", Level(row["level"]), row["binds"]) if row["level"] == row["type_level"]
                 else _typed(row_id, row) for row_id, row in rows.items())


def _typed(row_id: str, row: dict[str, str]) -> Row:
    from sdcp_conformance.judge.rows import Refusal

    return Row(row_id, row["source"], "", Level(row["level"]), row["binds"],
               refusal=Refusal(400, None, type_level=Level(row["type_level"])))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("name")
    parser.add_argument("--draft", required=True)
    parser.add_argument("--profile", required=True)
    parser.add_argument("--released", type=dt.date.fromisoformat, default=dt.date.today())
    parser.add_argument("--not-scored", action="append", default=[], metavar="ROW=WHY")
    parser.add_argument("--from-json", type=Path, default=None)
    args = parser.parse_args()
    if args.name in released_names():
        print(f"{args.name} is released already: a released set never changes", file=sys.stderr)
        return 2
    table = _table_from(args.from_json) if args.from_json else TABLE
    not_scored = dict(item.split("=", 1) for item in args.not_scored)
    data = set_document(args.name, args.draft, args.profile, args.released, table, not_scored)
    path = SETS / f"{args.name}.json"
    path.write_bytes(data)
    with (SETS / MANIFEST).open("a", encoding="utf-8") as manifest:
        manifest.write(f'\n[[set]]\nname = "{args.name}"\nfile = "{path.name}"\n'
                       f'sha256 = "{hashlib.sha256(data).hexdigest()}"\nreleased = "{args.released.isoformat()}"\n')
    print(f"released {args.name}: {len(table)} rows, {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
