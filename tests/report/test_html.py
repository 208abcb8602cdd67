"""The HTML report, loaded in headless Chromium: counts, a failed case's sentence, plots, filters, no errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sdcp_conformance.harness.certify import default_catalogue
from sdcp_conformance.suites.verifier import CATALOGUE as VERIFIER_CATALOGUE
from tests.report.chromium import open_page
from tests.report.conftest import MUTANT_AREA, Run
from tests.system_binaries import require_program

STAT_CASES = [case_id for case_id in VERIFIER_CATALOGUE.cases if "-RULE2-STAT-" in case_id]


@pytest.fixture(autouse=True)
def chromium() -> None:
    """Every test here drives headless Chromium: without it each fails with the package to install."""
    require_program("chromium")


def _document(run: Run) -> dict:
    return json.loads((run.folder / "report.json").read_text(encoding="utf-8"))


def test_the_console_error_check_itself_catches_a_broken_script(tmp_path: Path) -> None:
    page_file = tmp_path / "broken.html"
    page_file.write_text("<!doctype html><title>x</title><script>window.onload = function () { nosuch(); };"
                         "</script><script>console.error('seen')</script>", encoding="utf-8")
    with open_page(page_file) as page:
        page.drain()
        assert any("nosuch" in error for error in page.errors), page.errors
        assert any("seen" in error for error in page.errors), page.errors


def test_full_run_page_shows_counts_metadata_plots_and_coverage_without_errors(full_run: Run) -> None:
    document = _document(full_run)
    with open_page(full_run.folder / "report.html") as page:
        assert page.evaluate("document.getElementById('run-status').textContent") == "PASSED"
        assert int(page.evaluate("document.getElementById('total').textContent")) == len(document["results"])
        counts = page.evaluate("Object.fromEntries([...document.querySelectorAll('#counts [data-verdict]')]"
                               ".map(e => [e.dataset.verdict, +e.querySelector('.count').textContent]))")
        assert counts == document["counts"]
        assert page.evaluate("document.querySelectorAll('article.case').length") == len(document["results"])
        assert page.evaluate("document.getElementById('seed').textContent") == str(document["run"]["seed"])
        assert page.evaluate("document.getElementById('source-hash').textContent") == \
            document["tool"]["source_sha256"]
        assert page.evaluate("document.getElementById('iut-certificate').textContent").startswith("sha256:")
        # every statistical case has its two plots, drawn as inline SVG
        stat_cases = {r["id"] for r in document["results"] if "rule2" in r.get("attachments", {})}
        assert len(stat_cases) == len(STAT_CASES)  # every statistical case of the catalogue
        plotted = page.evaluate("[...document.querySelectorAll('article.case')].filter(a => a.querySelectorAll("
                                "'figure[data-plot] svg').length === 2).map(a => a.dataset.id)")
        assert set(plotted) == stat_cases
        assert page.evaluate("document.querySelector('figure[data-plot$=evalue] svg').textContent"
                             ".includes('threshold')")
        # no label, tick label or title of a plot is cut off by its figure's edge (the margins are fixed)
        clipped = page.evaluate(
            "document.querySelectorAll('details').forEach(d => { d.open = true; });"
            "[...document.querySelectorAll('figure[data-plot] svg')].flatMap(svg => {"
            "  const box = svg.getBoundingClientRect();"
            "  return [...svg.querySelectorAll('text')].map(t => [t.textContent, t.getBoundingClientRect()])"
            "    .filter(([, r]) => r.left < box.left - 0.5 || r.right > box.right + 0.5 || r.top < box.top - 0.5"
            "      || r.bottom > box.bottom + 0.5).map(([text]) => svg.closest('figure').dataset.plot + ': ' + text);"
            "})")
        assert clipped == []
        # the coverage table has a row per requirement row of the role
        assert page.evaluate("document.querySelectorAll('#coverage tr').length") == len(document["coverage"]) + 1
        # filters: the area filter leaves only that area's cases
        page.evaluate("const s = document.getElementById('area-filter'); s.value = 'fencing';"
                      "s.dispatchEvent(new Event('change'))")
        fencing = sum(r["area"] == "fencing" for r in document["results"])
        assert page.evaluate("document.getElementById('shown-count').textContent") == \
            f"{fencing} of {len(document['results'])} shown"
        page.drain()
        assert page.errors == []


def test_failed_case_shows_its_sentence_findings_and_transcript_and_filters_by_verdict(mutant_run: Run) -> None:
    document = _document(mutant_run)
    failed = [r for r in document["results"] if r["verdict"] == "FAILED"]
    catalogue = default_catalogue("verifier")
    with open_page(mutant_run.folder / "report.html") as page:
        for record in failed:
            article = f"document.querySelector('article.case[data-id=\"{record['id']}\"]')"
            sentence = page.evaluate(f"{article}.querySelector('.sentence').textContent")
            assert sentence.strip("“”") == catalogue.cases[record["id"]].quote  # the case's own sentence
            assert page.evaluate(f"{article}.querySelector('details').open") is True  # failures are open
            rows = page.evaluate(f"[...{article}.querySelectorAll('.findings td.mono')].map(t => t.textContent)")
            assert any(finding["row"] in text for finding in record["findings"] for text in rows)
            transcript = page.evaluate(f"{article}.querySelector('details.transcript pre').textContent")
            assert "→" in transcript or "←" in transcript
        page.evaluate("document.querySelector('.verdict-filter[value=PASSED]').click()")
        shown = page.evaluate("[...document.querySelectorAll('article.case')].filter(a => !a.hidden)"
                              ".map(a => a.dataset.verdict)")
        assert shown and set(shown) == {"FAILED"} and len(shown) == len(failed)
        page.drain()
        assert page.errors == []
    assert {r["area"] for r in failed} == {MUTANT_AREA}


def test_page_fetches_nothing(full_run: Run) -> None:
    """Self-contained: a CSP forbids every fetch, and no element refers to anything outside the file."""
    with open_page(full_run.folder / "report.html") as page:
        external = page.evaluate("[...document.querySelectorAll('[src],[href]')].map(e => e.getAttribute('src') "
                                 "|| e.getAttribute('href')).filter(u => !u.startsWith('#'))")
        assert external == []
        assert "default-src 'none'" in page.evaluate(
            "document.querySelector('meta[http-equiv=Content-Security-Policy]').content")
        page_url = (full_run.folder / "report.html").resolve().as_uri()
        requests = [e["params"]["request"]["url"] for e in page.events
                    if e.get("method") == "Network.requestWillBeSent"]
        assert requests and all(url == page_url for url in requests)  # the page itself, nothing else


def test_report_html_rebuilds_the_page(full_run: Run, tmp_path: Path) -> None:
    from tests.report.conftest import cli

    output = tmp_path / "again.html"
    done = cli("report", "html", str(full_run.folder), "--output", str(output))
    assert done.returncode == 0, done.stderr
    original = (full_run.folder / "report.html").read_text(encoding="utf-8")
    assert output.read_text(encoding="utf-8") == original  # the same document gives the same page


# --------------------------------------------------------------------------- the first failure on the first screen

VIEWPORT = (1400, 900)


def _first_attention_in_view(page_file: Path) -> None:
    """At 1400×900 the first case that needs attention is on the first screen: its summary line lies within the
    viewport without scrolling, and the summary tables are collapsed (their rows would push it down)."""
    with open_page(page_file) as page:
        width, height = VIEWPORT
        page.send("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)
        assert page.evaluate("[innerWidth, innerHeight, scrollY]") == [width, height, 0]
        found = page.evaluate(
            "(() => { const a = document.querySelector('article.case.attention');"
            " const s = a.querySelector('summary').getBoundingClientRect();"
            " return {id: a.id, top: s.top, bottom: s.bottom,"
            " tables: document.getElementById('summary-tables').open,"
            " link: document.getElementById('first-attention').getAttribute('href')}; })()")
        assert found["top"] >= 0 and found["bottom"] <= height, found
        assert found["tables"] is False and found["link"] == f"#{found['id']}", found
        page.drain()
        assert page.errors == []


def test_the_first_failure_is_on_the_first_screen(mutant_run: Run) -> None:
    _first_attention_in_view(mutant_run.folder / "report.html")


def test_the_first_failure_of_a_full_run_is_on_the_first_screen(full_run: Run, tmp_path: Path) -> None:
    """A whole run's summary tables (the section table alone has about 40 rows) with one case failing in it."""
    from sdcp_conformance.report.html import write_html
    from sdcp_conformance.report.json_report import load_document

    document = load_document(full_run.folder, with_evidence=True)
    last = max(document["results"], key=lambda record: record["id"])
    last["verdict"] = "FAILED"
    document["counts"] = {**document["counts"], "PASSED": document["counts"]["PASSED"] - 1, "FAILED": 1}
    document["run"]["status"] = "FAILED"
    page_file = write_html(tmp_path / "report.html", document)
    assert len({record["section"] for record in document["results"]}) > 30
    _first_attention_in_view(page_file)
    # a passing run keeps its tables open: there is no failure to show first
    assert '<details id="summary-tables" open>' in (full_run.folder / "report.html").read_text(encoding="utf-8")
