"""The multi-level cache (MLC) the harness plays: objects, leases, commit logs, faults."""

from sdcp_conformance.cache.app import CacheApp
from sdcp_conformance.cache.append import AppendOutcome, AppendStatus, append_record
from sdcp_conformance.cache.commit_log import CommitRecord, FenceRecord, parse_log
from sdcp_conformance.cache.faults import FaultPlan
from sdcp_conformance.cache.store import MemoryStore, SqliteStore
from sdcp_conformance.cache.transcript import Transcript

__all__ = [
    "AppendOutcome",
    "AppendStatus",
    "CacheApp",
    "CommitRecord",
    "FaultPlan",
    "FenceRecord",
    "MemoryStore",
    "SqliteStore",
    "Transcript",
    "append_record",
    "parse_log",
]
