"""Hypothesis' persistent example database: a directory by default, Redis when a URL is given.

Parallel CI workers that point at one Redis share their corpus; the Redis
client is imported only when asked for, and its absence is reported plainly.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from hypothesis import seed as hypothesis_seed
from hypothesis import settings
from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase

from sdcp_conformance.errors import InvalidArgument

DEFAULT_DIRECTORY = Path(".sdcp-fuzz") / "examples"


def open_database(spec: str | None) -> ExampleDatabase | None:
    """``None`` or ``""``: no database; ``redis://…`` or ``rediss://…``: Redis; anything else: a directory."""
    if not spec:
        return None
    if spec.startswith(("redis://", "rediss://", "unix://")):
        try:
            import redis  # type: ignore[import-not-found,unused-ignore]
            from hypothesis.extra.redis import RedisExampleDatabase
        except ImportError as exc:
            raise InvalidArgument(f"--database {spec}: the Redis database needs the `redis` package "
                                  f"(pip install redis): {exc}") from exc
        return RedisExampleDatabase(redis.Redis.from_url(spec))
    return DirectoryBasedExampleDatabase(str(Path(spec)))


Test = TypeVar("Test", bound=Callable[..., Any])


def seeded(test: Test, seed: int, database: ExampleDatabase | None) -> Test:
    """``test`` (a Hypothesis test) generating from ``seed`` while still reading and writing ``database``.

    Hypothesis' ``@seed`` turns the example database off, so that a seeded run
    repeats exactly; a fleet of fuzz workers sharing one corpus needs both: the
    reuse phase replays the corpus first (a failure another worker found comes
    back within the first examples), then generation follows the seed. So the
    database is put back on the settings ``@seed`` replaced.
    """
    test = hypothesis_seed(seed)(test)
    if database is not None:
        applied = test._hypothesis_internal_use_settings  # type: ignore[attr-defined]
        test._hypothesis_internal_use_settings = settings(applied, database=database)  # type: ignore[attr-defined]
    return test


__all__ = ["DEFAULT_DIRECTORY", "open_database", "seeded"]
