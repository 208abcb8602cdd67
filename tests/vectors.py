"""The test vectors of ``fixtures/vectors/``, written by generators that import nothing from ``sdcp_conformance``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FOLDER = Path(__file__).resolve().parents[1] / "fixtures" / "vectors"


def read_vectors(name: str) -> Any:
    """The JSON file ``name`` (``core.json``, ``sampling.json``, ...) of :data:`FOLDER`, parsed."""
    return json.loads((FOLDER / name).read_text(encoding="utf-8"))
