"""`sdcp-conformance certify` in-process against the embedded reference: exit codes, reports, usage errors."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from sdcp_conformance.cli import main
from sdcp_conformance.cli.certify import EXIT_FAILED, EXIT_USAGE
from sdcp_conformance.harness.role_spec import spec_of
from sdcp_conformance.harness.target import load_target

SANITY = "VER-SANITY-001"


def _certify(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["certify", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


def test_certify_embedded_selection_passes_and_writes_reports(tmp_path: Path) -> None:
    code, output = _certify("--only", SANITY, "--seed", "5", "--report-dir", str(tmp_path))
    assert code == 0, output
    assert "seed 5" in output and "sdcp-conformance certify --seed 5 --only VER-SANITY-001" in output
    document = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert document["run"]["seed"] == 5 and document["counts"] == {"PASSED": 2}
    assert [r["run"] for r in document["results"]] == ["sanity-first", "sanity-last"]
    assert (tmp_path / "junit.xml").is_file()


def test_stale_expected_failure_is_xpass_and_fails_the_run(tmp_path: Path) -> None:
    listed = tmp_path / "expected.toml"
    listed.write_text(f'[[expected]]\nid = "{SANITY}"\ncontains = "x"\nreason = "tracked"\n', encoding="utf-8")
    code, output = _certify("--only", SANITY, "--seed", "1", "--report-dir", str(tmp_path / "r"),
                            "--expected-failures", str(listed))
    assert code == EXIT_FAILED, output
    assert "XPASS" in output
    results = json.loads((tmp_path / "r" / "report.json").read_text(encoding="utf-8"))["results"]
    assert {r["verdict"] for r in results} == {"XPASS"} and "remove it from the list" in results[0]["message"]


def test_unknown_selector_is_a_usage_error(tmp_path: Path) -> None:
    code, output = _certify("--only", "VER-NO-SUCH", "--report-dir", str(tmp_path))
    assert code == EXIT_USAGE and "no case matches" in output and "Traceback" not in output


def test_unknown_expected_failure_id_is_a_usage_error(tmp_path: Path) -> None:
    listed = tmp_path / "expected.toml"
    listed.write_text('[[expected]]\nid = "VER-9.9-NOPE-001"\nreason = "?"\n', encoding="utf-8")
    code, output = _certify("--only", SANITY, "--expected-failures", str(listed))
    assert code == EXIT_USAGE and "VER-9.9-NOPE-001" in output


def test_bad_target_files_are_usage_errors(tmp_path: Path) -> None:
    broken = tmp_path / "broken.toml"
    broken.write_text("[target\n", encoding="utf-8")
    code, output = _certify("--target", str(broken))
    assert code == EXIT_USAGE and "cannot read the target file" in output
    incomplete = tmp_path / "incomplete.toml"
    incomplete.write_text('[target]\nrole = "verifier"\n', encoding="utf-8")
    code, output = _certify("--target", str(incomplete))
    assert code == EXIT_USAGE and "[harness]" in output
    code, output = _certify("--target", str(tmp_path / "missing.toml"))
    assert code == EXIT_USAGE and "does not exist" in output


def test_target_without_its_pki_is_a_usage_error(tmp_path: Path) -> None:
    _, target = spec_of("verifier").write_target(tmp_path / "pki")
    moved = tmp_path / "elsewhere.toml"
    moved.write_text(target.read_text(encoding="utf-8"), encoding="utf-8")
    code, output = _certify("--target", str(moved))
    assert code == EXIT_USAGE and "pki init" in output


def test_written_target_reads_back(tmp_path: Path) -> None:
    pki, path = spec_of("verifier").write_target(tmp_path, {"verifier": "https://127.0.0.1:9443/verifier/"})
    config = load_target(path)
    assert config.base_uri == "https://127.0.0.1:9443/verifier/"
    assert config.router == pki.base_uris["router"] and config.cache == pki.base_uris["cache"]
    assert config.drafters == (pki.base_uris["drafter-1"], pki.base_uris["drafter-2"])
    assert config.ca == pki.ca_cert.resolve() and config.pki == tmp_path.resolve()
    assert config.models == ("bigram", "ctx")


def test_iut_parties_are_distinct_loopback_ports() -> None:
    parties = spec_of("verifier").parties()
    assert set(parties) == {"verifier", "router", "cache", "drafter-1", "drafter-2"}
    assert len(set(parties.values())) == 5 and all(uri.startswith("https://127.0.0.1:") for uri in parties.values())


def test_pki_init_iut_prints_the_reference_command(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["pki", "init", str(tmp_path / "p"), "--iut", "verifier"])
    assert result.exit_code == 0, result.output
    assert f"sdcp-conformance serve verifier --pki {tmp_path / 'p'} --party verifier --router https://" in result.output
    assert "--model bigram --model ctx" in result.output and "ca.pem" in result.output
    assert (tmp_path / "p" / "target.toml").is_file()


def test_pki_init_without_iut_keeps_its_behaviour(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["pki", "init", str(tmp_path / "p")])
    assert result.exit_code == 0, result.output
    assert "harness: identity https://127.0.0.1:8440/harness/" in result.output
    assert not (tmp_path / "p" / "target.toml").exists()
