"""How long `sdcp-conformance` takes before it does anything, per command, and whether torch was imported.

Prints, for each command, the median wall time of a few runs in a fresh
interpreter, the import time `python -X importtime` reports for the package,
and which heavy modules (torch, schemathesis, hypothesis, matplotlib) the
command loaded. Tests never time anything; this script is where the figure
lives (issue: `--version`, `--help` and `pki` answer in under a second).

    python benchmarks/bench_cli_startup.py [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time

HEAVY = ("torch", "schemathesis", "hypothesis", "matplotlib")
COMMANDS = (["--version"], ["--help"], ["pki", "--help"], ["pki", "init", "{tmp}/pki"], ["report", "--help"],
            ["check", "--help"], ["bundle", "--help"], ["certify", "--help"], ["certify", "--list"])
PROGRAM = """
import json, sys
from sdcp_conformance.cli import main
try:
    main({args!r})
except SystemExit:
    pass
print(json.dumps([m for m in {heavy!r} if m in sys.modules]), file=sys.stderr)
"""


def one(args: list[str]) -> tuple[float, list[str], float]:
    """(wall seconds, heavy modules imported, package import seconds per -X importtime)."""
    program = PROGRAM.format(args=args, heavy=HEAVY)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", program], capture_output=True, text=True,
                          timeout=120, check=False)
    wall = time.perf_counter() - started
    heavy = json.loads(done.stderr.strip().splitlines()[-1])
    cumulative = [int(match.group(1)) for match in
                  re.finditer(r"import time:\s+\d+ \|\s+(\d+) \| sdcp_conformance\.cli$", done.stderr, re.M)]
    return wall, heavy, (cumulative[0] / 1e6 if cumulative else 0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{'command':34} {'median wall s':>13} {'cli import s':>12}  heavy modules")
        for template in COMMANDS:
            samples = []
            for index in range(runs):
                args = [word.format(tmp=f"{tmp}/{index}") for word in template]
                samples.append(one(args))
            wall = statistics.median(sample[0] for sample in samples)
            imported = statistics.median(sample[2] for sample in samples)
            heavy = ", ".join(samples[-1][1]) or "none"
            print(f"{' '.join(template).replace('{tmp}/', ''):34} {wall:13.2f} {imported:12.2f}  {heavy}")


if __name__ == "__main__":
    main()
