"""The roles the harness certifies, and what each brings: its suite, the environment the harness plays around it.

Autobahn's fuzzingserver and fuzzingclient, like OIDF's OP and RP plans,
share one engine; so do our suites. The runner, the reports and the judge
are role-blind; a role contributes a :class:`RoleSuite` entry here — where
its case catalogue lives, the environment class that plays its
counterparts, the [harness] keys of its target file, and how ``pki init
--iut ROLE`` prepares a vendor — and nothing else needs to know it.

Modules are named as strings and imported on use, so naming a role costs
no import (torch among them) until that role is certified.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from sdcp_conformance.errors import InvalidArgument

if TYPE_CHECKING:
    from sdcp_conformance.harness.case import Case, Catalogue
    from sdcp_conformance.harness.judging import JudgedContext
    from sdcp_conformance.harness.patience import Patience
    from sdcp_conformance.harness.target import TargetConfig
    from sdcp_conformance.harness.transcript import CaseTranscript
    from sdcp_conformance.transport.pki import Pki


class HarnessEnvironment(Protocol):
    """What the runner needs of the harness's side of a certification, whatever the role under test."""

    config: TargetConfig
    current: CaseTranscript | None
    supports_concurrency: bool
    """Cases that declare no global state may run at the same time."""

    @property
    def patience(self) -> Patience: ...

    def capabilities(self) -> set[str]: ...

    def new_context(self, case: Case, seed: int, run: str) -> JudgedContext: ...

    def reset(self) -> None: ...

    async def before_case(self, case: Case) -> None: ...

    def release(self, context: Any) -> None: ...

    async def after_case(self, context: Any) -> None: ...

    def describe(self) -> dict[str, Any]: ...

    async def stop(self) -> None: ...


IutSetup = Callable[[Path, Mapping[str, str]], "tuple[Pki, Path, str]"]
"""``pki init DIR --iut ROLE``: mint the PKI, write ``DIR/target.toml``, return (pki, target path, instructions)."""


@dataclass(frozen=True)
class RoleSuite:
    role: str
    catalogue: str
    """Module whose ``CATALOGUE`` holds the role's cases."""
    environment: str
    """``module:Class`` of the environment; the class has ``async start(config, *, app_factory, workdir)``."""
    harness_keys: frozenset[str]
    """Keys the target file's [harness] table may hold for this role."""
    iut_setup: str
    """``module:function`` implementing :data:`IutSetup`."""
    serves: str
    """Which mock models an IUT of this role serves: ``target``, ``draft`` or ``none`` (a router)."""


SUITES: dict[str, RoleSuite] = {
    "verifier": RoleSuite(
        "verifier", "sdcp_conformance.suites.verifier", "sdcp_conformance.harness.environment:Environment",
        frozenset({"pki", "router", "cache", "drafters"}), "sdcp_conformance.harness.iut_setup:verifier_iut_setup",
        "target"),
    "drafter": RoleSuite(
        "drafter", "sdcp_conformance.suites.drafter",
        "sdcp_conformance.harness.drafter_environment:DrafterEnvironment",
        frozenset({"pki", "router", "cache", "verifiers", "proposal_timeout_s"}),
        "sdcp_conformance.harness.iut_setup:drafter_iut_setup", "draft"),
    "router": RoleSuite(
        "router", "sdcp_conformance.suites.router", "sdcp_conformance.harness.router_environment:RouterEnvironment",
        frozenset({"pki", "cache", "verifiers", "drafters", "drafter_models"}),
        "sdcp_conformance.harness.iut_setup:router_iut_setup", "none"),
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


__all__ = ["SUITES", "HarnessEnvironment", "IutSetup", "RoleSuite", "catalogue_of", "load_object", "role_suite"]
