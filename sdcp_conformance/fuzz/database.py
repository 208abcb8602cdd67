"""Hypothesis' persistent example database: a directory by default, Redis when a URL is given.

Parallel CI workers that point at one Redis share their corpus; the Redis
client is imported only when asked for, and its absence is reported plainly.
"""

from __future__ import annotations

from pathlib import Path

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


__all__ = ["DEFAULT_DIRECTORY", "open_database"]
