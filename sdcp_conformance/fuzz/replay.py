"""Replay files: a failure saved as the generated choices themselves, replayed exactly.

A stateful failure is its shrunk list of steps (rule names and arguments); a
message failure is its recipe (resource, mutation and parameters). Neither
depends on a seed or a Hypothesis version reproducing the same run: replaying
runs the same steps against a fresh environment (the embedded reference, the
recorded mutant, or ``--target``) and says whether it still fails. The file
names the IUT it failed against (:mod:`sdcp_conformance.fuzz.identity`) and
the command that replays it there.
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
class ReplayFile:
    kind: str
    """``stateful`` (steps) or ``messages`` (recipes)."""
    steps: list[dict[str, Any]]
    message: str
    level: str
    iut: FuzzedIut
    """The IUT it failed against."""
    seed: int | None = None

    @property
    def mutant(self) -> str | None:
        return self.iut.mutant

    def stateful_steps(self) -> list[Step]:
        return [Step.from_json(step) for step in self.steps]

    def to_json(self, path: Path) -> dict[str, Any]:
        return {"format": FORMAT, "kind": self.kind, "failure": self.message, "level": self.level,
                **self.iut.to_json(), "seed": self.seed, "replay": self.iut.replay_command(path),
                "steps": self.steps}


def save(folder: Path, kind: str, steps: Sequence[Mapping[str, Any]], message: str, level: str, *,
         iut: FuzzedIut, seed: int | None = None) -> Path:
    """Write a replay file of a failure against ``iut`` into ``folder``; returns its path."""
    folder.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    label = iut.mutant or "iut"
    path = folder / f"{kind}-{label}-{stamp}-{len(list(folder.glob('*.json')))}.json"
    record = ReplayFile(kind, [dict(step) for step in steps], message, level, iut, seed)
    path.write_text(json.dumps(record.to_json(path), indent=2, default=_jsonable) + "\n", encoding="utf-8")
    return path


def load(path: Path) -> ReplayFile:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InvalidArgument(f"{path}: cannot read the replay file: {exc}") from exc
    if not isinstance(raw, dict) or raw.get("format") != FORMAT or raw.get("kind") not in ("stateful", "messages"):
        raise InvalidArgument(f"{path}: not an {FORMAT} file")
    steps = raw.get("steps")
    if not isinstance(steps, list) or not all(isinstance(step, dict) for step in steps):
        raise InvalidArgument(f"{path}: `steps` must be a list of objects")
    return ReplayFile(raw["kind"], steps, str(raw.get("failure", "")), str(raw.get("level", "")),
                      FuzzedIut.from_json(raw, path), raw.get("seed"))


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.hex()
    raise TypeError(f"cannot store {type(value).__name__} in a replay file")


__all__ = ["FORMAT", "ReplayFile", "load", "save"]
