"""``report diff A B``: what changed between two runs, case by case (IDs are stable forever, so runs compare).

Each case's verdict in a run is its worst run (the sanity case runs twice).
Verdicts are ranked (D-RPT-7): FAILED, ERROR and XPASS are *bad*;
NON-STRICT is a *warning*; PASSED, INFORMATIONAL, XFAIL are *good*; SKIPPED
is *not judged*. A **regression** is a case of both runs whose rank got
worse (good → warning or bad, warning → bad), or that was skipped in A and
is a warning or bad in B; a **fix** is the reverse. Cases only in B are
**new** (with their verdicts: a case the suite gained is not the IUT's
regression), only in A **removed**; a case that ran in A and is skipped in B
is **now skipped** (lost coverage, listed, not a regression). CI gates a release on the exit status:
1 when there is any regression, else 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

RANK = {"PASSED": 0, "INFORMATIONAL": 0, "XFAIL": 0, "NON-STRICT": 1, "FAILED": 2, "ERROR": 2, "XPASS": 2}
"""Higher is worse; SKIPPED and INCOMPLETE have no rank (the case did not judge its subject)."""
UNJUDGED = frozenset({"SKIPPED", "INCOMPLETE"})


@dataclass(frozen=True)
class Change:
    id: str
    before: str | None
    after: str | None
    message: str = ""
    """The case's message in B (why it regressed), or in A for a fix."""


@dataclass
class RunDiff:
    regressions: list[Change] = field(default_factory=list)
    fixes: list[Change] = field(default_factory=list)
    new: list[Change] = field(default_factory=list)
    removed: list[Change] = field(default_factory=list)
    now_skipped: list[Change] = field(default_factory=list)
    other: list[Change] = field(default_factory=list)
    """Verdict changes of equal rank (PASSED → INFORMATIONAL, say)."""
    unchanged: int = 0

    @property
    def exit_code(self) -> int:
        return 1 if self.regressions else 0


def mismatch(before: Mapping[str, Any], after: Mapping[str, Any]) -> str | None:
    """Why two runs do not compare (``roles (verifier, router)``, ``targets (…)``), or None when they do: one role,
    one target file (None for the embedded reference, whatever mutant it carried)."""
    runs = before.get("run") or {}, after.get("run") or {}
    for field_name, label in (("role", "roles"), ("target", "targets")):
        first, second = (run.get(field_name) for run in runs)
        if first != second:
            return f"{label} ({first or 'the embedded reference'}, {second or 'the embedded reference'})"
    return None


def case_verdicts(document: Mapping[str, Any]) -> dict[str, tuple[str, str]]:
    """Case ID → (its worst verdict over its runs, that run's message)."""
    verdicts: dict[str, tuple[str, str]] = {}
    for record in document["results"]:
        verdict, message = str(record["verdict"]), str(record.get("message") or "")
        known = verdicts.get(record["id"])
        if known is None or _worse(verdict, known[0]):
            verdicts[record["id"]] = (verdict, message)
    return verdicts


def _worse(verdict: str, than: str) -> bool:
    return RANK.get(verdict, -1) > RANK.get(than, -1)


def diff_documents(before: Mapping[str, Any], after: Mapping[str, Any]) -> RunDiff:
    a, b = case_verdicts(before), case_verdicts(after)
    result = RunDiff()
    for case_id in sorted(set(a) | set(b)):
        old, new = a.get(case_id), b.get(case_id)
        if old is None and new is not None:
            result.new.append(Change(case_id, None, new[0], new[1]))
            continue
        if new is None and old is not None:
            result.removed.append(Change(case_id, old[0], None, old[1]))
            continue
        assert old is not None and new is not None
        if old[0] == new[0]:
            result.unchanged += 1
        elif new[0] in UNJUDGED:
            result.now_skipped.append(Change(case_id, old[0], new[0], new[1]))
        elif old[0] in UNJUDGED:
            bucket = result.regressions if RANK[new[0]] > 0 else result.other
            bucket.append(Change(case_id, old[0], new[0], new[1]))
        elif RANK[new[0]] > RANK[old[0]]:
            result.regressions.append(Change(case_id, old[0], new[0], new[1]))
        elif RANK[new[0]] < RANK[old[0]]:
            result.fixes.append(Change(case_id, old[0], new[0], old[1]))
        else:
            result.other.append(Change(case_id, old[0], new[0], new[1]))
    return result


def render_diff(result: RunDiff, before: str, after: str) -> list[str]:
    """Plain lines (one per change, never folded): what CI logs and a person reads."""
    lines = [f"{before} → {after}: {len(result.regressions)} regression(s), {len(result.fixes)} fix(es), "
             f"{len(result.new)} new, {len(result.removed)} removed, {len(result.now_skipped)} now skipped, "
             f"{result.unchanged} unchanged"]
    sections: Sequence[tuple[str, list[Change]]] = (
        ("regressions", result.regressions), ("fixes", result.fixes), ("new cases", result.new),
        ("removed cases", result.removed), ("now skipped", result.now_skipped), ("other changes", result.other))
    for title, changes in sections:
        if not changes:
            continue
        lines.append(f"{title}:")
        for change in changes:
            first = change.message.splitlines()[0] if change.message else ""
            lines.append(f"  {change.id}: {change.before or '—'} → {change.after or '—'}"
                         + (f"  ({first})" if first else ""))
    return lines


__all__ = ["RANK", "Change", "RunDiff", "case_verdicts", "diff_documents", "mismatch", "render_diff"]
