"""Cases declared twice: with the suite's bigram draft model, and with the context-dependent ``ctx-draft-near``.

A bigram draft model's next token depends on the last token alone, so a drafter that drafts from a context holding
more than the committed prefix — rejected positions kept after a verdict (§6.3), a stale context after a
resynchronisation (P1-DRF-6) or after a new or replacing assignment (§6.9, P1-DRF-7) — proposes what a correct one
proposes whenever its last token is right. Each case whose observation depends on the whole context runs again
under its own ID with ``ctx-draft-near`` (target ``ctx``), ``requires=("model:ctx-draft-near",)``: the case's
context then drafts, judges and answers with that model, and a target that does not serve it skips the case,
naming the model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sdcp_conformance.harness.case import CaseFunction
from sdcp_conformance.harness.specs.drafter import CTX_DRAFT_MODEL
from sdcp_conformance.suites.drafter import CATALOGUE

CTX_REQUIRES = (f"model:{CTX_DRAFT_MODEL}",)


def with_ctx_variant(case_id: str, ctx_id: str, *, ctx_rows: Sequence[str] = (),
                     **declaration: Any) -> Callable[[CaseFunction], CaseFunction]:
    """Declare the decorated case as ``case_id`` and again as ``ctx_id`` with the context-dependent draft model,
    where it also judges ``ctx_rows``."""

    def register(run: CaseFunction) -> CaseFunction:
        CATALOGUE.case(case_id, **declaration)(run)
        title = declaration.get("title") or (run.__doc__ or "").strip().split("\n")[0]
        CATALOGUE.case(ctx_id, **{
            **declaration, "title": f"{title} [{CTX_DRAFT_MODEL}]",
            "rows": tuple(dict.fromkeys((*declaration.get("rows", ()), *ctx_rows))),
            "requires": (*declaration.get("requires", ()), *CTX_REQUIRES)})(run)
        return run

    return register


__all__ = ["CTX_REQUIRES", "with_ctx_variant"]
