"""The one catalogue scaffold: which mutants each role has, finding one by name, and the killers files.

Each role's mutants are declared in its own package (:mod:`.verifier`, :mod:`.drafter`, :mod:`.router`), each
above its planted bug, on the package's :class:`Catalogue` (``CATALOGUE``); a role's package is imported on first
use. Names are unique across roles. ``killers.json`` (the verifier's) and ``killers-<role>.json`` record, per
mutant, the cases that killed it in the last ``selftest --write-killers``, so CI can re-run each mutant against its
known killers only.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Iterator, Mapping
from difflib import get_close_matches
from pathlib import Path
from typing import Any, TypeVar

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.mutants.base import Mutant

M = TypeVar("M", bound=Mutant)
Bug = TypeVar("Bug")

ROLES = ("verifier", "drafter", "router")
"""The roles with mutants; ``sdcp_conformance.mutants.<role>.CATALOGUE`` holds each one's."""

DEFAULT_ROLE = "verifier"
"""The role a command certifies when not told (``certify --mutant NAME`` without ``--role``)."""

_FOLDER = Path(__file__).parent


class Catalogue(Mapping[str, M]):
    """One role's mutants by name, in the order declared, and the control: the role's mutant with no bug planted.

    The modules of the role's package declare their mutants on it, each above the class (or the wrapper) that holds
    its bug, with :meth:`mutant`; importing the package imports them all.
    """

    def __init__(self, control: M) -> None:
        self.control = control
        self.role = control.role
        self._kind = type(control)
        self._by_name: dict[str, M] = {}

    def add(self, *mutants: M) -> None:
        for mutant in mutants:
            if type(mutant) is not self._kind:
                raise TypeError(f"{mutant.name!r} is a {mutant.role} mutant, not a {self.role} one")
            if mutant.name in self._by_name or mutant.name == self.control.name:
                raise ValueError(f"two {self.role} mutants are named {mutant.name!r}")
            self._by_name[mutant.name] = mutant

    def mutant(self, name: str, area: str, description: str, section: str, violates: str, *,
               profile_only: bool = False, into: str | None = None, **also: Any) -> Callable[[Bug], Bug]:
        """Decorator declaring the mutant whose bug is the decorated class: it takes the place of the reference's
        class it subclasses (:meth:`~.base.Mutant.field_for`), or goes ``into`` the field named (a wrapper:
        ``wrap_model``, ``wrap_cache``); ``also`` swaps more (a session machine beside an app)."""

        def register(bug: Bug) -> Bug:
            planted: dict[str, Any] = {into or self._kind.field_for(bug): bug, **also}
            self.add(self._kind(name, area, description, section, violates, profile_only, **planted))
            return bug

        return register

    @property
    def mutants(self) -> tuple[M, ...]:
        return tuple(self._by_name.values())

    def __getitem__(self, name: str) -> M:
        return self._by_name[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_name)

    def __len__(self) -> int:
        return len(self._by_name)

    def find(self, name: str) -> M:
        """The mutant named ``name``; :class:`InvalidArgument` (naming the role's mutants) if there is none."""
        try:
            return self._by_name[name]
        except KeyError:
            raise InvalidArgument(unknown_mutant(name, self.role)) from None

    @property
    def killers_path(self) -> Path:
        return killers_path(self.role)


def catalogue(role: str) -> Catalogue[Mutant]:
    """The role's catalogue (its package is imported on first use)."""
    if role not in ROLES:
        raise InvalidArgument(f"no mutants for role {role!r} (known: {', '.join(ROLES)})")
    found: Catalogue[Mutant] = importlib.import_module(f"{__package__}.{role}").CATALOGUE
    return found


def mutants_for(role: str) -> tuple[Mutant, ...]:
    return catalogue(role).mutants


def get_mutant(name: str, role: str = DEFAULT_ROLE) -> Mutant:
    """The ``role`` mutant named ``name``; :class:`InvalidArgument` if there is none."""
    return catalogue(role).find(name)


def find_mutant(name: str, role: str | None = None) -> tuple[str, Mutant]:
    """(role, mutant) for a mutant name, searched in ``role`` or in every role."""
    for candidate in [role] if role is not None else ROLES:
        found = catalogue(candidate).get(name)
        if found is not None:
            return candidate, found
    raise InvalidArgument(unknown_mutant(name, role))


def unknown_mutant(name: str, role: str | None) -> str:
    """One line: no such mutant; the mutants of the role in question (the default role's when none was named)."""
    shown = role or DEFAULT_ROLE
    names = sorted(catalogue(shown))
    everywhere = [known for candidate in ([role] if role else ROLES) for known in catalogue(candidate)]
    close = get_close_matches(name, everywhere, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    others = "" if role else " (the other roles' mutants: give --role drafter or --role router)"
    return (f"no mutant named {name!r}{hint}; the {shown}'s {len(names)} mutants: {', '.join(names)}{others}; "
            f"`sdcp-conformance selftest --role {shown} --list` describes them")


# ---------------------------------------------------------------------- the killers files


def killers_path(role: str) -> Path:
    """Where the role's kill matrix is recorded (``killers.json`` for the verifier, ``killers-<role>.json``)."""
    return _FOLDER / ("killers.json" if role == "verifier" else f"killers-{role}.json")


KILLERS_PATH = killers_path(DEFAULT_ROLE)
"""Mutant name → case IDs that killed it in the last ``selftest --write-killers`` (the verifier's)."""


def load_killers(path: Path = KILLERS_PATH) -> dict[str, list[str]]:
    if not path.exists():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return {str(name): [str(case) for case in cases] for name, cases in data.items()}


def write_killers(matrix: Mapping[str, list[str]], path: Path = KILLERS_PATH) -> dict[str, list[str]]:
    """Merge ``matrix`` into the file (mutants not run keep their entries); returns what was written."""
    merged = load_killers(path)
    merged.update({name: sorted(cases) for name, cases in matrix.items()})
    text = json.dumps(dict(sorted(merged.items())), indent=2) + "\n"
    path.write_text(text, encoding="utf-8")
    return merged


__all__ = [
    "DEFAULT_ROLE",
    "KILLERS_PATH",
    "ROLES",
    "Catalogue",
    "catalogue",
    "find_mutant",
    "get_mutant",
    "killers_path",
    "load_killers",
    "mutants_for",
    "unknown_mutant",
    "write_killers",
]
