"""The one mutant base: what every mutant is, whatever its role, and how each role's reference is built with its bug.

A mutant is a role's reference with ONE planted bug, named forever, with the sentence the bug breaks and the
verdicts that count as finding it (:class:`Mutant`). The bug lives in a subclass of one of the classes the reference
is built from (its app, its session machine, the router's driver or registry, the router's front) or in a wrapper
around a port (the models, the cache); the reference files are never edited and no global is patched. Each role's
mutant (:class:`VerifierMutant`, :class:`DrafterMutant`, :class:`RouterMutant`) says which classes it swaps and how
``factory`` builds the embedded IUT that ``certify(app_factory=…, role=…)`` starts; built with nothing swapped
(:meth:`Mutant.unmutated`), it is the reference, so a kill is the planted bug's doing.

The reference verifier exposes the points where bugs are planted as methods (``stored_verdict``, ``concurrent``,
``accept``, ``truncate_emitted``, ``reported_accepted``, ``check_commit_order``, ``VerifierApp.new_session``);
:class:`MutantSession` and :class:`MutantApp` add what some verifier bugs need. The reference drafter's are
``authorized``, ``parse_assignment``, ``validate_assignment``, ``uniforms``, ``lease_ms``, ``status_interval_s``,
``_exchange``, ``_delete``, ``_check_epoch`` and the session's ``stopping``, ``validate``, ``accepts_resync``,
``adopted_digest``; the router's are the classes of :class:`~sdcp_conformance.reference.router.app.RouterParts`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self

import numpy as np
import numpy.typing as npt

from sdcp_conformance.judge import Verdict
from sdcp_conformance.protocol.chain import extend_digest
from sdcp_conformance.protocol.control import EscalationPolicy, SpeculationControl
from sdcp_conformance.protocol.messages import SessionOpen
from sdcp_conformance.protocol.rng import UniformSource
from sdcp_conformance.reference.drafter.app import DrafterApp, DrafterConfig
from sdcp_conformance.reference.drafter.session import DrafterSession
from sdcp_conformance.reference.frontend import RouterFrontend
from sdcp_conformance.reference.router.app import RouterApp, RouterParts
from sdcp_conformance.reference.router.driver import RouterConfig, SessionDriver
from sdcp_conformance.reference.router.links import HttpLinks
from sdcp_conformance.reference.router.ports import RouterCache
from sdcp_conformance.reference.router.registry import InstanceRegistry
from sdcp_conformance.reference.router.session import RouterSession
from sdcp_conformance.reference.verifier.app import VerifierApp, VerifierConfig
from sdcp_conformance.reference.verifier.ports import Cache, RouterLink, TargetModel
from sdcp_conformance.reference.verifier.session import PendingCommit, Ticket, VerifierSession
from sdcp_conformance.transport.types import Request

FloatRows = npt.NDArray[np.float64]

STRICT_KILLS = frozenset({Verdict.FAILED})
PROFILE_KILLS = frozenset({Verdict.FAILED, Verdict.NON_STRICT})


@dataclass(frozen=True)
class Mutant:
    """One named faulty variant of a role's reference."""

    role: ClassVar[str]
    swappable: ClassVar[tuple[tuple[str, type], ...]] = ()
    """(field, the reference's class) for each class of the role's reference a bug may subclass."""

    name: str
    """Stable forever (the killers file and test IDs use it); unique across roles."""
    area: str
    description: str
    section: str
    violates: str
    """The sentence of the draft (or profile item) the bug breaks, verbatim."""

    profile_only: bool = False
    """The bug breaks only a profile choice, so the suite can at most say NON-STRICT about it."""

    wrap_model: Callable[[Any], Any] | None = None
    """Wraps the model, each of them when the IUT serves several (the verifier's target, the drafter's draft)."""
    wrap_cache: Callable[[Any], Any] | None = None
    """Wraps the IUT's port to the MLC."""

    @classmethod
    def unmutated(cls, name: str, description: str) -> Self:
        """The reference built through this mutant's factory with nothing swapped: a control, which must pass every
        case the reference passes (a kill comes from the planted bug, not the hooks)."""
        return cls(name, "none", description, "-", "-")

    @classmethod
    def field_for(cls, bug: object) -> str:
        """The field a bug class goes into: the one of the reference's class it subclasses."""
        for name, reference in cls.swappable:
            if isinstance(bug, type) and issubclass(bug, reference):
                return name
        known = ", ".join(reference.__name__ for _, reference in cls.swappable)
        raise TypeError(f"{bug!r} subclasses none of {known}: say which field it goes into")

    @property
    def kill_verdicts(self) -> frozenset[Verdict]:
        """Verdicts that count as detecting this mutant (NON-STRICT only for a profile-only bug)."""
        return PROFILE_KILLS if self.profile_only else STRICT_KILLS

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "area": self.area, "description": self.description, "section": self.section,
                "violates": self.violates, "profile_only": self.profile_only, "role": self.role}

    def factory(self, *args: Any, **kwargs: Any) -> Any:
        """The embedded IUT with the bug planted, from what the role's environment passes the reference's factory."""
        raise NotImplementedError

    def wrapped_models(self, model: Any) -> Any:
        """``model`` (or each model of a sequence) through :attr:`wrap_model`."""
        wrap = self.wrap_model
        if wrap is None:
            return model
        return [wrap(one) for one in model] if isinstance(model, Sequence) else wrap(model)

    def wrapped_cache(self, cache: Any) -> Any:
        return cache if self.wrap_cache is None else self.wrap_cache(cache)


# ---------------------------------------------------------------------- the verifier


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
class VerifierMutant(Mutant):
    """One named faulty variant of the reference verifier."""

    role: ClassVar[str] = "verifier"
    swappable = (("session", MutantSession), ("app", MutantApp))
    session: type[MutantSession] = MutantSession
    app: type[MutantApp] = MutantApp

    def factory(self, config: VerifierConfig, model: TargetModel | Sequence[TargetModel], cache: Cache,
                router: RouterLink) -> VerifierApp:
        """``factory(config, model, cache, router)`` for ``certify(app_factory=...)``."""
        models = list(model) if isinstance(model, Sequence) else [model]
        return self.app(config, self.wrapped_models(models), self.wrapped_cache(cache), router,
                        session_class=self.session)


# ---------------------------------------------------------------------- the drafter


@dataclass(frozen=True)
class DrafterMutant(Mutant):
    """One named faulty variant of the reference drafter."""

    role: ClassVar[str] = "drafter"
    swappable = (("session", DrafterSession), ("app", DrafterApp))
    app: type[DrafterApp] = DrafterApp
    session: type[DrafterSession] | None = None

    def factory(self, config: DrafterConfig, model: Any, cache: Any, verifier: Any, router: Any) -> DrafterApp:
        """``factory(config, model, cache, verifier, router)`` for ``certify(app_factory=..., role="drafter")``."""
        app = self.app(config, self.wrapped_models(model), self.wrapped_cache(cache), verifier, router)
        if self.session is not None:
            app.session_class = self.session
        return app


# ---------------------------------------------------------------------- the router


@dataclass(frozen=True)
class RouterMutant(Mutant):
    """One named faulty variant of the reference router: it swaps one of the classes the router is built from
    (:class:`~sdcp_conformance.reference.router.app.RouterParts`), the app or the test front."""

    role: ClassVar[str] = "router"
    swappable = (("session", RouterSession), ("driver", SessionDriver), ("registry", InstanceRegistry),
             ("app", RouterApp), ("front", RouterFrontend))
    session: type[RouterSession] | None = None
    driver: type[SessionDriver] | None = None
    registry: type[InstanceRegistry] | None = None
    """Each in place of the one in ``parts``."""
    parts: RouterParts = field(default_factory=RouterParts)
    app: type[RouterApp] = RouterApp
    front: type[RouterFrontend] = RouterFrontend

    def __post_init__(self) -> None:
        if self.wrap_model is not None:
            raise TypeError(f"router mutant {self.name!r}: a router has no model to wrap")

    def factory(self, config: RouterConfig, links: HttpLinks, cache: RouterCache) -> RouterFrontend:
        """The router and its front, with the planted bug (a
        :data:`~sdcp_conformance.reference.router.service.RouterFactory`)."""
        parts = dataclasses.replace(self.parts, session=self.session or self.parts.session,
                                    driver=self.driver or self.parts.driver,
                                    registry=self.registry or self.parts.registry)
        return self.front(self.app(config, links, links, self.wrapped_cache(cache), parts=parts))


__all__ = [
    "PROFILE_KILLS",
    "STRICT_KILLS",
    "DrafterMutant",
    "Mutant",
    "MutantApp",
    "MutantSession",
    "RouterMutant",
    "VerifierMutant",
]
