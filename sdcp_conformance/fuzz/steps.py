"""What the stateful fuzzer generates: steps (a rule name and its arguments), and what a failure is.

A step's arguments are the generated choices themselves — small integers and
booleans, resolved against the harness's model of the session only when the
step runs — so a saved list of steps replays exactly, whatever seed or
Hypothesis version produced it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

ArgValue = int | bool | str | None


@dataclass(frozen=True)
class Step:
    rule: str
    args: Mapping[str, ArgValue] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"rule": self.rule, "args": dict(self.args)}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> Step:
        rule, args = obj.get("rule"), obj.get("args", {})
        if not isinstance(rule, str) or not isinstance(args, Mapping):
            raise ValueError(f"not a step: {obj!r}")
        return cls(rule, dict(args))

    def describe(self) -> str:
        shown = ", ".join(f"{key}={value!r}" for key, value in self.args.items())
        return f"{self.rule}({shown})"


class Violation(AssertionError):
    """The IUT answered something a correct party cannot answer at this point.

    ``row`` is the requirement row (:data:`sdcp_conformance.judge.TABLE`) the
    answer breaks; ``level`` the severity the judge gave it (FAILED, or
    NON-STRICT under ``--strict``).
    """

    def __init__(self, message: str, *, row: str = "R-5.1-RESOURCES", level: str = "FAILED") -> None:
        super().__init__(f"[{level} {row}] {message}")
        self.level = level
        self.row = row
        self.text = message


__all__ = ["ArgValue", "Step", "Violation"]
