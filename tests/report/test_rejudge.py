"""``bundle verify`` recomputes every verdict: a bundle re-signed with the right key after an edit is REJECTED.

The bundles are made from a real certification of the embedded reference (two cases, a declaration, the vendor's
key), then edited the way a forger would — the verdict in report.json changed, everything signed again with the
harness's own key — so only the re-judging can tell.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from sdcp_conformance.harness.certify import certify
from sdcp_conformance.judge.requirement_sets import load_set, newest_name
from sdcp_conformance.report import write_run
from sdcp_conformance.report.bundle import BundleRejected, generate_key, verify_bundle, write_bundle
from sdcp_conformance.report.rejudge import rejudge
from tests.harness.test_declaration import OTHER_CASE, RULE2_CASE, RUN_TIMEOUT_S, _declaration

OLD_SET = "draft-sdcp-00+P1-2026-12-05"


def _bundle(tmp_path: Path, *, requirements: str | None = None, vendor: bool = True) -> tuple[Path, Path, Path]:
    """(bundle, run folder, harness key) of a certification of the reference with a declaration."""
    declaration = _declaration("rule2", "seeded_rule2")
    report = asyncio.run(asyncio.wait_for(certify(
        None, selectors=(RULE2_CASE, OTHER_CASE), seed=7, workdir=tmp_path, declaration=declaration,
        requirements=load_set(requirements)), RUN_TIMEOUT_S))
    folder = tmp_path / "run"
    document, _ = write_run(report, folder, command=["sdcp-conformance", "certify"], role="verifier")
    keys = tmp_path / "keys"
    keys.mkdir()
    harness_key, _ = generate_key(keys)
    vendor_dir = tmp_path / "vendor"
    vendor_dir.mkdir()
    vendor_key, _ = generate_key(vendor_dir)
    declared = tmp_path / "declaration.toml"
    declared.write_bytes(declaration.data)
    bundle = tmp_path / "bundle.zip"
    write_bundle(bundle, folder, document, key=harness_key, declaration_file=declared,
                 vendor_key=vendor_key if vendor else None)
    return bundle, folder, harness_key


def _resign(bundle: Path, folder: Path, key: Path, edit: Any) -> None:
    """Edit report.json in ``folder`` and sign the whole bundle again with the harness's key."""
    document = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    edit(document)
    (folder / "report.json").write_text(json.dumps(document), encoding="utf-8")
    with zipfile.ZipFile(bundle) as archive:
        declaration = archive.read("declaration.toml")
    declared = folder.parent / "declaration-again.toml"
    declared.write_bytes(declaration)
    write_bundle(bundle, folder, document, key=key, declaration_file=declared)


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    return _bundle(tmp_path_factory.mktemp("rejudge"))


def test_an_untouched_bundle_is_rejudged_and_accepted(made: tuple[Path, Path, Path]) -> None:
    verified = verify_bundle(made[0])
    assert verified.rejudged is not None and verified.rejudged.status == "PASSED"
    assert verified.rejudged.requirements == newest_name() and verified.rejudged.stale == []
    assert verified.rejudged.declaration is not None and "rule2" in verified.rejudged.declaration.claims
    assert verified.vendor_keyid is not None


def _copy(made: tuple[Path, Path, Path], tmp_path: Path) -> tuple[Path, Path, Path]:
    import shutil

    bundle, folder, key = made
    shutil.copy(bundle, tmp_path / "bundle.zip")
    shutil.copytree(folder, tmp_path / "run")
    return tmp_path / "bundle.zip", tmp_path / "run", key


def test_a_case_verdict_edited_and_resigned_is_rejected_naming_the_case(made: tuple[Path, Path, Path],
                                                                         tmp_path: Path) -> None:
    bundle, folder, key = _copy(made, tmp_path)

    def fail_one(document: dict[str, Any]) -> None:
        record = next(r for r in document["results"] if r["id"] == OTHER_CASE)
        record["verdict"] = "FAILED"
        document["counts"] = {"FAILED": 1, **{k: v for k, v in document["counts"].items()}}

    _resign(bundle, folder, key, fail_one)
    with pytest.raises(BundleRejected, match=f"REJECTED although every signature verifies: case {OTHER_CASE}"):
        verify_bundle(bundle)


def test_a_run_verdict_edited_and_resigned_is_rejected(made: tuple[Path, Path, Path], tmp_path: Path) -> None:
    bundle, folder, key = _copy(made, tmp_path)

    def fail_run(document: dict[str, Any]) -> None:
        document["run"]["status"] = "FAILED"

    _resign(bundle, folder, key, fail_run)
    with pytest.raises(BundleRejected, match=r"the run's verdict: report\.json says FAILED, its case verdicts give"):
        verify_bundle(bundle)


def test_a_junit_that_disagrees_with_the_report_is_rejected(made: tuple[Path, Path, Path], tmp_path: Path) -> None:
    bundle, folder, key = _copy(made, tmp_path)
    junit = (folder / "junit.xml").read_text(encoding="utf-8")
    marker = f'name="{OTHER_CASE}" time='
    assert marker in junit
    start = junit.index(marker)
    close = junit.index(">", start)
    (folder / "junit.xml").write_text(junit[:close + 1] + '<failure message="x" type="FAILED">x</failure>'
                                      + junit[close + 1:], encoding="utf-8")
    _resign(bundle, folder, key, lambda document: None)
    with pytest.raises(BundleRejected, match=f"case {OTHER_CASE} \\(main\\): junit.xml says failure:FAILED"):
        verify_bundle(bundle)


def test_a_bundle_against_a_superseded_set_or_too_old_is_stale(tmp_path: Path, made: tuple[Path, Path, Path]) -> None:
    old, _, _ = _bundle(tmp_path, requirements=OLD_SET, vendor=False)
    verified = verify_bundle(old)
    assert verified.rejudged is not None and verified.vendor_keyid is None
    assert any(f"{OLD_SET} is superseded by {newest_name()}" in why for why in verified.rejudged.stale)
    with zipfile.ZipFile(made[0]) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    assert rejudge(members).stale == []
    later = dt.date.today() + dt.timedelta(days=400)
    assert any("older than 365 days" in why for why in rejudge(members, today=later).stale)


def test_the_report_leads_with_the_recipe_that_reproduces_the_run(made: tuple[Path, Path, Path]) -> None:
    _, folder, _ = made
    document = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    recipe = document["reproduce"]
    assert recipe["install"].startswith("pip install 'sdcp-conformance[reference]==")
    for words in ("--declaration declaration.toml", f"--requirements {newest_name()}", "--seed 7",
                  f"--only {RULE2_CASE}", f"--only {OTHER_CASE}"):
        assert words in recipe["certify"], words
    assert recipe["files"] == ["declaration.toml"]
    page = (folder / "report.html").read_text(encoding="utf-8")
    assert page.index("Reproduce this run") < page.index('id="metadata"') < page.index('id="results"')
    assert recipe["certify"].replace("'", "&#39;") in page or recipe["certify"] in page
