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
from typing import ClassVar

from sdcp_conformance.mutants.record import PROFILE_KILLS, STRICT_KILLS, MutantRecord
from sdcp_conformance.reference.frontend import RouterFrontend
from sdcp_conformance.reference.router.app import RouterApp, RouterParts
from sdcp_conformance.reference.router.driver import RouterConfig
from sdcp_conformance.reference.router.links import HttpLinks
from sdcp_conformance.reference.router.ports import RouterCache


@dataclass(frozen=True)
class RouterMutant(MutantRecord):
    """One named faulty variant of the reference router."""

    role: ClassVar[str] = "router"
    parts: RouterParts = field(default_factory=RouterParts)
    app: type[RouterApp] = RouterApp
    front: type[RouterFrontend] = RouterFrontend
    wrap_cache: Callable[[RouterCache], RouterCache] | None = None

    def factory(self, config: RouterConfig, links: HttpLinks, cache: RouterCache) -> RouterFrontend:
        """The router and its front, with the planted bug (a :data:`RouterFactory`)."""
        if self.wrap_cache is not None:
            cache = self.wrap_cache(cache)
        return self.front(self.app(config, links, links, cache, parts=self.parts))


UNMUTATED_ROUTER = RouterMutant("router-unmutated", "none", "the hookable parts with no bug planted (a control)",
                                "-", "-")
"""Must pass every case the reference passes: a kill comes from the planted bug, not the hooks."""


__all__ = ["PROFILE_KILLS", "STRICT_KILLS", "UNMUTATED_ROUTER", "RouterMutant"]
