"""Record each case's duration from a full certification, for ``certify --shard`` to balance the shards.

    sdcp-conformance certify --role verifier --seed 1 --report-dir reports/full
    python tools/record_durations.py reports/full

writes ``sdcp_conformance/suites/<role>/durations.json`` (case ID → seconds,
the longest of its runs). Shards stay deterministic without it (unknown cases
count as the median); it only makes them even. Rerun it when cases change
much; a stale file changes which shard runs a case, never whether it runs.
"""

from __future__ import annotations

import sys
from pathlib import Path

from sdcp_conformance.harness.shards import DURATIONS_FILE, write_durations
from sdcp_conformance.report.json_report import load_document

SUITES = Path(__file__).resolve().parent.parent / "sdcp_conformance" / "suites"


def main(folder: str) -> int:
    document = load_document(Path(folder))
    run = document["run"]
    if run.get("selectors") or run.get("excluded") or run.get("shard") or run.get("mutant"):
        print(f"{folder}: not a full run of the reference (selectors, shard or mutant given)", file=sys.stderr)
        return 2
    role = str(run["role"])
    path = SUITES / role / DURATIONS_FILE
    write_durations(path, [(record["id"], float(record["duration_s"])) for record in document["results"]])
    print(f"wrote {path} ({len({r['id'] for r in document['results']})} cases)")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
