"""Issue 41's rough edges, each as a vendor meets it: one line naming the fix, exit 2 (usage) or 1 (verdict).

Every misuse below goes through the real command line (a fresh interpreter, output captured as CI captures it)
and must print exactly one line on stderr, never a traceback.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import click
import pytest
from click.testing import CliRunner

from sdcp_conformance.cli import main, role_areas
from sdcp_conformance.cli.pki import DEFAULT_PARTIES, IUT_PARTY_NAMES, party_names
from sdcp_conformance.cli.seeds import SEED_MAX
from sdcp_conformance.report.bundle import ATTESTATION_NAME
from tests.report.conftest import cli

SANITY = "VER-SANITY-001"


def one_line(done: subprocess.CompletedProcess[str], code: int, *fragments: str) -> str:
    """The one line ``done`` printed on stderr (its exit status ``code``), holding every fragment."""
    said = done.stdout + done.stderr
    assert done.returncode == code, said
    assert "Traceback" not in said, said
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    missing = [fragment for fragment in fragments if fragment not in lines[0]]
    assert not missing, f"{missing} not in {lines[0]!r}"
    return lines[0]


# --------------------------------------------------------------------------- pki init


def test_pki_init_into_a_folder_that_cannot_be_created(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    one_line(cli("pki", "init", str(blocker / "pki")), 2, "cannot create the folder", str(blocker / "pki"))
    one_line(cli("pki", "init", str(blocker / "pki"), "--iut", "verifier"), 2, "cannot create the folder")
    one_line(cli("pki", "init", str(blocker)), 2, "is a file")


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root may write into any folder")
def test_pki_init_into_a_folder_without_permission(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    try:
        one_line(cli("pki", "init", str(locked / "pki")), 2, "cannot create the folder", "Permission denied")
    finally:
        locked.chmod(0o700)


def test_pki_init_where_permission_is_denied_even_to_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As root (CI containers) no folder refuses us: the refusal is simulated where the folder is made."""
    def refuse(self: Path, *args: Any, **kwargs: Any) -> None:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "mkdir", refuse)
    result = CliRunner().invoke(main, ["pki", "init", str(tmp_path / "locked" / "pki")])
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit | None)
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert lines == [f"Error: cannot create the folder {tmp_path / 'locked' / 'pki'}: Permission denied; choose a "
                     "folder you can write (every part of its path must be a folder)"], result.output


def test_pki_init_refuses_an_unknown_party_naming_the_valid_ones(tmp_path: Path) -> None:
    line = one_line(cli("pki", "init", str(tmp_path / "p"), "--party", "routerx=https://127.0.0.1:9/routerx/"), 2,
                    "no party 'routerx'", "did you mean 'router'?", ", ".join(party_names()))
    assert "--custom-parties" in line
    assert not (tmp_path / "p").exists()
    for role, names in IUT_PARTY_NAMES.items():
        one_line(cli("pki", "init", str(tmp_path / role), "--iut", role, "--party", "nobody=https://127.0.0.1:9/n/"),
                 2, "no party 'nobody'", f"{role} under test", ", ".join(names))
    one_line(cli("pki", "init", str(tmp_path / "q"), "--party", "router=http://127.0.0.1:9/router/"), 2,
             "must be https://")
    # the names are in --help
    helped = CliRunner().invoke(main, ["pki", "init", "--help"], terminal_width=400)
    flat = " ".join(helped.output.split())
    assert helped.exit_code == 0 and all(name in flat for name in party_names())
    assert all(", ".join(names) in flat for names in IUT_PARTY_NAMES.values())
    # a named party sets that party's URI; the others keep theirs
    made = cli("pki", "init", str(tmp_path / "r"), "--party", "cache=https://127.0.0.1:9445/cache/")
    assert made.returncode == 0, made.stderr
    parties = json.loads((tmp_path / "r" / "pki.json").read_text(encoding="utf-8"))["parties"]
    assert parties["cache"] == "https://127.0.0.1:9445/cache/" and set(parties) == set(party_names())


def test_the_iut_party_names_are_the_setups_parties() -> None:
    from sdcp_conformance.harness.role_spec import spec_of

    assert set(IUT_PARTY_NAMES["verifier"]) == set(spec_of("verifier").parties())
    assert set(IUT_PARTY_NAMES["drafter"]) == set(spec_of("drafter").parties())
    assert set(IUT_PARTY_NAMES["router"]) == set(spec_of("router").parties())
    assert party_names() == tuple(spec.split("=")[0] for spec in DEFAULT_PARTIES)


def test_pki_init_warns_that_the_ports_it_chose_are_bound_later(tmp_path: Path) -> None:
    done = cli("pki", "init", str(tmp_path / "iut"), "--iut", "verifier")
    line = one_line(done, 0, "warning:", "bound only when `certify` starts", "exits 4", "--party NAME=BASE_URI")
    ports = re.findall(r":(\d+)", line)
    target = (tmp_path / "iut" / "target.toml").read_text(encoding="utf-8")
    assert len(ports) == 4 and all(f":{port}/" in target for port in ports)  # router, cache, two drafters
    one_line(cli("pki", "init", str(tmp_path / "plain")), 0, "warning:", "examples, not checked")
    every = [f"--party={spec}" for spec in DEFAULT_PARTIES]
    quiet = cli("pki", "init", str(tmp_path / "all"), *every)
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr


def test_pki_init_for_a_router_names_the_target_model_and_the_digests_contracts_carry(tmp_path: Path) -> None:
    from sdcp_conformance.harness.contexts.router import TARGET_MODEL
    from sdcp_conformance.harness.specs.router import DRAFTER_MODELS
    from sdcp_conformance.models.registry import mock_model

    done = cli("pki", "init", str(tmp_path / "iut"), "--iut", "router")
    assert done.returncode == 0, done.stderr
    target = mock_model(TARGET_MODEL)
    assert f"target model {TARGET_MODEL}" in done.stdout
    assert f"target    SHA-256 {target.model_sha256.hex()}" in done.stdout
    assert f"tokenizer SHA-256 {target.tokenizer_sha256.hex()}" in done.stdout
    for _, model in DRAFTER_MODELS:
        assert mock_model(model).model_sha256.hex() in done.stdout


# --------------------------------------------------------------------------- serve


def test_serve_refuses_a_router_uri_that_is_not_https_at_start(tmp_path: Path) -> None:
    assert cli("pki", "init", str(tmp_path / "p")).returncode == 0
    one_line(cli("serve", "verifier", "--pki", str(tmp_path / "p"), "--router", "http://127.0.0.1:8441/router/",
                 timeout=60), 2, "--router", "'http://127.0.0.1:8441/router/'", "HTTPS only")
    one_line(cli("serve", "drafter", "--pki", str(tmp_path / "p"), "--party", "drafter-1", "--router",
                 "https://127.0.0.1:8441/router/", "--cache", "http://127.0.0.1:8445/cache/", timeout=60), 2,
             "--cache", "HTTPS only")


def test_a_verifier_says_once_that_its_router_does_not_answer_then_once_that_it_does(
        caplog: pytest.LogCaptureFixture) -> None:
    """Until `certify` starts, the harness's router is not listening: one line, not one every interval."""
    from sdcp_conformance.reference.verifier.app import VerifierApp

    answers: list[bool] = [False] * 6 + [True] * 3 + [False] * 3 + [True] * 2

    async def put_status(_status: Any) -> None:
        if not answers.pop(0):
            raise ConnectionRefusedError("refused")
        if not answers:
            raise asyncio.CancelledError

    stub = SimpleNamespace(router=SimpleNamespace(put_status=put_status), status_interval_s=0.001,
                           status=lambda: SimpleNamespace(to_obj=dict))
    with caplog.at_level(logging.WARNING, logger="sdcp_conformance.reference.verifier.app"), \
            pytest.raises(asyncio.CancelledError):
        asyncio.run(VerifierApp.report_status_forever(stub))  # type: ignore[arg-type]
    said = [record.getMessage() for record in caplog.records]
    assert len(said) == 4, said  # failed (once), reached again (once), failed again (once), reached (once)
    assert "failed" in said[0] and "quietly" in said[0] and "`certify`" in said[0] and "failed" in said[2]
    assert said[1] == said[3] == "status reports reach the router again"


# --------------------------------------------------------------------------- bundles and report folders


def test_second_run_into_one_report_folder_is_refused_and_a_corrupt_bundle_is_one_line(tmp_path: Path) -> None:
    folder, bundle = tmp_path / "run", tmp_path / "bundle.zip"
    done = cli("certify", "--only", SANITY, "--seed", "3", "--report-dir", str(folder), "--bundle", str(bundle))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    written = (folder / "report.json").read_bytes()
    one_line(cli("certify", "--only", SANITY, "--seed", "4", "--report-dir", str(folder)), 2,
             f"--report-dir {folder} already holds the reports of another run", "its own folder")
    assert (folder / "report.json").read_bytes() == written  # untouched
    # a flipped byte inside the deflated attestation: the bundle is corrupt, said in one line (exit 1: rejected)
    data = bytearray(bundle.read_bytes())
    with zipfile.ZipFile(bundle) as archive:
        info = archive.getinfo(ATTESTATION_NAME)
    assert info.compress_type == zipfile.ZIP_DEFLATED
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    data[start + info.compress_size // 2] ^= 0x5A
    corrupt = tmp_path / "corrupt.zip"
    corrupt.write_bytes(bytes(data))
    line = one_line(cli("bundle", "verify", str(corrupt)), 1, "REJECTED", str(corrupt))
    assert "corrupt" in line or "CRC" in line


def test_certify_into_a_report_folder_that_cannot_be_created(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x", encoding="utf-8")
    one_line(cli("certify", "--only", SANITY, "--report-dir", str(blocker)), 2, "is a file")


def _document(role: str, target: str | None, verdicts: dict[str, str]) -> dict[str, Any]:
    return {"format": "sdcp-conformance-report/2", "run": {"role": role, "target": target},
            "results": [{"id": case, "run": "main", "verdict": verdict, "message": ""}
                        for case, verdict in verdicts.items()]}


def test_report_diff_refuses_runs_of_different_roles_or_targets_unless_forced(tmp_path: Path) -> None:
    runs = {"verifier": _document("verifier", None, {"VER-SANITY-001": "PASSED"}),
            "router": _document("router", None, {"RTR-SANITY-001": "PASSED"}),
            "target-a": _document("verifier", "a/target.toml", {"VER-SANITY-001": "PASSED"}),
            "mutant": _document("verifier", None, {"VER-SANITY-001": "FAILED"})}
    for name, document in runs.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "report.json").write_text(json.dumps(document), encoding="utf-8")
    verifier, router, target = (str(tmp_path / name) for name in ("verifier", "router", "target-a"))
    one_line(cli("report", "diff", verifier, router), 2, "different roles (verifier, router)", "--force")
    one_line(cli("report", "diff", verifier, target), 2, "different targets", "a/target.toml", "--force")
    forced = cli("report", "diff", verifier, router, "--force")
    assert forced.returncode == 0 and "1 new" in forced.stdout and "1 removed" in forced.stdout, forced.stdout
    mutated = cli("report", "diff", verifier, str(tmp_path / "mutant"))  # one role, one target: a regression
    assert mutated.returncode == 1 and "PASSED → FAILED" in mutated.stdout


# --------------------------------------------------------------------------- mutants, info, help


def test_an_unknown_mutant_lists_the_mutants_of_the_role_in_question() -> None:
    from sdcp_conformance.mutants.catalogue import mutants_for

    names = {role: {mutant.name for mutant in mutants_for(role)} for role in ("verifier", "drafter", "router")}
    for words, role in ((["certify"], "verifier"), (["certify", "--role", "router"], "router"),
                        (["certify", "--role", "drafter"], "drafter")):
        line = one_line(cli(*words, "--mutant", "nosuch"), 2, "no mutant named 'nosuch'",
                        f"the {role}'s {len(names[role])} mutants", f"selftest --role {role} --list")
        listed = set(re.findall(r"[a-z0-9]+(?:-[a-z0-9]+)+", line.split("mutants:", 1)[1]))
        others = set().union(*(found for other, found in names.items() if other != role))
        assert names[role] <= listed and not (listed & others - names[role]), line
    listed = cli("selftest", "--role", "drafter", "--list")
    assert listed.returncode == 0 and len(listed.stdout.splitlines()) == len(names["drafter"]) + 1
    assert all(any(line.startswith(name + " ") for line in listed.stdout.splitlines()) for name in names["drafter"])


def test_certify_help_points_at_a_command_that_lists_mutants_and_fuzz_help_names_every_role() -> None:
    certify_help = " ".join(CliRunner().invoke(main, ["certify", "--help"], terminal_width=400).output.split())
    assert "`selftest --role ROLE --list` lists each role's mutants" in certify_help
    fuzz_help = " ".join(CliRunner().invoke(main, ["fuzz", "--help"], terminal_width=400).output.split())
    assert "Fuzz a verifier IUT" not in fuzz_help and "verifier, drafter or router" in fuzz_help
    top = " ".join(CliRunner().invoke(main, ["--help"], terminal_width=400).output.split())
    assert "Fuzz a verifier, drafter or router IUT (--role)" in top


@pytest.mark.parametrize("role", ["verifier", "drafter", "router"])
def test_info_lists_each_section_once_draft_sections_with_a_section_sign(role: str) -> None:
    from sdcp_conformance.cli import VERIFIER_AREAS

    for area, _count, text in role_areas(role):
        if role == "verifier" and area in VERIFIER_AREAS:
            continue  # described in words
        parts = text.split(", ")
        assert len(parts) == len(set(parts)), (area, text)
        assert all(re.fullmatch(r"§\d+(\.\d+)*|P1-[A-Z]+-\d+", part) for part in parts), (area, text)
        profile = [part.startswith("P1-") for part in parts]
        assert profile == sorted(profile), (area, text)  # the draft's sections first


# --------------------------------------------------------------------------- seeds


SEEDED = (["certify"], ["fuzz"], ["selftest"], ["generate", "--prompt", "the cat"],
          ["serve", "drafter", "--pki", "{folder}", "--router", "https://127.0.0.1:9/r/", "--cache",
           "https://127.0.0.1:9/c/"])


@pytest.mark.parametrize("given", SEEDED, ids=lambda words: " ".join(w for w in words[:2] if not w.startswith("-")))
def test_every_seed_has_one_range_and_one_default(given: list[str], tmp_path: Path) -> None:
    from sdcp_conformance.cli import load_command

    words = [word for word in given[:2] if not word.startswith("-")]
    args = [word.replace("{folder}", str(tmp_path)) for word in given]

    command = load_command(words[0])
    for word in words[1:]:
        assert isinstance(command, click.Group)
        found = command.get_command(click.Context(command), word)
        assert found is not None
        command = found
    [option] = [param for param in command.params if "--seed" in getattr(param, "opts", ())]
    assert isinstance(option.type, click.IntRange)
    assert (option.type.min, option.type.max) == (0, SEED_MAX) and option.default is None
    assert "drawn at random and printed" in (getattr(option, "help", "") or "")
    one_line(cli(*args, "--seed", str(SEED_MAX + 1)), 2, "'--seed'", "4294967295")
    one_line(cli(*args, "--seed", "-1"), 2, "'--seed'")


def test_a_drawn_seed_is_printed_and_replays(tmp_path: Path) -> None:
    done = cli("certify", "--only", SANITY, "--report-dir", str(tmp_path / "a"))
    assert done.returncode == 0, done.stderr
    seed = int(re.search(r"seed (\d+)", done.stdout).group(1))  # type: ignore[union-attr]
    assert 0 <= seed <= SEED_MAX
    assert json.loads((tmp_path / "a" / "report.json").read_text(encoding="utf-8"))["run"]["seed"] == seed


def test_usage_errors_of_click_itself_are_one_line_too() -> None:
    one_line(cli("certify", "--no-such-option"), 2, "No such option", "--help` lists the options")
    one_line(cli("--no-such-option"), 2, "No such option")
    one_line(cli("certfy"), 2, "did you mean 'certify'")
    one_line(cli("report", "diff"), 2, "Missing argument")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-n", "0"]))
