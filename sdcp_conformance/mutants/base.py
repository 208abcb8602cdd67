"""The machinery of the mutant catalogue: a hookable copy of the reference verifier and the mutant record.

A mutant is the reference verifier with ONE planted bug. The bug lives in a
subclass of :class:`MutantSession` (the session machine) or :class:`MutantApp`
(the HTTP layer), or in a wrapper around the cache or the target model; the
reference files are never edited and no global is patched. The
reference exposes the points where bugs are planted as methods
(``stored_verdict``, ``concurrent``, ``accept``, ``truncate_emitted``,
``reported_accepted``, ``check_commit_order``, ``VerifierApp.new_session``);
an unmutated ``MutantApp`` passes everything the reference passes —
``tests/mutants`` checks that.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import numpy.typing as npt

from sdcp_conformance.mutants.record import PROFILE_KILLS, STRICT_KILLS, MutantRecord
from sdcp_conformance.protocol.chain import extend_digest
from sdcp_conformance.protocol.control import EscalationPolicy, SpeculationControl
from sdcp_conformance.protocol.messages import SessionOpen
from sdcp_conformance.protocol.rng import UniformSource
from sdcp_conformance.reference.verifier.app import VerifierApp, VerifierConfig
from sdcp_conformance.reference.verifier.ports import Cache, RouterLink, TargetModel
from sdcp_conformance.reference.verifier.session import (
    PendingCommit,
    Ticket,
    VerifierSession,
)
from sdcp_conformance.transport.types import Request

FloatRows = npt.NDArray[np.float64]


class MutantSession(VerifierSession):
    """The reference session machine, plus what some mutants need: a swappable control class, the last load."""

    control_class: ClassVar[type[SpeculationControl]] = SpeculationControl
    policy_class: ClassVar[type[EscalationPolicy]] = EscalationPolicy

    def __init__(self, opening: SessionOpen, prompt: Sequence[int], *, vocab_size: int,
                 committed_output: Sequence[int] = ()) -> None:
        super().__init__(opening, prompt, vocab_size=vocab_size, committed_output=committed_output)
        self.last_load = 0
        policy = self.control.policy
        if self.control_class is not SpeculationControl or self.policy_class is not EscalationPolicy:
            fields = {field.name: getattr(policy, field.name) for field in dataclasses.fields(policy)}
            self.control = self.control_class(self.policy_class(**fields))

    def rebase(self, contract_digest: bytes, d0: bytes) -> None:
        """Replace the contract digest and d[0] (for mutants that compute them wrongly)."""
        self.contract_digest = contract_digest
        self._d0 = d0
        self.digest = extend_digest(d0, self.output)

    def decide(self, ticket: Ticket, logits: npt.ArrayLike, uniforms: UniformSource, load: int,
               q_rows: FloatRows | None = None) -> PendingCommit:
        self.last_load = load  # some mutants misuse the verifier's own load
        return super().decide(ticket, logits, uniforms, load, q_rows)


class MutantApp(VerifierApp):
    """The reference HTTP layer, building its sessions with a :class:`MutantSession` subclass."""

    def __init__(self, config: VerifierConfig, model: TargetModel | Sequence[TargetModel], cache: Cache,
                 router: RouterLink, *, session_class: type[MutantSession] = MutantSession) -> None:
        super().__init__(config, model, cache, router)
        self.session_class = session_class

    def new_session(self, request: Request, opening: SessionOpen, prompt: Sequence[int], vocab_size: int,
                    committed: Sequence[int]) -> VerifierSession:
        return self.session_class(opening, prompt, vocab_size=vocab_size, committed_output=committed)


@dataclass(frozen=True)
class Mutant(MutantRecord):
    """One named faulty variant of the reference verifier."""

    role: ClassVar[str] = "verifier"
    session: type[MutantSession] = MutantSession
    app: type[MutantApp] = MutantApp
    wrap_cache: Callable[[Cache], Cache] | None = None
    wrap_model: Callable[[TargetModel], TargetModel] | None = None

    def factory(self, config: VerifierConfig, model: TargetModel | Sequence[TargetModel], cache: Cache,
                router: RouterLink) -> VerifierApp:
        """``factory(config, model, cache, router)`` for ``certify(app_factory=...)``."""
        models = list(model) if isinstance(model, Sequence) else [model]
        if self.wrap_model is not None:
            models = [self.wrap_model(candidate) for candidate in models]
        if self.wrap_cache is not None:
            cache = self.wrap_cache(cache)
        return self.app(config, models, cache, router, session_class=self.session)


UNMUTATED = Mutant("unmutated", "none", "the hookable base classes with no bug planted (a control)", "-", "-")
"""Must pass every case the reference passes: proves a kill comes from the planted bug, not the hooks."""


__all__ = ["PROFILE_KILLS", "STRICT_KILLS", "UNMUTATED", "Mutant", "MutantApp", "MutantSession"]
