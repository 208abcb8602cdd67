"""Record (or check) the per-case verdicts of each role's reference and of every mutant at a fixed seed.

    python tools/record_verdicts.py            # write tests/fixtures/recorded-verdicts.json
    python tools/record_verdicts.py --check    # certify again; exit 1 listing every case whose verdict changed

The recording is made before a refactor and checked after it (issue: one role layer): the reference of each role
over its whole catalogue, each mutant over its recorded killers (sdcp_conformance.mutants.verdict_record).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import time
from pathlib import Path

from sdcp_conformance.harness.suites import SUITES
from sdcp_conformance.mutants.verdict_record import VARIES, differences, load_record, merged, record_role, write_record

RECORD = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "recorded-verdicts.json"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="compare with the recording instead of writing it")
    parser.add_argument("--role", action="append", choices=sorted(SUITES), help="only this role (repeatable)")
    parser.add_argument("--jobs", type=int, default=4, help="certifications at the same time (default 4)")
    parser.add_argument("--file", type=Path, default=RECORD, help=f"the recording (default {RECORD.name})")
    parser.add_argument("--runs", type=int, default=3,
                        help="recording: certify each run this many times; verdicts that differ are all kept "
                             "(default 3)")
    args = parser.parse_args()
    # The embedded IUTs' own log lines (a mutant's crash in a handler, say) are what the verdicts judge already.
    logging.disable(logging.CRITICAL)
    roles = args.role or sorted(SUITES)
    record = load_record(args.file) if args.file.exists() else {}
    found = 0
    for role in roles:
        started = time.perf_counter()
        repeats = 1 if args.check else max(1, args.runs)
        now = merged([asyncio.run(record_role(role, jobs=args.jobs)) for _ in range(repeats)])
        varied = sum(VARIES in verdict for cases in now.values() for verdict in cases.values())
        print(f"{role}: {len(now)} runs, {sum(len(cases) for cases in now.values())} verdicts, {varied} varying "
              f"({time.perf_counter() - started:.0f} s)", flush=True)
        if args.check:
            changed = differences(record.get(role, {}), now)
            found += len(changed)
            for line in changed:
                print(f"  {role} {line}")
        else:
            record[role] = now
    if args.check:
        print("no verdict changed" if not found else f"{found} verdict(s) changed")
        return 1 if found else 0
    args.file.parent.mkdir(parents=True, exist_ok=True)
    write_record(record, args.file)
    print(f"wrote {args.file}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
