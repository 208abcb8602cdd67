"""``bundle verify`` re-judges: every verdict of a bundle recomputed from its evidence, and its files agreeing.

A valid signature proves who wrote the files, not that the verdict follows from them (CNCF's conformance bot
recomputes a submission's verdict against the release's required tests, and checks that its log and JUnit agree).
So, after the signature and the digests, :func:`rejudge`:

1. loads the requirement set the run names from this installation's released sets (and its digest must match);
2. recomputes each case's verdict from its findings under that set (:mod:`~sdcp_conformance.judge.scoring`):
   a verdict taken from findings must be what they give; XFAIL needs a failing verdict beneath it, XPASS a
   passing one; NOT CLAIMED needs a feature the declaration does not claim; SKIPPED must not be a claimed
   feature's (that is INCOMPLETE);
3. recomputes the run's verdict from the case verdicts (P1-JUDGE-3);
4. checks that ``certification.json`` (status, counts), ``junit.xml`` (each testcase's outcome) and the
   declaration member say the same.

The first disagreement rejects the bundle, naming the case. Staleness is said, not rejected: a run older than
:data:`~sdcp_conformance.judge.requirement_sets.VALIDITY_DAYS`, or judged against a superseded set (D-JUDGE-SET-2).
"""

from __future__ import annotations

import datetime as dt
import json
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.judge.declaration import Declaration, parse_declaration
from sdcp_conformance.judge.levels import Verdict
from sdcp_conformance.judge.requirement_sets import VALIDITY_DAYS, RequirementSet, load_set, superseded_by
from sdcp_conformance.judge.scoring import FROM_FINDINGS, CaseOutcome, case_verdict, run_status
from sdcp_conformance.report import JUNIT_NAME
from sdcp_conformance.report.json_report import JSON_NAME
from sdcp_conformance.report.junit import outcome_of

SUMMARY_NAME = "certification.json"
"""The bundle's certification summary (:func:`~.bundle.certification_summary`)."""
DECLARATION_NAME = "declaration.toml"
"""The declaration a run followed, as the bundle carries it."""


class Disagreement(InvalidArgument):
    """A verdict of the bundle does not follow from its evidence, or two of its files disagree."""


@dataclass(frozen=True)
class Rejudged:
    status: str
    requirements: str | None
    cases: int
    stale: list[str]
    """Why the result is stale (empty: current)."""
    declaration: Declaration | None


def rejudge(members: Mapping[str, bytes], *, today: dt.date | None = None) -> Rejudged:
    """Recompute every verdict in ``members`` (a bundle's files); raises :class:`Disagreement` at the first that
    does not follow."""
    document = _json(members, JSON_NAME)
    run = document["run"]
    requirements = _requirements(document)
    declaration = _declaration(members, document, str(run.get("role", "")))
    results = document.get("results", [])
    for record in results:
        _check_case(record, requirements, declaration)
    outcomes = [CaseOutcome.from_record(record) for record in results]
    status = run_status(outcomes, run.get("areas_required", []), bool(run.get("strict", False)))
    stated = run["status"]
    if run.get("interrupted"):
        raise Disagreement("the run was interrupted: it certifies nothing")
    if stated != status:
        raise Disagreement(f"the run's verdict: report.json says {stated}, its case verdicts give {status} "
                           "(P1-JUDGE-3)")
    counts = dict(Counter(record["verdict"] for record in results))
    if dict(document.get("counts", {})) != counts:
        raise Disagreement(f"report.json's counts {document.get('counts')} are not its cases' {counts}")
    _check_summary(members, status, counts)
    _check_junit(members, results, bool(run.get("strict", False)))
    return Rejudged(status, requirements.name if requirements else None, len(results),
                    _stale(run, requirements, today or dt.date.today()), declaration)


def _json(members: Mapping[str, bytes], name: str) -> dict[str, Any]:
    if name not in members:
        raise Disagreement(f"the bundle has no {name}")
    try:
        document: dict[str, Any] = json.loads(members[name])
    except ValueError as exc:
        raise Disagreement(f"{name} is not JSON: {exc}") from exc
    return document


def _requirements(document: Mapping[str, Any]) -> RequirementSet | None:
    named = document.get("requirements")
    if named is None:
        return None
    try:
        held = load_set(str(named["name"]))
    except InvalidArgument as exc:
        raise Disagreement(f"the run was judged against {named['name']}, which this harness does not hold "
                           f"({exc}); verify with a harness that does") from exc
    if named.get("sha256") != held.sha256:
        raise Disagreement(f"the run's requirement set {held.name} has SHA-256 {named.get('sha256')}, the released "
                           f"one {held.sha256}")
    return held


def _declaration(members: Mapping[str, bytes], document: Mapping[str, Any], role: str) -> Declaration | None:
    stated = document.get("declaration")
    if stated is None:
        if DECLARATION_NAME in members:
            raise Disagreement(f"the bundle carries {DECLARATION_NAME}, but report.json followed no declaration")
        return None
    if DECLARATION_NAME not in members:
        raise Disagreement(f"report.json followed a declaration the bundle does not carry ({DECLARATION_NAME})")
    try:
        declaration = parse_declaration(members[DECLARATION_NAME], DECLARATION_NAME, role)
    except InvalidArgument as exc:
        raise Disagreement(str(exc)) from exc
    if declaration.sha256 != stated.get("sha256") or sorted(declaration.claims) != sorted(stated.get("claims", [])):
        raise Disagreement(f"{DECLARATION_NAME} is not the declaration report.json followed (its claims or digest "
                           "differ)")
    return declaration


def _check_case(record: Mapping[str, Any], requirements: RequirementSet | None,
                declaration: Declaration | None) -> None:
    verdict = Verdict(record["verdict"])
    name = f"{record['id']} ({record.get('run', 'main')})"
    findings = record.get("findings", [])
    given = case_verdict(findings, requirements)
    under = f" under {requirements.name}" if requirements is not None else ""
    if verdict in FROM_FINDINGS and verdict is not given:
        raise Disagreement(f"case {name}: report.json says {verdict.value}, its findings give {given.value}{under}")
    if verdict is Verdict.XFAIL and given not in (Verdict.FAILED, Verdict.NON_STRICT):
        raise Disagreement(f"case {name}: XFAIL, but its findings give {given.value}{under}")
    if verdict is Verdict.XPASS and given is not Verdict.PASSED:
        raise Disagreement(f"case {name}: XPASS, but its findings give {given.value}{under}")
    features = [str(feature) for feature in record.get("features", [])]
    if verdict is Verdict.NOT_CLAIMED and (declaration is None or not declaration.unclaimed(tuple(features))):
        raise Disagreement(f"case {name}: NOT CLAIMED, but the declaration claims every feature it exercises "
                           f"({', '.join(features) or 'none'})")
    if verdict is Verdict.SKIPPED and declaration is not None and set(features) & declaration.claims:
        raise Disagreement(f"case {name}: SKIPPED, but the declaration claims its feature(s) "
                           f"{', '.join(sorted(set(features) & declaration.claims))}: that is INCOMPLETE")


def _check_summary(members: Mapping[str, bytes], status: str, counts: Mapping[str, int]) -> None:
    if SUMMARY_NAME not in members:
        return
    summary = _json(members, SUMMARY_NAME)
    if summary.get("status") != status:
        raise Disagreement(f"{SUMMARY_NAME} says {summary.get('status')}, the cases give {status}")
    if dict(summary.get("counts", {})) != dict(counts):
        raise Disagreement(f"{SUMMARY_NAME}'s counts {summary.get('counts')} are not the cases' {dict(counts)}")


def _check_junit(members: Mapping[str, bytes], results: list[Mapping[str, Any]], strict: bool) -> None:
    if JUNIT_NAME not in members:
        return
    try:
        root = ET.fromstring(members[JUNIT_NAME])
    except ET.ParseError as exc:
        raise Disagreement(f"{JUNIT_NAME} is not XML: {exc}") from exc
    seen: dict[str, str] = {}
    for case in root.iter("testcase"):
        failure, error, skipped = case.find("failure"), case.find("error"), case.find("skipped")
        seen[str(case.get("name"))] = (f"failure:{failure.get('type')}" if failure is not None
                                       else f"error:{error.get('type')}" if error is not None
                                       else "skipped" if skipped is not None else "passed")
    for record in results:
        run = record.get("run", "main")
        name = record["id"] if run == "main" else f"{record['id']} [{run}]"
        want = outcome_of(Verdict(record["verdict"]), strict)
        if seen.get(name) != want:
            raise Disagreement(f"case {record['id']} ({run}): {JUNIT_NAME} says {seen.get(name, 'nothing')}, "
                               f"report.json's {record['verdict']} makes it {want}")
    if len(seen) != len(results):
        raise Disagreement(f"{JUNIT_NAME} has {len(seen)} testcases, report.json {len(results)} results")


def _stale(run: Mapping[str, Any], requirements: RequirementSet | None, today: dt.date) -> list[str]:
    why: list[str] = []
    finished = dt.datetime.fromisoformat(str(run["started"])).date() + dt.timedelta(days=VALIDITY_DAYS)
    if today > finished:
        why.append(f"the run is older than {VALIDITY_DAYS} days (current until {finished.isoformat()})")
    if requirements is None:
        why.append("the run was scored against no released requirement set")
    else:
        newer = superseded_by(requirements.name)
        if newer is not None:
            why.append(f"its requirement set {requirements.name} is superseded by {newer}")
    return why


__all__ = ["Disagreement", "Rejudged", "rejudge"]
