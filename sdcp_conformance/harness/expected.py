"""Vendors' expected-failures files: known failures reported as such, stale entries caught.

```toml
[[expected]]
id = "VER-6.3-FENCE-002"          # case ID
contains = "sdcp-stale-epoch"     # required substring of the failure message
reason = "fixed in release 2.4"   # shown in reports
```

A listed case that fails with a message containing ``contains`` becomes
XFAIL; one that fails differently stays FAILED; one that passes becomes
XPASS and fails the run, so the list cannot go stale.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.harness.case import Case, Verdict


class CaseOutcome(Protocol):
    """What an expected-failures list changes of a case's result (:class:`~.runner.CaseResult` has it)."""

    case: Case
    verdict: Verdict
    message: str
    expected_failure: str | None


@dataclass(frozen=True)
class ExpectedFailure:
    id: str
    contains: str
    reason: str


class ExpectedFailures:
    def __init__(self, entries: list[ExpectedFailure]) -> None:
        self.entries = {entry.id: entry for entry in entries}

    @classmethod
    def load(cls, path: Path) -> ExpectedFailures:
        try:
            raw = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise InvalidArgument(f"{path}: cannot read the expected-failures file: {exc}") from exc
        entries = []
        for index, item in enumerate(raw.get("expected", [])):
            if not isinstance(item, dict) or not all(isinstance(item.get(key), str) for key in ("id", "reason")):
                raise InvalidArgument(f"{path}: entry {index + 1} needs string members id and reason")
            entries.append(ExpectedFailure(item["id"], str(item.get("contains", "")), item["reason"]))
        return cls(entries)

    def unknown_ids(self, known: set[str]) -> list[str]:
        return sorted(set(self.entries) - known)

    def apply(self, result: CaseOutcome) -> None:
        entry = self.entries.get(result.case.id)
        if entry is None:
            return
        result.expected_failure = entry.reason
        if result.verdict is Verdict.PASSED:
            result.verdict = Verdict.XPASS
            result.message = f"listed as an expected failure ({entry.reason}) but passed: remove it from the list"
        elif result.verdict in (Verdict.FAILED, Verdict.NON_STRICT) and entry.contains in result.message:
            result.verdict = Verdict.XFAIL
        elif result.verdict is Verdict.FAILED:
            result.message += f" (listed as an expected failure, but the message lacks {entry.contains!r})"


__all__ = ["CaseOutcome", "ExpectedFailure", "ExpectedFailures"]
