"""One certification run: start the environment, run the selected cases, stop, return the report."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.harness.case import Case, Catalogue
from sdcp_conformance.harness.expected import ExpectedFailures
from sdcp_conformance.harness.role_spec import spec_of
from sdcp_conformance.harness.runner import DEFAULT_JOBS, Progress, RunReport, run_catalogue
from sdcp_conformance.harness.shards import recorded_durations, shard_cases
from sdcp_conformance.harness.suites import catalogue_of
from sdcp_conformance.harness.target import TargetConfig, require_models
from sdcp_conformance.judge.declaration import Declaration
from sdcp_conformance.judge.requirement_sets import RequirementSet
from sdcp_conformance.transport.listeners import HttpVersions


def default_catalogue(role: str = "verifier") -> Catalogue:
    """The case catalogue of ``role``'s suite."""
    return catalogue_of(role)


def needed_models(catalogue: Catalogue, selected: Sequence[Case]) -> set[str]:
    """The mock models the selected cases talk to: the suite's base models and every ``model:…`` they require."""
    return set(cases_needing(catalogue, selected))


def cases_needing(catalogue: Catalogue, selected: Sequence[Case]) -> dict[str, tuple[str, ...]]:
    """Per model the selected cases talk to, the IDs of the cases that need it; ``()`` for a suite's base model,
    which every case needs (so that a refusal can say which cases to leave out)."""
    needing: dict[str, list[str]] = {model: [] for model in catalogue.base_models}
    for case in selected:
        for need in case.requires:
            model = need.removeprefix("model:")
            if need.startswith("model:") and model not in catalogue.base_models:
                needing.setdefault(model, []).append(case.id)
    return {model: tuple(ids) for model, ids in needing.items()}


def models_required(catalogue: Catalogue, selected: Sequence[Case]) -> dict[str, tuple[str, ...]]:
    """:func:`cases_needing` less the catalogue's optional models: what a target must serve for the selection (a
    case needing an optional model the target lacks is skipped instead)."""
    return {model: ids for model, ids in cases_needing(catalogue, selected).items()
            if model not in catalogue.optional_models}


async def certify(
    target: TargetConfig | None = None,
    *,
    selectors: Sequence[str] = (),
    seed: int | None = None,
    expected_failures: ExpectedFailures | None = None,
    progress: Progress | None = None,
    app_factory: Callable[..., Any] | None = None,
    workdir: Path | None = None,
    strict: bool = False,
    role: str | None = None,
    jobs: int = DEFAULT_JOBS,
    shard: tuple[int, int] | None = None,
    requirements: RequirementSet | None = None,
    declaration: Declaration | None = None,
    http: HttpVersions | None = None,
) -> RunReport:
    """Certify ``target``, or the embedded reference of ``role`` (default verifier) when None, serving ``http``
    (:mod:`~sdcp_conformance.transport.listeners`; by default both HTTP/2 and HTTP/3; a target says its own).

    ``app_factory`` builds the embedded IUT's app instead of the reference's
    (a mutant's, say). A target that lacks a model the selected cases need is
    refused before anything runs (:class:`~sdcp_conformance.errors.InvalidArgument`):
    such a run could only skip, and a run of skips certifies nothing (P1-JUDGE-3).
    """
    if target is not None and role is not None and role != target.role:
        raise InvalidArgument(f"--role {role} disagrees with the target file's role {target.role!r}")
    role = target.role if target is not None else role or "verifier"
    catalogue = default_catalogue(role)
    selected = catalogue.select(selectors)
    if shard is not None:
        selected = shard_cases(selected, *shard, recorded_durations(catalogue), catalogue.sanity_id)
    if target is not None:
        require_models(target, models_required(catalogue, selected))
    run_seed = seed if seed is not None else secrets.randbelow(2**32)
    if declaration is not None and declaration.role != role:
        raise InvalidArgument(f"the declaration is a {declaration.role}'s; the IUT certified is a {role}")
    environment = await spec_of(role).environment.start(target, app_factory=app_factory, workdir=workdir, http=http)
    environment.declaration = declaration
    try:
        report = await run_catalogue(environment, catalogue, selected, seed=run_seed,
                                     expected_failures=expected_failures, progress=progress, strict=strict,
                                     selectors=selectors, jobs=jobs, requirements=requirements,
                                     declaration=declaration)
        report.shard = shard
        return report
    finally:
        await environment.stop()


__all__ = ["cases_needing", "certify", "default_catalogue", "models_required", "needed_models"]
