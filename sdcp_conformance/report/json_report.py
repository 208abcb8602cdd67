"""``report.json``: the run's metadata, one record per case and the coverage table; evidence kept compact.

The document is the one model every view reads: the console summary
(``certify``, ``report show``), the HTML report, ``report diff`` and the
bundle's predicate all start from it, so they cannot disagree.

Compact evidence (D-RPT-2): the transcripts of cases that need no attention
(PASSED, INFORMATIONAL, SKIPPED) go into ``evidence.json.gz`` beside
``report.json``, keyed by ``ID#run``; the record keeps ``evidence_file`` and
``evidence_entries`` instead. Every other case (FAILED, ERROR, XPASS, XFAIL,
NON-STRICT) keeps its transcript inline, where the reader of a failure
looks — within a budget, so that ``report.json`` of a failing run stays under
1 MB for CI (issue 41): a case keeps the last exchanges of its transcript that
fit :data:`INLINE_EVIDENCE_BYTES` (and what is left of
:data:`INLINE_EVIDENCE_TOTAL` for the whole run); when that is not all of it,
the whole transcript goes to the evidence file too, and the record says
``evidence_file``, ``evidence_entries`` (all of them) and ``evidence_inline``
(how many it kept). Any other text still over :data:`JSON_LIMIT` is cut, saying
so (the HTML report, written from the whole document, holds it whole).
:func:`load_document` puts the evidence back when asked.
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import platform
import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sdcp_conformance import spec
from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.judge import SEVERITY_ORDER, Verdict

if TYPE_CHECKING:
    from sdcp_conformance.harness.case import Catalogue
    from sdcp_conformance.harness.runner import RunReport

FORMAT = "sdcp-conformance-report/2"
"""/2: evidence of cases needing no attention moved to :data:`EVIDENCE_NAME`; findings carry their sentence."""
READABLE_FORMATS = ("sdcp-conformance-report/1", FORMAT)
JSON_NAME = "report.json"
EVIDENCE_NAME = "evidence.json.gz"
STATUS_INTERRUPTED = "INTERRUPTED"
"""A run stopped by Ctrl-C: the report holds the cases that finished; it certifies nothing."""

EXTERNAL_EVIDENCE = frozenset({Verdict.PASSED.value, Verdict.INFORMATIONAL.value, Verdict.SKIPPED.value})
"""Verdicts whose transcripts go to the evidence file (D-RPT-2)."""
INLINE_EVIDENCE_BYTES = 48 * 1024
"""The most of one flagged case's transcript (its last exchanges, as JSON) kept inline in ``report.json``."""
INLINE_EVIDENCE_TOTAL = 384 * 1024
"""The most of all flagged cases' transcripts kept inline together, shared out fairly (:func:`_inline_tails`)."""
JSON_LIMIT = 900 * 1024
"""``report.json`` stays under this (a CI artifact viewer's 1 MB); :func:`_cut_texts` enforces it."""
LONG_TEXTS = (2048, 512, 128)
"""What a record's texts are cut to, in turn, while the document is still over :data:`JSON_LIMIT` (the inline
evidence goes first)."""
MANY = 10
"""How many notes and findings a record keeps when the document is over :data:`JSON_LIMIT` (the rest: report.html)."""


def case_anchor(case_id: str, run: str = "main") -> str:
    """The ``id`` of a case's element in ``report.html`` (JUnit failures point at it)."""
    return "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in f"case-{case_id}-{run}")


def _size(value: Any) -> int:
    return len(json.dumps(value, indent=1, ensure_ascii=False).encode("utf-8"))


def iso_time(stamp: float) -> str:
    return dt.datetime.fromtimestamp(stamp, dt.UTC).isoformat(timespec="milliseconds")


def areas(report: RunReport) -> dict[str, dict[str, int]]:
    """Verdict counts per area, areas and verdicts in name order."""
    return _tally([(r.case.area, r.verdict.value) for r in report.results])


def _tally(pairs: Sequence[tuple[str, str]]) -> dict[str, dict[str, int]]:
    tally: dict[str, dict[str, int]] = {}
    for key, verdict in pairs:
        per_key = tally.setdefault(key, {})
        per_key[verdict] = per_key.get(verdict, 0) + 1
    return {key: dict(sorted(counts.items())) for key, counts in sorted(tally.items())}


def grouped(results: Sequence[Mapping[str, Any]], field: str) -> dict[str, dict[str, int]]:
    """Verdict counts of the records grouped by ``field`` (``area``, ``section``, ``level``, ``role``)."""
    return _tally([(str(record.get(field, "")), str(record["verdict"])) for record in results])


def _sentence(row_id: str) -> str:
    from sdcp_conformance.judge import TABLE

    return spec.normalize(TABLE[row_id].quote) if row_id and row_id in TABLE else ""


def result_record(result: Any) -> dict[str, Any]:
    record: dict[str, Any] = result.to_json()
    record["key"] = f"{result.case.id}#{result.run}"
    for finding in record["findings"]:
        finding["sentence"] = _sentence(finding["row"])
    return record


def report_document(report: RunReport, *, command: Sequence[str] = (), target: str | None = None,
                    selectors: Sequence[str] = (), catalogue: Catalogue | None = None,
                    excluded: Sequence[str] = (), role: str | None = None, mutant: str | None = None,
                    expected_failures: str | None = None, iut_certificate: str | None = None,
                    interrupted: bool = False) -> dict[str, Any]:
    """The whole report as JSON-ready data (every transcript inline); ``catalogue`` adds the coverage table."""
    from sdcp_conformance.report.provenance import harness_info

    status = STATUS_INTERRUPTED if interrupted else report.status
    run_role = role or (catalogue.role if catalogue is not None else str(report.environment.get("role", "verifier")))
    document: dict[str, Any] = {
        "format": FORMAT,
        "tool": harness_info(),
        "run": {
            "seed": report.seed, "started": iso_time(report.started), "finished": iso_time(report.finished),
            "duration_s": round(report.finished - report.started, 3), "command": list(command),
            "target": target, "role": run_role, "mutant": mutant, "selectors": list(selectors or report.selectors),
            "excluded": list(excluded), "expected_failures": expected_failures, "failed": report.failed,
            "status": status, "interrupted": interrupted, "strict": report.strict,
            "incomplete": (["the run was interrupted (Ctrl-C) before every case ran"] if interrupted else [])
            + report.incomplete_reasons(),
            "skipped": [{"id": r.case.id, "run": r.run, "reason": r.message} for r in report.skipped()],
            "iut": report.environment.get("iut"), "iut_certificate": iut_certificate,
            "shard": list(report.shard) if report.shard is not None else None,
            "areas_required": list(report.areas),
        },
        "requirements": report.requirements.describe() if report.requirements is not None else None,
        "declaration": report.declaration.describe() if report.declaration is not None else None,
        "reproduce": reproduce_recipe(report, role=run_role, target=target, selectors=selectors or report.selectors,
                                      excluded=excluded, mutant=mutant, expected_failures=expected_failures),
        "environment": {**report.environment, "python": sys.version.split()[0], "platform": platform.platform()},
        "counts": dict(sorted(report.counts().items())),
        "areas": areas(report),
        "results": [result_record(result) for result in report.results],
    }
    if catalogue is not None:
        from sdcp_conformance.report.coverage import coverage_json, coverage_rows

        document["coverage"] = coverage_json(coverage_rows(catalogue), report.results)
    return document


def reproduce_recipe(report: RunReport, *, role: str, target: str | None, selectors: Sequence[str],
                     excluded: Sequence[str], mutant: str | None, expected_failures: str | None) -> dict[str, Any]:
    """How someone else runs this certification again: the harness to install (this version), then the command
    with every input that decides the verdicts — target and declaration files, seed, requirement set, selection."""
    from sdcp_conformance import __version__

    words = ["sdcp-conformance", "certify"]
    if target:
        words += ["--target", "target.toml"]
    else:
        words += ["--role", role] + (["--mutant", mutant] if mutant else [])
    if report.declaration is not None:
        words += ["--declaration", "declaration.toml"]
    if report.requirements is not None:
        words += ["--requirements", report.requirements.name]
    words += ["--seed", str(report.seed)]
    for selector in selectors:
        words += ["--only", selector]
    for selector in excluded:
        words += ["--exclude", selector]
    if report.strict:
        words.append("--strict")
    if expected_failures:
        words += ["--expected-failures", "expected-failures.toml"]
    extras = "" if target else "[reference]"
    files = [name for name, given in (("target.toml", target), ("declaration.toml", report.declaration),
                                      ("expected-failures.toml", expected_failures)) if given]
    return {"install": f"pip install 'sdcp-conformance{extras}=={__version__}'", "certify": shlex.join(words),
            "files": files}


def split_evidence(document: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, list[Any]]]:
    """(the compact document, the evidence moved out of it by ``ID#run``), D-RPT-2 and the inline budget."""
    compact = dict(document)
    moved: dict[str, list[Any]] = {}
    results = []
    kept_of = _inline_tails(document["results"])
    for index, record in enumerate(document["results"]):
        evidence = record.get("evidence")
        if evidence and record["verdict"] in EXTERNAL_EVIDENCE:
            record = dict(record)
            moved[record["key"]] = record.pop("evidence")
            record["evidence_file"], record["evidence_entries"] = EVIDENCE_NAME, len(moved[record["key"]])
        elif evidence:
            kept = kept_of[index]
            if len(kept) < len(evidence):
                record = dict(record)
                moved[record["key"]] = list(evidence)
                record["evidence"] = kept
                record["evidence_file"], record["evidence_entries"] = EVIDENCE_NAME, len(evidence)
                record["evidence_inline"] = len(kept)
        results.append(record)
    compact["results"] = results
    for longest in LONG_TEXTS:
        if _size(compact) <= JSON_LIMIT:
            break
        compact["results"] = _cut_texts(compact["results"], moved, longest)
    return compact, moved


def _inline_tails(results: Sequence[Mapping[str, Any]]) -> dict[int, list[Any]]:
    """What each flagged case keeps inline: the shortest transcripts first, each at most its fair share of what
    is left of :data:`INLINE_EVIDENCE_TOTAL` (and :data:`INLINE_EVIDENCE_BYTES`), so a few long statistical
    transcripts never crowd out the short ones a reader reads whole."""
    flagged = [(index, record["evidence"]) for index, record in enumerate(results)
               if record.get("evidence") and record["verdict"] not in EXTERNAL_EVIDENCE]
    flagged.sort(key=lambda item: _size(item[1]))
    left = INLINE_EVIDENCE_TOTAL
    kept: dict[int, list[Any]] = {}
    for position, (index, evidence) in enumerate(flagged):
        kept[index] = _tail_within(evidence, min(INLINE_EVIDENCE_BYTES, left // (len(flagged) - position)))
        left -= _size(kept[index])
    return kept


def _tail_within(evidence: Sequence[Any], limit: int) -> list[Any]:
    """The last entries of ``evidence`` whose JSON fits ``limit`` bytes (none when even the last does not)."""
    kept: list[Any] = []
    used = 0
    for entry in reversed(evidence):
        used += _size(entry) + 2
        if used > limit:
            break
        kept.append(entry)
    return kept[::-1]


def _cut_texts(results: list[dict[str, Any]], moved: dict[str, list[Any]], longest: int) -> list[dict[str, Any]]:
    """The last resort for a run failing in very many ways: no inline evidence at all (every transcript is in the
    evidence file), at most :data:`MANY` notes and findings, and every long text cut to ``longest`` characters,
    saying so (the HTML page has them whole)."""
    cut = []
    for record in results:
        record = dict(record)
        if record.get("evidence"):
            moved.setdefault(record["key"], list(record["evidence"]))
            record["evidence_file"], record["evidence_entries"] = EVIDENCE_NAME, len(moved[record["key"]])
            record["evidence"], record["evidence_inline"] = [], 0
        record["message"] = _cut(record.get("message"), longest)
        notes = [_cut(note, longest) for note in record.get("notes") or []]
        if len(notes) > MANY:
            notes = [*notes[:MANY], f"… and {len(notes) - MANY} more notes in report.html"]
        record["notes"] = notes
        findings = record.get("findings") or []
        record["findings"] = [{**finding, **{key: _cut(finding.get(key), longest) for key in ("message", "actual",
                                                                                           "sentence")}}
                              for finding in _worst_first(findings, MANY)]
        if len(findings) > MANY:
            record["findings_cut"] = len(findings) - MANY
        for key in ("quote", "actual", "black_box_note"):
            if key in record:
                record[key] = _cut(record[key], longest)
        if record.get("expected"):
            record["expected"] = [_cut(text, longest) for text in record["expected"]]
        cut.append(record)
    return cut


def _worst_first(findings: Sequence[Mapping[str, Any]], count: int) -> list[Mapping[str, Any]]:
    """The ``count`` findings a cut record keeps, in their order: the scored ones of the worst severity first, so
    that the case's verdict still follows from the findings it keeps (``bundle verify`` recomputes it)."""
    rank = {verdict.value: index for index, verdict in enumerate(SEVERITY_ORDER)}
    order = sorted(range(len(findings)), key=lambda i: (bool(findings[i].get("unscored")),
                                                        rank.get(str(findings[i].get("severity")), len(rank)), i))
    kept = sorted(order[:count])
    return [findings[i] for i in kept]


def _cut(text: Any, longest: int) -> Any:
    if not isinstance(text, str) or len(text) <= longest:
        return text
    return text[:longest] + f"… (cut: {len(text) - longest} more characters; report.html has them all)"


def write_json(path: Path, document: Mapping[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def write_evidence(path: Path, evidence: Mapping[str, list[Any]]) -> Path:
    """The moved transcripts, gzip-compressed JSON (mtime 0, so equal evidence gives equal bytes)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = json.dumps(evidence, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    # Level 6, not gzip's default 9: 40% less time for 4% more bytes on a certification's 20 MB of transcripts.
    with path.open("wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0,
                                               compresslevel=6) as packed:
        packed.write(data)
    return path


def write_document(folder: Path, document: Mapping[str, Any]) -> list[Path]:
    """``report.json`` (compact) and, when any evidence moved, ``evidence.json.gz``."""
    compact, moved = split_evidence(document)
    paths = [write_json(folder / JSON_NAME, compact)]
    if moved:
        paths.append(write_evidence(folder / EVIDENCE_NAME, moved))
    return paths


def report_path(where: Path) -> Path:
    """``where/report.json`` for a folder, ``where`` for a file."""
    return where / JSON_NAME if where.is_dir() else where


def load_document(where: Path, *, with_evidence: bool = False) -> dict[str, Any]:
    """Read a report (a run folder or its report.json); every problem is one :class:`InvalidArgument` line."""
    path = report_path(where)
    try:
        document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InvalidArgument(f"{where}: no {JSON_NAME} here (a folder `certify --report-dir` wrote?)") from None
    except (OSError, ValueError) as exc:
        raise InvalidArgument(f"{path}: not a readable report: {exc}") from exc
    if not isinstance(document, dict) or document.get("format") not in READABLE_FORMATS:
        raise InvalidArgument(f"{path}: not an sdcp-conformance report (format {document.get('format')!r})"
                              if isinstance(document, dict) else f"{path}: not an sdcp-conformance report")
    if with_evidence:
        evidence = path.parent / EVIDENCE_NAME
        moved: dict[str, list[Any]] = {}
        if evidence.is_file():
            try:
                moved = json.loads(gzip.decompress(evidence.read_bytes()))
            except (OSError, ValueError) as exc:
                raise InvalidArgument(f"{evidence}: unreadable evidence file: {exc}") from exc
        for record in document["results"]:
            whole = moved.get(record.get("key", ""))
            if whole is not None:  # all of it, also where report.json kept only its last exchanges
                record["evidence"] = whole
            elif "evidence" not in record:
                record["evidence"] = []
    return document


__all__ = [
    "EVIDENCE_NAME",
    "EXTERNAL_EVIDENCE",
    "FORMAT",
    "INLINE_EVIDENCE_BYTES",
    "INLINE_EVIDENCE_TOTAL",
    "JSON_LIMIT",
    "JSON_NAME",
    "READABLE_FORMATS",
    "STATUS_INTERRUPTED",
    "areas",
    "case_anchor",
    "grouped",
    "iso_time",
    "load_document",
    "report_document",
    "report_path",
    "reproduce_recipe",
    "result_record",
    "split_evidence",
    "write_document",
    "write_evidence",
    "write_json",
]
