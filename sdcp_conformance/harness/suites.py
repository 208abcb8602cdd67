"""The roles the harness certifies, and what each brings: its suite, the environment the harness plays around it.

Autobahn's fuzzingserver and fuzzingclient, like OIDF's OP and RP plans,
share one engine; so do our suites. The runner, the reports and the judge
are role-blind; a role contributes a :class:`RoleSuite` entry here — where
its case catalogue lives, its role spec (the parties the harness plays
around it and the environment that plays them), the [harness] keys of its target file, and how ``pki init
--iut ROLE`` prepares a vendor — and nothing else needs to know it.

Modules are named as strings and imported on use, so naming a role costs
no import (torch among them) until that role is certified.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sdcp_conformance.errors import InvalidArgument

if TYPE_CHECKING:
    from sdcp_conformance.harness.case import Catalogue


@dataclass(frozen=True)
class RoleSuite:
    role: str
    catalogue: str
    """Module whose ``CATALOGUE`` holds the role's cases."""
    spec: str
    """``module:SPEC``, the role's :class:`~.role_spec.RoleSpec`: the parties the harness plays around the IUT,
    the environment class that plays them (``async start(config, *, app_factory, workdir)``), ``pki init --iut``."""
    harness_keys: frozenset[str]
    """Keys the target file's [harness] table may hold for this role."""
    serves: str
    """Which mock models an IUT of this role serves: ``target``, ``draft`` or ``none`` (a router)."""


SUITES: dict[str, RoleSuite] = {
    "verifier": RoleSuite(
        "verifier", "sdcp_conformance.suites.verifier", "sdcp_conformance.harness.specs.verifier:SPEC",
        frozenset({"pki", "router", "cache", "drafters"}), "target"),
    "drafter": RoleSuite(
        "drafter", "sdcp_conformance.suites.drafter", "sdcp_conformance.harness.specs.drafter:SPEC",
        frozenset({"pki", "router", "cache", "verifiers", "proposal_timeout_s"}), "draft"),
    "router": RoleSuite(
        "router", "sdcp_conformance.suites.router", "sdcp_conformance.harness.specs.router:SPEC",
        frozenset({"pki", "cache", "verifiers", "drafters", "drafter_models"}), "none"),
}


def role_suite(role: str) -> RoleSuite:
    try:
        return SUITES[role]
    except KeyError:
        raise InvalidArgument(f"no suite for role {role!r} (known: {', '.join(SUITES)})") from None


def load_object(reference: str) -> Any:
    """Import ``module:attribute`` (or a module)."""
    module, _, attribute = reference.partition(":")
    loaded = importlib.import_module(module)
    return getattr(loaded, attribute) if attribute else loaded


def catalogue_of(role: str) -> Catalogue:
    catalogue: Catalogue = load_object(role_suite(role).catalogue).CATALOGUE
    return catalogue


__all__ = ["SUITES", "RoleSuite", "catalogue_of", "load_object", "role_suite"]
