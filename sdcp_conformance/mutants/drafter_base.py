"""The drafter mutants' record: the reference drafter with ONE planted bug, built as the embedded IUT.

A bug lives in a subclass of :class:`~sdcp_conformance.reference.drafter.app.DrafterApp`
(the loop and the HTTP layer), of :class:`~sdcp_conformance.reference.drafter.session.DrafterSession`
(the session machine, installed as the app's ``session_class``), or in a wrapper
around the draft model; the reference files are never edited and no global is
patched. The reference exposes the points where bugs are planted as methods
(``authorized``, ``parse_assignment``, ``validate_assignment``, ``uniforms``,
``lease_ms``, ``status_interval_s``, ``_exchange``, ``_delete``,
``_check_epoch``; the session's ``stopping``, ``validate``, ``accepts_resync``,
``adopted_digest``). :data:`UNMUTATED_DRAFTER` builds the plain reference
through the same factory, so a kill is the planted bug's doing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from sdcp_conformance.mutants.record import PROFILE_KILLS, STRICT_KILLS, MutantRecord
from sdcp_conformance.reference.drafter.app import DrafterApp, DrafterConfig
from sdcp_conformance.reference.drafter.session import DrafterSession


@dataclass(frozen=True)
class DrafterMutant(MutantRecord):
    """One named faulty variant of the reference drafter."""

    role: ClassVar[str] = "drafter"
    app: type[DrafterApp] = DrafterApp
    session: type[DrafterSession] | None = None
    model: Callable[[Any], Any] | None = None
    """Wraps the draft model, each of them when the drafter serves several (the sampling bugs)."""

    def factory(self, config: DrafterConfig, model: Any, cache: Any, verifier: Any, router: Any) -> DrafterApp:
        """``factory(config, model, cache, verifier, router)`` for ``certify(app_factory=..., role="drafter")``."""
        if self.model is not None:
            wrap = self.model
            model = [wrap(one) for one in model] if isinstance(model, Sequence) else wrap(model)
        app = self.app(config, model, cache, verifier, router)
        if self.session is not None:
            app.session_class = self.session
        return app


UNMUTATED_DRAFTER = DrafterMutant("unmutated-drafter", "none", "the reference drafter built through the mutant "
                                  "factory, no bug planted (a control)", "-", "-")


__all__ = ["PROFILE_KILLS", "STRICT_KILLS", "UNMUTATED_DRAFTER", "DrafterMutant"]
