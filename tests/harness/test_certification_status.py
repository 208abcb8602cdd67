"""P1-JUDGE-3: a certification passes only if it tested something; targets are checked before anything runs."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from sdcp_conformance.cli import main
from sdcp_conformance.cli.certify import EXIT_FAILED, EXIT_INCOMPLETE, EXIT_USAGE
from sdcp_conformance.harness.certify import certify
from sdcp_conformance.harness.role_spec import spec_of
from sdcp_conformance.harness.runner import RUN_INCOMPLETE, RUN_PASSED
from sdcp_conformance.judge import Verdict
from sdcp_conformance.mutants import get_mutant

SANITY = "VER-SANITY-001"


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


def _target(tmp_path: Path, text_change: tuple[str, str] | None = None, extra: str = "") -> Path:
    _, path = spec_of("verifier").write_target(tmp_path / "pki")
    text = path.read_text(encoding="utf-8")
    if text_change is not None:
        assert text_change[0] in text
        text = text.replace(*text_change)
    path.write_text(text + extra, encoding="utf-8")
    return path


@pytest.mark.parametrize(("change", "extra", "says"), [
    (('models = ["bigram", "ctx"]', 'models = ["nosuch"]'), "", "unknown model 'nosuch' (known: bigram,"),
    (('models = ["bigram", "ctx"]', 'models = ["bigram-draft-near"]'), "", "is not a target model"),
    (('models = ["bigram", "ctx"]', 'models = ["ctx"]'), "", "the suite needs the model(s) bigram"),
    (('models = ["bigram", "ctx"]', 'models = ["ctx"]'), "", "every case needs bigram"),
    (('models = ["bigram", "ctx"]', 'models = ["bigram"]'), "", "the suite needs the model(s) ctx"),
    (('models = ["bigram", "ctx"]', 'models = ["bigram"]'), "", "--exclude VER-6.1-SESSION-002"),
    (None, "colour = \"blue\"\n", "[harness] has unknown key(s) ['colour']"),
    (('role = "verifier"', 'role = "verifier"\nmodle = "bigram"'), "", "[target] has unknown key(s) ['modle']"),
    (None, "[extras]\n", "unknown table(s) ['extras']"),
    (('role = "verifier"', 'role = "verifier"\nload = "pinned"'), "", 'load = "pinned" needs pinned_load'),
])
def test_unusable_targets_are_one_line_usage_errors(tmp_path: Path, change: tuple[str, str] | None, extra: str,
                                                     says: str) -> None:
    code, output = _invoke("certify", "--target", str(_target(tmp_path, change, extra)), "--report-dir",
                           str(tmp_path / "r"))
    assert code == EXIT_USAGE, output
    assert says in output and "Traceback" not in output
    assert not (tmp_path / "r").exists(), "nothing ran"


def test_a_target_lacking_ctx_may_still_run_cases_that_need_only_bigram(tmp_path: Path) -> None:
    from sdcp_conformance.harness.certify import default_catalogue, needed_models

    catalogue = default_catalogue()
    assert needed_models(catalogue, catalogue.select(["fencing"])) == {"bigram"}
    assert needed_models(catalogue, catalogue.select(["VER-6.1-SESSION-002"])) == {"bigram", "ctx"}


def test_leaving_out_the_cases_a_refusal_names_makes_the_target_acceptable(tmp_path: Path) -> None:
    """A verifier that serves only ``bigram`` is told which cases to leave out, and with them left out it runs."""
    from sdcp_conformance.errors import InvalidArgument
    from sdcp_conformance.harness.certify import cases_needing, default_catalogue
    from sdcp_conformance.harness.target import load_target, require_models

    target = load_target(_target(tmp_path, ('models = ["bigram", "ctx"]', 'models = ["bigram"]')))
    catalogue = default_catalogue()
    selected = catalogue.select([])
    with pytest.raises(InvalidArgument) as refused:
        require_models(target, cases_needing(catalogue, selected))
    named = set(re.findall(r"--exclude (\S+)", str(refused.value)))
    assert "VER-6.1-SESSION-002" in named and len(named) < len(selected) / 10
    kept = [case for case in selected if case.id not in named]
    require_models(target, cases_needing(catalogue, kept))
    assert all(not any(need == "model:ctx" for need in case.requires) for case in kept)


def test_a_run_whose_cases_were_all_skipped_is_incomplete(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ESC-009 needs an IUT whose load the harness controls; against any other every selected case skips."""
    from sdcp_conformance.harness.specs.verifier import VerifierEnvironment

    original = VerifierEnvironment.capabilities
    monkeypatch.setattr(VerifierEnvironment, "capabilities", lambda self: original(self) - {"load:control"})
    report = asyncio.run(certify(selectors=["VER-6.5-ESC-009"], seed=3, workdir=tmp_path))
    status, reasons = report.status, report.incomplete_reasons()
    skipped = [(r.case.id, r.message) for r in report.skipped()]
    assert status == RUN_INCOMPLETE
    assert any("no case ran in the area(s) escalation" in reason for reason in reasons)
    [(case, reason)] = skipped
    assert case == "VER-6.5-ESC-009" and reason.startswith("the target lacks load:control")
    assert "[target] load_hook" in reason and "load_command" in reason  # the keys that would let it run


def test_a_failed_sanity_case_makes_the_run_incomplete_and_still_runs_the_transport_checks() -> None:
    mutant = get_mutant("digest-little-endian")  # every digest wrong: the sanity round fails
    report = asyncio.run(certify(selectors=["transport", "fencing"], seed=2, app_factory=mutant.factory))
    by_run = {(r.case.id, r.run): r for r in report.results}
    assert by_run[(SANITY, "sanity-first")].verdict is Verdict.FAILED
    transport = [r for r in report.results if r.case.area == "transport" and r.case.standalone]
    assert transport and all(r.verdict is not Verdict.SKIPPED for r in transport)
    fencing = [r for r in report.results if r.case.area == "fencing"]
    assert fencing and all(r.verdict is Verdict.SKIPPED and "sanity case failed" in r.message for r in fencing)
    assert report.status == RUN_INCOMPLETE and report.exit_code == EXIT_INCOMPLETE
    assert any("sanity case VER-SANITY-001 (sanity-first) is FAILED" in reason
               for reason in report.incomplete_reasons())
    assert any("fencing" in reason for reason in report.incomplete_reasons())


def test_the_cli_exits_incomplete_and_lists_skipped_cases(tmp_path: Path) -> None:
    code, output = _invoke("certify", "--mutant", "digest-little-endian", "--only", "fencing", "--seed", "1",
                           "--report-dir", str(tmp_path))
    assert code == EXIT_INCOMPLETE, output
    assert "certification INCOMPLETE" in output and "Skipped cases" in output
    assert "VER-6.3-FENCING-001" in output and "not run: the sanity case failed first" in output


def test_a_passing_partial_run_says_it_is_partial(tmp_path: Path) -> None:
    code, output = _invoke("certify", "--only", "fencing", "--seed", "4", "--report-dir", str(tmp_path))
    assert code == 0, output
    assert "certification PASSED (partial: only fencing)" in output


def test_strict_fails_a_run_with_a_non_strict_case() -> None:
    mutant = get_mutant("stale-base-without-state")  # POLICY-002's 409 lacks the state: NON-STRICT there
    report = asyncio.run(certify(selectors=["VER-6.6-POLICY-002"], seed=1, app_factory=mutant.factory))
    assert [r.verdict for r in report.results if r.run == "main"] == [Verdict.NON_STRICT]
    assert report.status == RUN_PASSED
    strict = asyncio.run(certify(selectors=["VER-6.6-POLICY-002"], seed=1, app_factory=mutant.factory, strict=True))
    assert strict.failed and strict.exit_code == EXIT_FAILED
