"""Which mutants each role has: the verifier's catalogue here, the drafter's and router's in their own modules.

A role's mutants are faulty variants of that role's reference, each with one
planted bug, a stable name (unique across roles) and a ``factory`` that
``certify(app_factory=…, role=…)`` uses to build the embedded IUT. The names
of the modules are strings, imported on use.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.judge import Verdict


class RoleMutant(Protocol):
    """What the selftest needs of a mutant, whatever its role."""

    @property
    def name(self) -> str: ...

    @property
    def area(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def kill_verdicts(self) -> frozenset[Verdict]: ...

    def factory(self, *args: Any, **kwargs: Any) -> Any: ...

    def describe(self) -> dict[str, Any]: ...


ROLE_MUTANTS: dict[str, str] = {
    "verifier": "sdcp_conformance.mutants.catalogue:MUTANTS_LIST",
    "drafter": "sdcp_conformance.mutants.drafter_catalogue:DRAFTER_MUTANTS",
    "router": "sdcp_conformance.mutants.router_catalogue:ROUTER_MUTANTS",
}
"""Role → ``module:attribute`` holding that role's tuple of mutants."""

_FOLDER = Path(__file__).parent


def mutants_for(role: str) -> tuple[RoleMutant, ...]:
    from sdcp_conformance.harness.suites import load_object

    try:
        reference = ROLE_MUTANTS[role]
    except KeyError:
        raise InvalidArgument(f"no mutants for role {role!r} (known: {', '.join(ROLE_MUTANTS)})") from None
    found: tuple[RoleMutant, ...] = tuple(load_object(reference))
    return found


def find_mutant(name: str, role: str | None = None) -> tuple[str, RoleMutant]:
    """(role, mutant) for a mutant name, searched in ``role`` or in every role."""
    roles = [role] if role is not None else list(ROLE_MUTANTS)
    for candidate in roles:
        for mutant in mutants_for(candidate):
            if mutant.name == name:
                return candidate, mutant
    raise InvalidArgument(unknown_mutant(name, role))


DEFAULT_ROLE = "verifier"
"""The role a command certifies when not told (``certify --mutant NAME`` without ``--role``)."""


def unknown_mutant(name: str, role: str | None) -> str:
    """One line: no such mutant; the mutants of the role in question (the default role's when none was named)."""
    from difflib import get_close_matches

    shown = role or DEFAULT_ROLE
    names = sorted(mutant.name for mutant in mutants_for(shown))
    everywhere = [mutant.name for candidate in ([role] if role else ROLE_MUTANTS) for mutant in mutants_for(candidate)]
    close = get_close_matches(name, everywhere, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    others = "" if role else " (the other roles' mutants: give --role drafter or --role router)"
    return (f"no mutant named {name!r}{hint}; the {shown}'s {len(names)} mutants: {', '.join(names)}{others}; "
            f"`sdcp-conformance selftest --role {shown} --list` describes them")


def killers_path(role: str) -> Path:
    """Where the role's kill matrix is recorded (``killers.json`` for the verifier, ``killers-<role>.json``)."""
    return _FOLDER / ("killers.json" if role == "verifier" else f"killers-{role}.json")


__all__ = ["DEFAULT_ROLE", "ROLE_MUTANTS", "RoleMutant", "find_mutant", "killers_path", "mutants_for", "unknown_mutant"]
