"""Storage backends of the MLC: named objects with bytes, a strong ETag and an optional lease.

Two backends share one contract: :class:`MemoryStore` (the default) and
:class:`SqliteStore`, which commits every write before returning so that a
restarted cache loses nothing it acknowledged. Neither reads a clock: the
caller passes ``now`` (seconds on the clock leases are measured with).
"""

from __future__ import annotations

import abc
import hashlib
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path

from sdcp_conformance.errors import InvalidArgument


@dataclass(frozen=True)
class StoredObject:
    """One object as the MLC holds it."""

    data: bytes
    etag: str
    """A strong entity-tag, quotes included (RFC 9110 §8.8.3), e.g. ``"g7-1a2b3c4d5e6f7a8b"``."""
    lease_until: float | None
    """Clock time until which the object must be kept; ``None``: kept until deleted."""

    def lease_active(self, now: float) -> bool:
        return self.lease_until is not None and now < self.lease_until

    def expired(self, now: float) -> bool:
        return self.lease_until is not None and now >= self.lease_until


def make_etag(generation: int, data: bytes) -> str:
    """D-MLC-1: every successful write gets a new ETag, even when its bytes equal the old ones.

    P1-LOG-1 makes an append succeed "only if no other append has happened
    since the writer last read the log" (§6.8), so the validator must change
    with every write, not only with the content. The ETag is therefore a
    store-wide write counter (the generation, persisted by SQLite) plus a
    short content hash, so that ETags handed out before a restart of a memory
    store cannot match different content afterwards.
    """
    return f'"g{generation}-{hashlib.sha256(data).hexdigest()[:16]}"'


def lease_after_put(old: StoredObject | None, lease_ms: int | None, now: float) -> float | None:
    """D-MLC-2: the lease an object gets from a PUT (P1-MLC-3).

    * A PUT without ``SDCP-Lease`` stores an object with no lease: it is kept
      until it is deleted (the profile promises nothing shorter to anyone).
    * A PUT with ``SDCP-Lease: ms`` keeps the object at least ``ms`` from now;
      a lease still running from an earlier PUT is never shortened, because
      it is a promise already made to a writer.
    * Once its lease has passed, a leased object is evicted (on its next
      access), so a writer whose lease is too short sees the consequence.
    """
    if lease_ms is None:
        return None
    until = now + lease_ms / 1000.0
    if old is not None and old.lease_active(now) and old.lease_until is not None:
        return max(until, old.lease_until)
    return until


class ObjectStore(abc.ABC):
    """Objects by path. Thread-safe: the cache app may run on a server thread."""

    def __init__(self) -> None:
        self._lock = threading.RLock()

    @property
    def lock(self) -> threading.RLock:
        """Held by the app across read-check-write so that conditional writes are atomic."""
        return self._lock

    def get(self, path: str, now: float) -> StoredObject | None:
        """The object at ``path`` or ``None``; an object whose lease has passed is evicted first."""
        with self._lock:
            found = self._load(path)
            if found is not None and found.expired(now):
                self._remove(path)
                return None
            return found

    def put(self, path: str, data: bytes, *, lease_ms: int | None, now: float) -> StoredObject:
        """Store ``data`` at ``path`` and return the object with its new ETag and lease."""
        if lease_ms is not None and lease_ms < 0:
            raise InvalidArgument("a lease cannot be negative")
        with self._lock:
            old = self.get(path, now)
            generation = self._next_generation()
            stored = StoredObject(bytes(data), make_etag(generation, data), lease_after_put(old, lease_ms, now))
            self._save(path, stored, generation)
            return stored

    def delete(self, path: str) -> bool:
        """Remove the object at ``path``; ``False`` if there was none."""
        with self._lock:
            return self._remove(path)

    def paths(self) -> list[str]:
        """Every stored path, sorted (expired objects included until accessed)."""
        with self._lock:
            return sorted(self._paths())

    def close(self) -> None:  # noqa: B027 - only stores holding resources override it
        """Release resources; the store is unusable afterwards."""

    @abc.abstractmethod
    def _load(self, path: str) -> StoredObject | None: ...

    @abc.abstractmethod
    def _save(self, path: str, stored: StoredObject, generation: int) -> None: ...

    @abc.abstractmethod
    def _remove(self, path: str) -> bool: ...

    @abc.abstractmethod
    def _paths(self) -> list[str]: ...

    @abc.abstractmethod
    def _next_generation(self) -> int: ...


class MemoryStore(ObjectStore):
    """Objects in a dict; everything is lost when the process ends."""

    def __init__(self) -> None:
        super().__init__()
        self._objects: dict[str, StoredObject] = {}
        self._generation = 0

    def _load(self, path: str) -> StoredObject | None:
        return self._objects.get(path)

    def _save(self, path: str, stored: StoredObject, generation: int) -> None:
        self._objects[path] = stored

    def _remove(self, path: str) -> bool:
        return self._objects.pop(path, None) is not None

    def _paths(self) -> list[str]:
        return list(self._objects)

    def _next_generation(self) -> int:
        self._generation += 1
        return self._generation


_SCHEMA = """
CREATE TABLE IF NOT EXISTS objects (
    path TEXT PRIMARY KEY,
    data BLOB NOT NULL,
    etag TEXT NOT NULL,
    lease_until REAL
);
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);
INSERT OR IGNORE INTO meta (key, value) VALUES ('generation', 0);
"""


class SqliteStore(ObjectStore):
    """Objects in an SQLite file; each write is committed (synchronous=FULL) before it returns."""

    def __init__(self, path: str | Path) -> None:
        super().__init__()
        # The app may be served from another thread than the one that opened
        # the store; the store's own lock serialises every use of the connection.
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(_SCHEMA)

    def _load(self, path: str) -> StoredObject | None:
        row = self._db.execute("SELECT data, etag, lease_until FROM objects WHERE path = ?", (path,)).fetchone()
        if row is None:
            return None
        return StoredObject(bytes(row[0]), str(row[1]), row[2])

    def _save(self, path: str, stored: StoredObject, generation: int) -> None:
        with self._transaction():
            self._db.execute(
                "INSERT OR REPLACE INTO objects (path, data, etag, lease_until) VALUES (?, ?, ?, ?)",
                (path, stored.data, stored.etag, stored.lease_until),
            )
            self._db.execute("UPDATE meta SET value = MAX(value, ?) WHERE key = 'generation'", (generation,))

    def _remove(self, path: str) -> bool:
        with self._transaction():
            cursor = self._db.execute("DELETE FROM objects WHERE path = ?", (path,))
        return cursor.rowcount > 0

    def _paths(self) -> list[str]:
        return [str(row[0]) for row in self._db.execute("SELECT path FROM objects")]

    def _next_generation(self) -> int:
        row = self._db.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        return int(row[0]) + 1

    def _transaction(self) -> _Transaction:
        return _Transaction(self._db)

    def close(self) -> None:
        with self._lock:
            self._db.close()


class _Transaction:
    """BEGIN IMMEDIATE … COMMIT, rolled back on error (the connection runs in autocommit mode)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        self._db.execute("COMMIT" if exc_type is None else "ROLLBACK")


__all__ = [
    "MemoryStore",
    "ObjectStore",
    "SqliteStore",
    "StoredObject",
    "lease_after_put",
    "make_etag",
]
