"""Conformance cases as declarations keyed to the draft's sentences (h2spec, tlsfuzzer style).

A case names a stable ID, the section and the sentence it checks, the
requirement level, and an async ``run`` function that converses with the
implementation under test through a :class:`~sdcp_conformance.harness.contexts.verifier.VerifierContext`.
The runner, the reports and the coverage table are generated from these
declarations. A case declares the requirement rows it judges (``rows``,
the first being the sentence it is about); it quotes that row's sentence
unless its declaration quotes more (or other) text; its verdict is the worst of the
findings it records against those rows (and the ambient rows every
conversation is judged on), P1-JUDGE-2. The evidence (every message
exchanged) comes from the context's transcript.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sdcp_conformance.errors import InvalidArgument, SdcpConformanceError
from sdcp_conformance.judge import TABLE, Finding, Level, Verdict


class CaseStopped(SdcpConformanceError):
    """Raised inside a case after a finding that leaves nothing sensible to check next (the finding is recorded).

    P1-JUDGE-2: a deviation never ends a case by itself; only a check whose
    failure makes the rest of the conversation meaningless (a session that did
    not open, a round that got no verdict) stops it.
    """

    def __init__(self, finding: Finding) -> None:
        super().__init__(finding.message)
        self.finding = finding


class CaseIncomplete(SdcpConformanceError):
    """Raised inside a case whose control step failed for a cause outside its subject (P1-JUDGE-4): the case is
    INCOMPLETE, with ``cause`` named, and judges nothing about its subject."""

    def __init__(self, cause: str) -> None:
        super().__init__(cause)
        self.cause = cause


class CaseSkipped(SdcpConformanceError):
    """Raised inside a case that cannot run against this target (the reason says why)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


CaseFunction = Callable[[Any], Awaitable[None]]
"""A case body; it receives its role's context (a :class:`~sdcp_conformance.harness.judging.JudgedContext`)."""


@dataclass(frozen=True)
class Case:
    """One conformance case: what it checks and how."""

    id: str
    area: str
    section: str
    quote: str
    level: Level
    run: CaseFunction
    title: str = ""
    requires: tuple[str, ...] = ()
    """Capabilities of the target the case needs, e.g. ``"model:ctx"``; missing ones skip it."""
    timeout_s: float = 60.0
    profile: tuple[str, ...] = ()
    """Profile items (``P1-…``) the case also relies on."""
    black_box_note: str = ""
    """When a sentence cannot be fully judged black-box: why, and what the case checks instead."""
    rows: tuple[str, ...] = ()
    """Requirement rows (:data:`sdcp_conformance.judge.TABLE`) the case judges; the first is its sentence."""
    standalone: bool = False
    """Runs even when the sanity case failed (transport checks need no working SDCP conversation)."""
    role: str = "verifier"
    exclusive: bool = False
    """Changes state every case shares (the cache's fence enforcement, the IUT's pinned load): runs alone."""
    listens: tuple[str, ...] = ()
    """Harness listeners at the fixed addresses the IUT was configured with (``"router"``) whose traffic the case
    judges. When several harness processes certify one IUT (pytest-xdist), such cases all run in the one
    process that holds those listeners; the rest run anywhere, each process with its own cache."""
    features: tuple[str, ...] = ()
    """Optional features the case exercises (:data:`~sdcp_conformance.judge.declaration.FEATURES`): under a
    declaration that does not claim one the case is NOT CLAIMED (D-JUDGE-DECL-1). The harness finds the features of
    every message it sends (:mod:`~.features`); a case using one it does not declare is a harness bug."""
    quote_declared: bool = field(default=True, compare=False, repr=False)
    """Whether the declaration passed :attr:`quote`; ``False`` where it is the primary row's sentence, taken from
    the requirement table (:meth:`Catalogue.case`). Not part of :meth:`describe`: a report shows the quote alone."""

    @property
    def primary_row(self) -> str:
        return self.rows[0] if self.rows else "R-5.1-RESOURCES"

    def describe(self) -> dict[str, Any]:
        return {
            "id": self.id, "area": self.area, "section": self.section, "quote": self.quote,
            "level": self.level.value, "title": self.title, "requires": list(self.requires),
            "profile": list(self.profile), "black_box_note": self.black_box_note, "rows": list(self.rows),
            "role": self.role, "standalone": self.standalone, "exclusive": self.exclusive,
            "listens": list(self.listens), "features": list(self.features),
        }


LOAD_CONTROL_FEATURE = ("load:control", "load_hook")
"""A case needing the target's load control exercises the declared ``load_hook`` feature."""
HTTP3_FEATURE = ("http:3", "http3")
"""A case needing an HTTP/3 listener (``suites/transport_h3.py``) exercises the declared ``http3`` feature."""
FEATURES_BY_NEED = dict((LOAD_CONTROL_FEATURE, HTTP3_FEATURE))


def _features(declared: Sequence[str], requires: Sequence[str]) -> tuple[str, ...]:
    implied = (FEATURES_BY_NEED[need] for need in requires if need in FEATURES_BY_NEED)
    return tuple(dict.fromkeys((*declared, *implied)))


@dataclass
class Catalogue:
    """The cases of one suite, by ID; IDs are unique and stable forever."""

    role: str = "verifier"
    cases: dict[str, Case] = field(default_factory=dict)
    sanity_id: str | None = None
    base_models: tuple[str, ...] = ("bigram",)
    """Mock models every case may use without declaring ``requires=("model:…",)``."""
    optional_models: tuple[str, ...] = ()
    """Models a target need not serve: the cases requiring one it does not list are skipped, naming the model,
    where any other missing model is a usage error."""
    exclusive_areas: frozenset[str] = frozenset()
    """Areas whose every case changes shared state and so runs alone."""
    listening_areas: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Areas whose every case judges traffic at fixed harness listeners (:attr:`Case.listens`)."""

    def add(self, case: Case) -> Case:
        if case.id in self.cases:
            raise InvalidArgument(f"duplicate case id {case.id}")
        unknown = [row for row in case.rows if row not in TABLE]
        if unknown:
            raise InvalidArgument(f"case {case.id} declares unknown requirement rows {unknown}")
        self.cases[case.id] = case
        return case

    def load_suite(self, package: str, path: Sequence[str], not_cases: frozenset[str]) -> None:
        """Import every module of a suite's ``package`` (in name order) but ``not_cases``, each declaring its
        cases on this catalogue, then give the cases the features the package's ``features`` table says."""
        import importlib
        import pkgutil

        modules = sorted(info.name for info in pkgutil.iter_modules(path))
        for module in modules:
            if module not in not_cases | {"features"}:
                importlib.import_module(f"{package}.{module}")
        if "features" in modules:
            self.declare_features(importlib.import_module(f"{package}.features").FEATURES)

    def declare_features(self, features: Mapping[str, Sequence[str]]) -> None:
        """The optional features each listed case exercises (a suite's ``features.py`` table; the harness checks
        it against the messages every case sends); an unknown case ID is a declaration error."""
        from dataclasses import replace

        unknown = sorted(set(features) - set(self.cases))
        if unknown:
            raise InvalidArgument(f"features declared for unknown case(s) {unknown}")
        for case_id, named in features.items():
            case = self.cases[case_id]
            self.cases[case_id] = replace(case, features=tuple(dict.fromkeys((*case.features, *named))))

    def case(
        self,
        id: str,
        *,
        area: str,
        section: str,
        quote: str | None = None,
        level: Level,
        title: str = "",
        requires: Sequence[str] = (),
        timeout_s: float = 60.0,
        profile: Sequence[str] = (),
        black_box_note: str = "",
        sanity: bool = False,
        rows: Sequence[str] = (),
        standalone: bool = False,
        exclusive: bool = False,
        listens: Sequence[str] = (),
        features: Sequence[str] = (),
    ) -> Callable[[CaseFunction], CaseFunction]:
        """Decorator declaring a case.

        ``quote`` defaults to the sentence of the case's primary row (the first of ``rows``), looked up in the
        requirement table now; a case that quotes more or other text passes it. A case with neither rows nor a
        quote is a declaration error, raised at once.
        """
        resolved = _resolved_quote(id, quote, rows)

        def register(run: CaseFunction) -> CaseFunction:
            self.add(Case(id, area, section, resolved, level, run,
                          title or (run.__doc__ or "").strip().split("\n")[0],
                          tuple(requires), timeout_s, tuple(profile), black_box_note, tuple(rows), standalone,
                          self.role, exclusive or area in self.exclusive_areas,
                          tuple(dict.fromkeys((*listens, *self.listening_areas.get(area, ())))),
                          features=_features(features, requires), quote_declared=quote is not None))
            if sanity:
                self.sanity_id = id
            return run

        return register

    def select(self, selectors: Sequence[str] = (), exclude: Sequence[str] = ()) -> list[Case]:
        """Cases matching any selector (all if none), minus those matching any ``exclude`` selector.

        A selector is a case ID, an ID prefix or an area, compared without regard to case
        (``--only fencing``, ``--only ver-6.3-fence``). Every selector must match some case: one that
        matches none is a usage error naming the closest IDs or areas (a typo never silently selects less).
        """
        for selector in (*selectors, *exclude):
            if not self.matching(selector):
                raise InvalidArgument(f"no case matches {selector!r}{self.suggestion(selector)}")
        chosen = [case for case in self.cases.values()
                  if not selectors or any(_matches(case, s) for s in selectors)]
        chosen = [case for case in chosen if not any(_matches(case, s) for s in exclude)]
        if not chosen:
            raise InvalidArgument(f"no case left: --only {list(selectors)} minus --exclude {list(exclude)}")
        return chosen

    def matching(self, selector: str) -> list[Case]:
        return [case for case in self.cases.values() if _matches(case, selector)]

    def suggestion(self, selector: str) -> str:
        """`` (did you mean …?)`` with the closest areas or case IDs, or nothing."""
        import difflib

        names = sorted({case.area for case in self.cases.values()} | set(self.cases))
        lowered = {name.lower(): name for name in names}
        close = difflib.get_close_matches(selector.lower(), list(lowered), n=3, cutoff=0.6)
        if not close:
            close = [name for name in lowered if name.startswith(selector.lower()[:7])][:3]
        return f" (did you mean {', '.join(lowered[name] for name in close)}?)" if close else ""


def _resolved_quote(case_id: str, quote: str | None, rows: Sequence[str]) -> str:
    """The quote of a case declared with ``quote`` and ``rows``: ``quote``, else its primary row's sentence."""
    if quote is not None:
        return quote
    if not rows:
        raise InvalidArgument(f"case {case_id} declares neither rows nor a quote: name the requirement row it judges "
                              "(rows=...) or quote its sentence (quote=...)")
    if rows[0] not in TABLE:
        raise InvalidArgument(f"case {case_id} declares unknown requirement rows {[rows[0]]}")
    return TABLE[rows[0]].quote


def _matches(case: Case, selector: str) -> bool:
    wanted = selector.lower()
    ident = case.id.lower()
    return ident == wanted or ident.startswith(wanted) or case.area.lower() == wanted


__all__ = [
    "Case",
    "CaseFunction",
    "CaseIncomplete",
    "CaseSkipped",
    "CaseStopped",
    "Catalogue",
    "Level",
    "Verdict",
]
