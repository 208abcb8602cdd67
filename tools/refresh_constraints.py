"""Refresh ``constraints.txt``: resolve the whole dependency tree afresh in a throwaway venv and pin it.

    python tools/refresh_constraints.py            # writes constraints.txt
    python tools/refresh_constraints.py --check    # exit 1 if a fresh resolution differs
    python tools/refresh_constraints.py --python VENV/bin/python   # pin what that (tested) venv holds

Only torch is pinned by hand (the CPU build, ``TORCH``): a bare ``torch``
requirement can pull a multi-GB CUDA build. Every other pin is what the
environment named by ``--python`` holds (the one the test suite passed in), or
else whatever pip resolves today for the package with all its extras; commit the
result and run the test suite before relying on it.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONSTRAINTS = ROOT / "constraints.txt"
TORCH = "torch==2.13.0"
EXTRAS = "test"
"""The test extra pulls in every other (reference, fuzz-api, redis): the whole tree."""
HEADER = """\
# Every package the project and its extras install ([test] pulls in [reference], [fuzz-api] and [redis]),
# pinned (pip freeze of the venv the test suite passed in, or of a fresh resolution); the base install uses a
# subset (no torch).
# Install with `pip install -c constraints.txt …`. Refresh: `python tools/refresh_constraints.py`.
# torch is the CPU build these machines carry locally; a bare torch can pull a multi-GB CUDA build.
"""


def freeze(python: str) -> str:
    return subprocess.run([python, "-m", "pip", "freeze", "--exclude-editable"], check=True,
                          capture_output=True, text=True).stdout


def resolve(python: str | None) -> str:
    if python is not None:
        # The environment the test suite ran in: its pins are the ones known to pass.
        frozen = freeze(python)
    else:
        with tempfile.TemporaryDirectory(prefix="sdcp-lock-") as folder:
            venv.create(folder, with_pip=True)
            fresh = str(Path(folder) / "bin" / "python")
            pin = Path(folder) / "torch.txt"
            pin.write_text(TORCH + "\n", encoding="utf-8")
            subprocess.run([fresh, "-m", "pip", "install", "-q", "-c", str(pin), "-e", f"{ROOT}[{EXTRAS}]"],
                           check=True)
            frozen = freeze(fresh)
    lines = sorted((line for line in frozen.splitlines() if line and not line.startswith("#")), key=str.lower)
    lines = [TORCH if line.lower().startswith("torch==") else line for line in lines]
    return HEADER + "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="compare only")
    parser.add_argument("--python", help="freeze this interpreter's environment instead of resolving afresh")
    args = parser.parse_args()
    text = resolve(args.python)
    if args.check:
        same = CONSTRAINTS.read_text(encoding="utf-8") == text
        print("constraints.txt is current" if same else "constraints.txt differs from a fresh resolution")
        return 0 if same else 1
    CONSTRAINTS.write_text(text, encoding="utf-8")
    print(f"wrote {CONSTRAINTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
