"""What every test shares: child processes find the checkout's test instruments.

pytest puts the checkout's root on its own ``sys.path`` (``pythonpath`` in ``pyproject.toml``), so tests import
``tests.standins.…``; the stand-ins also run as child processes (``python -m tests.standins.standin_node …``),
which find them from any working folder once the root is on ``PYTHONPATH`` too.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def pytest_configure(config: pytest.Config) -> None:
    del config
    paths = os.environ.get("PYTHONPATH", "").split(os.pathsep) if os.environ.get("PYTHONPATH") else []
    if str(ROOT) not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), *paths])
