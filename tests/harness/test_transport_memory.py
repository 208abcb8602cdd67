"""A 2 GiB response body costs the harness less than 64 MiB of memory (issue 12: bounded reads).

Measured in a fresh process (a test process's peak RSS says nothing about
one request): a certification against the misbehaving server's 2 GiB modes,
after a warm-up certification, with the peak RSS reset just before
(``/proc/self/clear_refs``), so the growth is the harness's for that body.
The figures are printed (``-s -n 0``: one process, whose output -s shows); the bound is asserted.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

LIMIT_MIB = 64

SCRIPT = r"""
import asyncio, json, sys
from pathlib import Path
from sdcp_conformance.harness.certify import certify
from sdcp_conformance.testing.misbehaving import MisbehavingServer, Mode
from sdcp_conformance.testing.targets import local_target, misbehaving_config

def status(field):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise KeyError(field)

def reset_peak():
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False

async def main(folder):
    target = local_target(Path(folder), request_timeout_s=10.0)
    figures = {}
    for mode in (Mode.STATUS_500_WITHOUT_BODY, Mode.HUGE_BODY, Mode.HUGE_BODY_UNDECLARED):
        async with MisbehavingServer(misbehaving_config(target, mode, None)):
            before = status("VmRSS")
            reset = reset_peak()
            report = await certify(target, selectors=["VER-SANITY-001"], seed=1)
            notes = [entry.note for result in report.results for entry in result.transcript]
            figures[mode.value] = {"growth_mib": status("VmHWM") - before, "peak_reset": reset,
                                   "failed": report.failed, "notes": notes}
    print(json.dumps(figures))

asyncio.run(main(sys.argv[1]))
"""


@pytest.mark.slow
def test_a_2_gib_body_grows_the_harness_by_less_than_64_mib(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], capture_output=True, text=True,
                          timeout=300, cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr[-3000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    for mode in ("2gib-body", "2gib-body-undeclared"):
        figure = figures[mode]
        print(f"\nRSS {mode}: peak grew by {figure['growth_mib']:.1f} MiB (peak reset: {figure['peak_reset']})")
        assert figure["failed"] and any("stage=body-over-limit" in note for note in figure["notes"])
        assert figure["growth_mib"] < LIMIT_MIB
