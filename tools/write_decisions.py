"""Write ``sdcp_conformance/suites/DECISIONS.md``: every judging decision (D-JUDGE-…), generated from the data in
``sdcp_conformance/judge/decisions.toml`` (:func:`~sdcp_conformance.judge.decisions.decisions_markdown`).

    python tools/write_decisions.py           # (re)write the file
    python tools/write_decisions.py --check   # exit 1, saying so in one line, if the file is not what it would write
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sdcp_conformance.judge.decisions import decisions_markdown  # noqa: E402 (the checkout first, as run from tools/)

TARGET = ROOT / "sdcp_conformance" / "suites" / "DECISIONS.md"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if the file differs from what would be written")
    args = parser.parse_args(argv)
    text = decisions_markdown()
    if args.check:
        current = TARGET.read_text(encoding="utf-8") if TARGET.exists() else None
        if current != text:
            state = "is missing" if current is None else "is out of date"
            print(f"{TARGET.relative_to(ROOT)} {state}: run python tools/write_decisions.py", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
