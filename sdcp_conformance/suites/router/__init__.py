"""The router conformance suite: every requirement the draft and the profile place on a router.

The harness plays the router's verifiers, drafters and MLC and its front's
client (P1-FRONT); each module of this package declares the cases of one
area on :data:`CATALOGUE` through :func:`router_case`, and importing the
package imports them all (in name order). :func:`router_case` wraps a case's
body so that every case starts from fresh status reports of every instance
and ends with the history checker run over the sessions it started
(:meth:`~sdcp_conformance.harness.contexts.router.RouterContext.conclude`).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

from sdcp_conformance.harness.case import Catalogue
from sdcp_conformance.harness.contexts.router import RouterContext

CATALOGUE = Catalogue(role="router", base_models=())
"""A router serves no model (``serves = "none"``): no case needs the target to list one."""

RouterCase = Callable[[RouterContext], Awaitable[None]]


def router_case(case_id: str, **declaration: Any) -> Callable[[RouterCase], RouterCase]:
    """Declare a router case (the arguments of :meth:`Catalogue.case`); its body runs between
    :meth:`~sdcp_conformance.harness.contexts.router.RouterContext.prepare` and
    :meth:`~sdcp_conformance.harness.contexts.router.RouterContext.conclude`."""

    def register(body: RouterCase) -> RouterCase:
        @functools.wraps(body)
        async def run(ctx: RouterContext) -> None:
            await ctx.prepare()
            try:
                await body(ctx)
            finally:
                await ctx.conclude()

        CATALOGUE.case(case_id, **declaration)(run)
        return body

    return register


CATALOGUE.load_suite(__name__, __path__, frozenset({"support"}))

__all__ = ["CATALOGUE", "router_case"]
