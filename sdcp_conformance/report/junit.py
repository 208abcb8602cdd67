"""``junit.xml``: one testcase per case run, for CI systems that read JUnit.

FAILED and XPASS become ``<failure>``, ERROR becomes ``<error>`` (both with the
message and the rendered transcript), SKIPPED becomes ``<skipped>``; NON-STRICT,
INFORMATIONAL and XFAIL pass, with their verdict, findings and notes in
``<system-out>`` — NON-STRICT becomes a ``<failure>`` under ``--strict``. The
``classname`` is ``role.area``, so CI groups cases as the suite does.

Sized for CI (issue 41): a failure's text is at most :data:`FAILURE_TEXT_LIMIT`
bytes — the message, findings and sentence, then as many of the transcript's
last exchanges as fit — and all texts of the file together stay within
:data:`TEXT_BUDGET`, shared out so that short texts stay whole and each keeps at least :data:`TEXT_FLOOR`, so the
file stays under 1 MB however many cases fail; a cut text ends with where the
whole case is (its element in ``report.html``, its key in ``report.json`` /
``evidence.json.gz``).

The file validates against the JUnit schema Jenkins' xUnit plugin uses
(``junit-10.xsd``, vendored in ``tests/report/``), which allows no
properties on a testcase: the verdicts a plain pass would hide are
testsuite properties instead (D-RPT-6): ``sdcp.non-strict`` (and
``sdcp.informational``, ``sdcp.xfail``) list those cases' IDs, with counts.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from sdcp_conformance.harness.case import Verdict
from sdcp_conformance.harness.runner import CaseResult, RunReport
from sdcp_conformance.report.json_report import EVIDENCE_NAME, case_anchor, iso_time

_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
"""Characters XML 1.0 cannot carry (an IUT's garbage may contain them)."""


def _xml_text(text: str) -> str:
    return _NOT_XML.sub("\N{REPLACEMENT CHARACTER}", text)


def testcase_name(result: CaseResult) -> str:
    """The case ID; the sanity case runs twice, so its runs are told apart."""
    return result.case.id if result.run == "main" else f"{result.case.id} [{result.run}]"


FAILURE_TEXT_LIMIT = 64 * 1024
"""The most bytes of one ``<failure>``/``<error>`` text."""
SYSTEM_OUT_LIMIT = 16 * 1024
"""The most bytes of one ``<system-out>`` text."""
TEXT_BUDGET = 768 * 1024
"""The most bytes of all texts of the file together (the rest of the file is tags, names and properties)."""
TEXT_FLOOR = 768
"""What every text keeps whatever the budget: its first lines and the pointer to the whole case."""


def _shares(wanted: list[int], total: int) -> list[int]:
    """Water-filling: the smallest wants are met whole, the rest share what is left equally (at least
    :data:`TEXT_FLOOR` each), so a few long texts never crowd out the short ones."""
    order = sorted(range(len(wanted)), key=lambda index: wanted[index])
    shares = [0] * len(wanted)
    left = total
    for position, index in enumerate(order):
        shares[index] = min(wanted[index], max(TEXT_FLOOR, left // (len(order) - position)))
        left -= shares[index]
    return shares


def _size(text: str) -> int:
    return len(text.encode("utf-8"))


def whole_case(result: CaseResult) -> str:
    """Where the whole of a case is, for a text that had to be cut."""
    key = f"{result.case.id}#{result.run}"
    return (f"the whole case: report.html#{case_anchor(result.case.id, result.run)}; its transcript: {key} in "
            f"report.json or {EVIDENCE_NAME}")


def _fitted(text: str, limit: int, pointer: str) -> str:
    """``text`` if it fits ``limit`` bytes, else its start, cut, then ``pointer``."""
    if _size(text) <= limit:
        return text
    tail = f"\n… cut at {limit // 1024} KB; {pointer}"
    room = max(0, limit - _size(tail))
    head = text.encode("utf-8")[:room].decode("utf-8", "ignore")
    return head + tail


def _details(result: CaseResult, limit: int = FAILURE_TEXT_LIMIT) -> str:
    parts = [result.message]
    if result.expected:
        parts.append("expected: " + " | ".join(result.expected))
    if result.actual:
        parts.append(f"actual: {result.actual}")
    if len(result.findings) > 1:
        parts.append("findings:\n" + "\n".join(f"  {f.severity.value} [{f.row}] {f.message}" for f in result.findings))
    parts.append(f'{result.case.section} ({result.case.level.value}): "{result.case.quote}"')
    pointer = whole_case(result)
    head = _fitted(_xml_text("\n".join(part for part in parts if part)), max(TEXT_FLOOR // 2, limit // 2), pointer)
    if not result.transcript:
        return head
    room = limit - _size(head) - _size("\ntranscript:\n") + 1  # n lines, n - 1 newlines
    rendered: list[str] = []  # the last exchanges first
    for entry in reversed(result.transcript):
        line = _xml_text(entry.render())
        room -= _size(line) + 1
        if room < 0:
            break
        rendered.append(line)
    total = len(result.transcript)
    if len(rendered) == total:
        return head + "\ntranscript:\n" + "\n".join(rendered[::-1])
    room = limit - _size(head) - _size(pointer) - 96  # the pointer and the count take their room first
    while rendered and sum(_size(line) + 1 for line in rendered) > room:
        rendered.pop()
    shown = f"the last {len(rendered)} of {total} exchanges" if rendered else f"none of its {total} exchanges fit"
    return head + f"\ntranscript ({shown}; {pointer}):\n" + "\n".join(rendered[::-1])


def _notes(result: CaseResult) -> str:
    lines = [f"verdict: {result.verdict.value}"]
    if result.message:
        lines.append(result.message)
    if result.verdict is Verdict.NON_STRICT:
        lines.append("NON-STRICT: a deviation from a SHOULD or a profile-only item; it fails the run under --strict")
    lines += [f"finding: {f.severity.value} [{f.row}] {f.message}" for f in result.findings]
    if result.expected_failure:
        lines.append(f"expected failure: {result.expected_failure}")
    lines += [f"note: {note}" for note in result.notes]
    return _xml_text("\n".join(lines))


MESSAGE_LIMIT = 512
"""The most characters of a failure's ``message`` attribute (its first line)."""


FAILING = frozenset({Verdict.FAILED, Verdict.XPASS})
FAILING_STRICT = FAILING | {Verdict.NON_STRICT}
"""The verdicts that become ``<failure>`` (under ``--strict``, NON-STRICT too)."""


def _failing(result: CaseResult, strict: bool) -> bool:
    return result.verdict in (FAILING_STRICT if strict else FAILING)


SKIPPED_VERDICTS = frozenset({Verdict.SKIPPED, Verdict.NOT_CLAIMED})
"""SKIPPED, and NOT CLAIMED (D-JUDGE-DECL-1: a case of a feature the declaration does not claim, never run), become
``<skipped>``."""
ERROR_TYPES = {Verdict.ERROR: "harness-error", Verdict.INCOMPLETE: "incomplete"}
"""ERROR, and INCOMPLETE (P1-JUDGE-4: it could not complete; the run is INCOMPLETE too), become ``<error>``."""


def outcome_of(verdict: Verdict, strict: bool) -> str:
    """What a case of ``verdict`` is in JUnit: ``failure:<verdict>``, ``error:<type>``, ``skipped`` or ``passed``
    (``bundle verify`` reads a bundle's junit.xml against the same mapping)."""
    if verdict in (FAILING_STRICT if strict else FAILING):
        return f"failure:{verdict.value}"
    if verdict in ERROR_TYPES:
        return f"error:{ERROR_TYPES[verdict]}"
    return "skipped" if verdict in SKIPPED_VERDICTS else "passed"


def _testcase(result: CaseResult, strict: bool, limits: tuple[int, int] = (FAILURE_TEXT_LIMIT, SYSTEM_OUT_LIMIT)
              ) -> ET.Element:
    """The testcase of ``result``; ``limits``: the bytes its failure text and its system-out may take."""
    element = ET.Element("testcase", classname=classname(result.case.role, result.case.area),
                         name=testcase_name(result), time=f"{result.duration_s:.3f}")
    first_line = _xml_text((result.message or result.verdict.value).splitlines()[0] if result.message else "")
    if len(first_line) > MESSAGE_LIMIT:
        first_line = first_line[:MESSAGE_LIMIT] + "…"
    tag, _, kind = outcome_of(result.verdict, strict).partition(":")
    if tag in ("failure", "error"):
        ET.SubElement(element, tag, message=first_line, type=kind).text = _details(result, limits[0])
    elif tag == "skipped":
        ET.SubElement(element, "skipped", message=first_line)
    ET.SubElement(element, "system-out").text = _fitted(_notes(result), limits[1], whole_case(result))
    return element


def _limits(results: list[CaseResult], strict: bool) -> list[tuple[int, int]]:
    """Each testcase's (failure text, system-out) limits: what each would take up to its own limit, shared out
    within :data:`TEXT_BUDGET` (:func:`_shares`)."""
    wanted: list[int] = []
    for result in results:
        flagged = _failing(result, strict) or result.verdict in ERROR_TYPES
        wanted.append(_size(_details(result, FAILURE_TEXT_LIMIT)) if flagged else 0)
        wanted.append(min(SYSTEM_OUT_LIMIT, _size(_notes(result))))
    shares = _shares(wanted, TEXT_BUDGET)
    return [(shares[2 * index], shares[2 * index + 1]) for index in range(len(results))]


def classname(role: str, area: str) -> str:
    """The testcase ``classname``: ``role.area`` (``verifier.fencing``)."""
    return f"{role}.{area}"


FLAGGED = ((Verdict.NON_STRICT, "sdcp.non-strict"), (Verdict.INFORMATIONAL, "sdcp.informational"),
           (Verdict.XFAIL, "sdcp.xfail"))
"""Verdicts that pass in JUnit, listed as testsuite properties so they stay visible (D-RPT-6)."""


def junit_tree(report: RunReport, *, name: str | None = None) -> ET.ElementTree:
    results = report.results
    role = results[0].case.role if results else str(report.environment.get("role", "verifier"))
    name = name or f"sdcp-conformance {role}"
    counts: dict[str, str] = {key: str(value) for key, value in {
        "tests": len(results),
        "failures": sum(r.verdict in (Verdict.FAILED, Verdict.XPASS)
                        or (report.strict and r.verdict is Verdict.NON_STRICT) for r in results),
        "errors": sum(r.verdict in (Verdict.ERROR, Verdict.INCOMPLETE) for r in results),
        "skipped": sum(r.verdict in SKIPPED_VERDICTS for r in results),
    }.items()}
    duration = f"{report.finished - report.started:.3f}"
    suites = ET.Element("testsuites", {"name": name, "time": duration,
                                       **{key: counts[key] for key in ("tests", "failures", "errors")}})
    suite = ET.SubElement(suites, "testsuite",
                          {"name": name, "timestamp": iso_time(report.started), "time": duration, **counts})
    properties = ET.SubElement(suite, "properties")
    ET.SubElement(properties, "property", name="seed", value=str(report.seed))
    ET.SubElement(properties, "property", name="status", value=report.status)
    ET.SubElement(properties, "property", name="strict", value=str(report.strict).lower())
    for verdict, key in FLAGGED:
        flagged = [testcase_name(r) for r in results if r.verdict is verdict]
        ET.SubElement(properties, "property", name=f"{key}.count", value=str(len(flagged)))
        if flagged:
            ET.SubElement(properties, "property", name=key, value=", ".join(flagged))
    for key, value in sorted(report.environment.items()):
        shown = value if isinstance(value, str) else json.dumps(value)
        ET.SubElement(properties, "property", name=str(key), value=_xml_text(shown))
    suite.extend(_testcase(result, report.strict, limits)
                 for result, limits in zip(results, _limits(results, report.strict), strict=True))
    ET.indent(suites)
    return ET.ElementTree(suites)


def write_junit(path: Path, report: RunReport) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    junit_tree(report).write(path, encoding="utf-8", xml_declaration=True)
    return path


__all__ = [
    "FAILING",
    "FAILING_STRICT",
    "FAILURE_TEXT_LIMIT",
    "FLAGGED",
    "SYSTEM_OUT_LIMIT",
    "TEXT_BUDGET",
    "classname",
    "junit_tree",
    "outcome_of",
    "testcase_name",
    "whole_case",
    "write_junit",
]
