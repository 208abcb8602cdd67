"""``report merge``: the reports of ``certify --shard K/N`` runs joined into the report of the whole certification.

Each shard ran whole cases (and the sanity case first and last), so the
merged run is every shard's results side by side; its verdict is judged
again over all of them, as the unsharded run would be: FAILED if any case
failed, INCOMPLETE if any shard's sanity case did not pass or an area of the
selection ran no case in any shard. The shards must belong together, or the
merge refuses with one line saying why: the same harness build (source
hash), role, target, mutant, seed, strictness and selection, N the same,
every K from 1 to N exactly once, no case in two shards, and together every
case of the selection. The sanity runs of shard K > 1 keep their own run
names (``sanity-first-shard2``), so every run has its own key.

The merged report is written with the same writers as a single run's
(``report.json`` + evidence, ``junit.xml``, ``report.html``), and the
coverage table is recomputed over all results, so the suite's catalogue is
loaded (and with it torch) — the one ``report`` command that does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.judge import Finding, Verdict

AGREEING = ("role", "target", "mutant", "seed", "strict", "selectors", "excluded", "expected_failures")
"""Run fields every shard of one certification shares."""


def _shard_of(document: Mapping[str, Any], where: Path) -> tuple[int, int]:
    shard = document["run"].get("shard")
    if not (isinstance(shard, list) and len(shard) == 2 and all(isinstance(v, int) for v in shard)):
        raise InvalidArgument(f"{where}: not the report of a sharded run (certify --shard K/N wrote none)")
    return shard[0], shard[1]


def check_shards(documents: Sequence[tuple[Path, Mapping[str, Any]]]) -> int:
    """That the documents are the N shards of one certification; returns N."""
    if not documents:
        raise InvalidArgument("report merge needs the report folders of the shards")
    first_path, first = documents[0]
    seen: dict[int, Path] = {}
    count = _shard_of(first, first_path)[1]
    for path, document in documents:
        index, total = _shard_of(document, path)
        if total != count:
            raise InvalidArgument(f"{path}: shard {index}/{total}, but {first_path} is one of {count}")
        if index in seen:
            raise InvalidArgument(f"{path}: shard {index}/{total} again (also {seen[index]})")
        seen[index] = path
        for key in ("requirements", "declaration"):
            if document.get(key) != first.get(key):
                raise InvalidArgument(f"{path}: its {key} differ from {first_path}'s: not shards of one certification")
        if document.get("tool") != first.get("tool"):
            raise InvalidArgument(f"{path}: written by another harness build ({document.get('tool')}) than "
                                  f"{first_path} ({first.get('tool')})")
        for key in AGREEING:
            if document["run"].get(key) != first["run"].get(key):
                raise InvalidArgument(f"{path}: run {key} {document['run'].get(key)!r} differs from "
                                      f"{first_path}'s {first['run'].get(key)!r}: not shards of one certification")
        if document["run"].get("interrupted"):
            raise InvalidArgument(f"{path}: shard {index}/{total} was interrupted; run it again")
    missing = [str(k) for k in range(1, count + 1) if k not in seen]
    if missing:
        raise InvalidArgument(f"shard(s) {', '.join(missing)} of {count} missing: every shard's folder is needed")
    return count


def _finding(record: Mapping[str, Any]) -> Finding:
    return Finding(str(record["row"]), Verdict(record["severity"]), str(record["message"]),
                   tuple(record.get("expected", ())), str(record.get("actual", "")), str(record.get("source", "")),
                   tuple(record.get("evidence", ())), str(record.get("judged_at", "")),
                   str(record.get("unscored", "")))


def _entry(record: Mapping[str, Any]) -> Any:
    from sdcp_conformance.harness.transcript import Entry

    return Entry(int(record["sequence"]), str(record["direction"]), str(record["party"]), str(record["method"]),
                 str(record["target"]), str(record.get("request_body", "")), record.get("status"),
                 str(record.get("response_body", "")), str(record.get("note", "")))


def _result(record: Mapping[str, Any], cases: Mapping[str, Any], index: int, where: Path) -> Any:
    from sdcp_conformance.harness.runner import CaseResult

    case = cases.get(record["id"])
    if case is None:
        raise InvalidArgument(f"{where}: case {record['id']} is not in this harness's {record.get('role')} suite")
    run = str(record["run"])
    if run.startswith("sanity") and index > 1:
        run = f"{run}-shard{index}"
    return CaseResult(case, Verdict(record["verdict"]), str(record.get("message", "")),
                      list(record.get("expected", ())), str(record.get("actual", "")),
                      float(record.get("duration_s", 0.0)), [_entry(e) for e in record.get("evidence", ())],
                      list(record.get("notes", ())), record.get("expected_failure"), run,
                      [_finding(f) for f in record.get("findings", ())], dict(record.get("attachments", {})),
                      completed=bool(record.get("completed", False)))


def merge_documents(documents: Sequence[tuple[Path, Mapping[str, Any]]]) -> tuple[Any, Any, dict[str, Any]]:
    """(the merged RunReport, the catalogue, the first shard's run section) of the shards' documents."""
    import datetime as dt

    from sdcp_conformance.harness.certify import default_catalogue
    from sdcp_conformance.harness.runner import RunReport

    count = check_shards(documents)
    ordered = sorted(documents, key=lambda item: _shard_of(item[1], item[0])[0])
    first = ordered[0][1]["run"]
    catalogue = default_catalogue(str(first["role"]))
    results: list[Any] = []
    owner: dict[str, Path] = {}
    for path, document in ordered:
        index = _shard_of(document, path)[0]
        for record in document["results"]:
            if not str(record["run"]).startswith("sanity"):
                if record["id"] in owner:
                    raise InvalidArgument(f"{path}: case {record['id']} also ran in {owner[record['id']]}")
                owner[record["id"]] = path
            results.append(_result(record, catalogue.cases, index, path))
    try:
        selection = catalogue.select(first.get("selectors") or (), first.get("excluded") or ())
    except InvalidArgument as exc:
        raise InvalidArgument(f"the shards' selection no longer matches this harness's suite: {exc}") from exc
    expected = {case.id for case in selection if case.id != catalogue.sanity_id}
    absent = sorted(expected - set(owner))
    if absent:
        raise InvalidArgument(f"the shards together did not run {len(absent)} selected case(s), e.g. "
                              f"{', '.join(absent[:3])}: were they cut with another durations.json?")

    def stamp(text: str) -> float:
        return dt.datetime.fromisoformat(text).timestamp()

    environment = dict(ordered[0][1]["environment"])
    for key in ("python", "platform"):
        environment.pop(key, None)
    environment["shards"] = count
    report = RunReport(int(first["seed"]), results, min(stamp(d["run"]["started"]) for _, d in ordered),
                       max(stamp(d["run"]["finished"]) for _, d in ordered), environment,
                       areas=tuple(dict.fromkeys(case.area for case in selection)), strict=bool(first["strict"]),
                       selectors=tuple(first.get("selectors") or ()), **_terms(ordered[0][1]))
    return report, catalogue, first


def _terms(document: Mapping[str, Any]) -> dict[str, Any]:
    """The requirement set and declaration a shard ran under (every shard the same, :func:`check_shards`)."""
    from sdcp_conformance.judge.declaration import parse_declaration
    from sdcp_conformance.judge.requirement_sets import load_set

    named, declared = document.get("requirements"), document.get("declaration")
    return {"requirements": load_set(str(named["name"])) if named else None,
            "declaration": parse_declaration(str(declared["text"]).encode(), "the shards' declaration")
            if declared else None}


def merge_reports(folders: Sequence[Path], out: Path) -> tuple[dict[str, Any], list[Path], Any]:
    """Merge the shard reports in ``folders`` into ``out``; returns (document, paths written, merged report)."""
    from sdcp_conformance.report import write_run
    from sdcp_conformance.report.json_report import load_document

    documents = [(folder, load_document(folder, with_evidence=True)) for folder in folders]
    report, catalogue, run = merge_documents(documents)
    certificates = {d["run"].get("iut_certificate") for _, d in documents} - {None}
    document, written = write_run(
        report, out, command=["report", "merge", *map(str, folders)], target=run.get("target"),
        selectors=run.get("selectors") or (), catalogue=catalogue, excluded=run.get("excluded") or (),
        role=run.get("role"), mutant=run.get("mutant"), expected_failures=run.get("expected_failures"),
        iut_certificate=certificates.pop() if len(certificates) == 1 else None)
    return document, written, report


__all__ = ["AGREEING", "check_shards", "merge_documents", "merge_reports"]
