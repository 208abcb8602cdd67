"""Replay files: a failure saved as the generated choices themselves, replayed exactly.

A stateful failure is its shrunk list of steps (rule names and arguments); a
message failure is its recipe (resource, mutation and parameters). Neither
depends on a seed or a Hypothesis version reproducing the same run: replaying
runs the same steps against a fresh environment (the embedded reference, the
recorded mutant, or ``--target``) and says whether it still fails. The file
names the IUT it failed against (:mod:`sdcp_conformance.fuzz.identity`) and
the command that replays it there. The router's failover campaign keeps its
own format (:data:`FAILOVER`: no ``kind``, one kind of failure); both are
written and read here.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.fuzz.identity import FuzzedIut
from sdcp_conformance.fuzz.steps import Step

FORMAT = "sdcp-fuzz-replay/1"


@dataclass(frozen=True)
class ReplayFormat:
    """A kind of replay file: its ``format`` tag, the kinds of failure it holds and the role of one that names none."""

    name: str
    kinds: tuple[str, ...]
    """The kinds of failure it holds; the first is a campaign's unless it says otherwise."""
    records_kind: bool = True
    """A file names its kind (``kind``); otherwise the one kind only names the file."""
    role: str = "verifier"


FUZZ = ReplayFormat(FORMAT, ("stateful", "messages"))
"""The verifier's and the drafter's replay files."""
FAILOVER = ReplayFormat("sdcp-failover-replay/1", ("failover",), records_kind=False, role="router")
"""The router failover campaign's replay files."""


@dataclass(frozen=True)
class ReplayFile:
    kind: str
    """``stateful`` (steps), ``messages`` (recipes) or ``failover`` (steps)."""
    steps: list[dict[str, Any]]
    message: str
    level: str
    iut: FuzzedIut
    """The IUT it failed against."""
    seed: int | None = None
    fmt: ReplayFormat = FUZZ

    @property
    def mutant(self) -> str | None:
        return self.iut.mutant

    def stateful_steps(self) -> list[Step]:
        return [Step.from_json(step) for step in self.steps]

    def to_json(self, path: Path) -> dict[str, Any]:
        kind = {"kind": self.kind} if self.fmt.records_kind else {}
        return {"format": self.fmt.name, **kind, "failure": self.message, "level": self.level,
                **self.iut.to_json(), "seed": self.seed, "replay": self.iut.replay_command(path),
                "steps": self.steps}


def save(folder: Path, kind: str, steps: Sequence[Mapping[str, Any]], message: str, level: str, *,
         iut: FuzzedIut, seed: int | None = None, fmt: ReplayFormat = FUZZ) -> Path:
    """Write a replay file of a failure against ``iut`` into ``folder``; returns its path."""
    folder.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    label = iut.mutant or "iut"
    path = folder / f"{kind}-{label}-{stamp}-{len(list(folder.glob('*.json')))}.json"
    record = ReplayFile(kind, [dict(step) for step in steps], message, level, iut, seed, fmt)
    path.write_text(json.dumps(record.to_json(path), indent=2, default=_jsonable) + "\n", encoding="utf-8")
    return path


def load(path: Path, fmt: ReplayFormat = FUZZ) -> ReplayFile:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InvalidArgument(f"{path}: cannot read the replay file: {exc}") from exc
    kind = raw.get("kind") if isinstance(raw, dict) and fmt.records_kind else fmt.kinds[0]
    if not isinstance(raw, dict) or raw.get("format") != fmt.name or kind not in fmt.kinds:
        raise InvalidArgument(f"{path}: not an {fmt.name} file")
    steps = raw.get("steps")
    if not isinstance(steps, list) or not all(isinstance(step, dict) for step in steps):
        raise InvalidArgument(f"{path}: `steps` must be a list of objects")
    return ReplayFile(kind, steps, str(raw.get("failure", "")), str(raw.get("level", "")),
                      FuzzedIut.from_json(raw, path, role=fmt.role), raw.get("seed"), fmt)


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.hex()
    raise TypeError(f"cannot store {type(value).__name__} in a replay file")


__all__ = ["FAILOVER", "FORMAT", "FUZZ", "ReplayFile", "ReplayFormat", "load", "save"]
