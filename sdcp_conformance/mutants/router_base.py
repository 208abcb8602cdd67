"""The record of a router mutant: the reference router with ONE planted bug, and how to build it.

A router mutant swaps one class the reference router is built from
(:class:`~sdcp_conformance.reference.router.app.RouterParts`: the session
machine, the driver, the instance registry), the app, the test front, or wraps
the router's MLC port; the reference files are never edited. Its
``factory(config, links, cache)`` is the
:data:`~sdcp_conformance.reference.router.service.RouterFactory` that
``certify(role="router", app_factory=…)`` starts as the embedded IUT.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sdcp_conformance.harness.case import Verdict
from sdcp_conformance.reference.frontend import RouterFrontend
from sdcp_conformance.reference.router.app import RouterApp, RouterParts
from sdcp_conformance.reference.router.driver import RouterConfig
from sdcp_conformance.reference.router.links import HttpLinks
from sdcp_conformance.reference.router.ports import RouterCache

STRICT_KILLS = frozenset({Verdict.FAILED})
PROFILE_KILLS = frozenset({Verdict.FAILED, Verdict.NON_STRICT})


@dataclass(frozen=True)
class RouterMutant:
    """One named faulty variant of the reference router."""

    name: str
    """Stable forever (killers-router.json and the test IDs use it)."""
    area: str
    description: str
    section: str
    violates: str
    """The sentence of the draft (or profile item) the bug breaks, verbatim."""
    parts: RouterParts = field(default_factory=RouterParts)
    app: type[RouterApp] = RouterApp
    front: type[RouterFrontend] = RouterFrontend
    wrap_cache: Callable[[RouterCache], RouterCache] | None = None
    profile_only: bool = False
    """The bug breaks only a profile choice, so the suite can at most say NON-STRICT about it."""

    @property
    def kill_verdicts(self) -> frozenset[Verdict]:
        return PROFILE_KILLS if self.profile_only else STRICT_KILLS

    def factory(self, config: RouterConfig, links: HttpLinks, cache: RouterCache) -> RouterFrontend:
        """The router and its front, with the planted bug (a :data:`RouterFactory`)."""
        if self.wrap_cache is not None:
            cache = self.wrap_cache(cache)
        return self.front(self.app(config, links, links, cache, parts=self.parts))

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "area": self.area, "description": self.description, "section": self.section,
                "violates": self.violates, "profile_only": self.profile_only, "role": "router"}


UNMUTATED_ROUTER = RouterMutant("router-unmutated", "none", "the hookable parts with no bug planted (a control)",
                                "-", "-")
"""Must pass every case the reference passes: a kill comes from the planted bug, not the hooks."""


__all__ = ["PROFILE_KILLS", "STRICT_KILLS", "UNMUTATED_ROUTER", "RouterMutant"]
