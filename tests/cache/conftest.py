"""Fixtures for the MLC tests: a settable clock and a store of each kind, closed after the test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sdcp_conformance.cache.store import MemoryStore, ObjectStore, SqliteStore


class FakeClock:
    """A clock the test moves by hand, so leases expire without waiting."""

    def __init__(self, now: float = 1_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ObjectStore]:
    made: ObjectStore = MemoryStore() if request.param == "memory" else SqliteStore(tmp_path / "c.db")
    yield made
    made.close()
