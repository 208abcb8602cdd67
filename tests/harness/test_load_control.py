"""Load control for a vendor's verifier (issue 41 item 5): skip reasons naming the key that enables a case, the
target file's ``load_hook`` / ``load_command``, the reference's ``serve verifier --load-hook``, and VER-6.5-ESC-009
run (not skipped) against a separately served reference verifier whose target names the hook."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.harness.capabilities import how_to_enable, skip_reason
from sdcp_conformance.harness.load_control import LoadControlError, command_words, run_load_command
from sdcp_conformance.harness.target import load_target, render_target
from sdcp_conformance.reference.verifier.app import LOAD_HOOK_PATH, VerifierApp, VerifierConfig
from sdcp_conformance.transport.types import Request
from tests.harness.separate_process import CLI, STEP_TIMEOUT_S, certify_target, separate_iut

ROUTER = "https://127.0.0.1:2/router/"
LOAD_CASES = ("VER-6.5-ESC-009", "VER-6.5-ESC-010")


def test_skip_reasons_name_the_key_or_option_that_enables_each_capability() -> None:
    assert "[target] load_hook" in how_to_enable("load:control") and "load_command" in how_to_enable("load:control")
    assert "[target] pinned_load" in how_to_enable("load:pinned")
    assert "[harness] proposal_timeout_s" in how_to_enable("timeout:proposal")
    assert '"ctx" to [target] models' in how_to_enable("model:ctx")
    assert "at least 3 base URIs in [harness] verifiers" in how_to_enable("verifiers:3")
    assert "[harness] drafters" in how_to_enable("drafters:2") and "drafter_models" in how_to_enable("drafters:2")
    assert "without --target" in how_to_enable("embedded")
    assert skip_reason(["load:control"]).startswith("the target lacks load:control (set [target] load_hook")


def test_every_capability_a_case_requires_has_a_key_to_name() -> None:
    from sdcp_conformance.harness.certify import default_catalogue

    for role in ("verifier", "drafter", "router"):
        for case in default_catalogue(role).cases.values():
            for need in case.requires:
                assert how_to_enable(need) != "see the case's black-box note", (case.id, need)


def _target(tmp_path: Path, extra: str, role: str = "verifier") -> Path:
    (tmp_path / "ca.pem").write_text("", encoding="utf-8")
    harness = {"verifier": 'router = "https://127.0.0.1:3/router/"\ncache = "https://127.0.0.1:4/cache/"\n'
                           'drafters = ["https://127.0.0.1:5/d1/", "https://127.0.0.1:6/d2/"]\n'}[role]
    path = tmp_path / "target.toml"
    path.write_text(f'[target]\nrole = "{role}"\nbase_uri = "https://127.0.0.1:1/verifier/"\nca = "ca.pem"\n'
                    f'models = ["bigram", "ctx"]\n{extra}\n[harness]\npki = "pki"\n{harness}', encoding="utf-8")
    return path


def test_the_target_file_takes_a_load_hook_or_a_load_command(tmp_path: Path) -> None:
    hook = "https://127.0.0.1:1/verifier/test-control/load"
    config = load_target(_target(tmp_path, f'load_hook = "{hook}"'))
    assert config.load_hook == hook and config.load_command == ""
    assert f'load_hook = "{hook}"' in render_target(config, tmp_path)
    config = load_target(_target(tmp_path, 'load_command = "set-load --to {load}"'))
    assert config.load_command == "set-load --to {load}" and command_words(config.load_command, 7)[-1] == "7"
    assert command_words(config.load_command, None)[-1] == "none"
    for extra, said in (('load_hook = "http://127.0.0.1:1/load"', "must be an https:// URI"),
                        ('load_command = "set-load"', "must name {load}"),
                        (f'load_hook = "{hook}"\nload_command = "x {{load}}"', "not both")):
        with pytest.raises(InvalidArgument, match=said):
            load_target(_target(tmp_path, extra))


def test_a_load_command_is_run_with_the_load_and_its_failure_said_in_one_line(tmp_path: Path) -> None:
    written = tmp_path / "loads.txt"
    script = f"import sys; open({str(written)!r}, 'a').write(sys.argv[1] + '\\n')"
    command = f"{sys.executable} -c {json.dumps(script)} {{load}}"
    asyncio.run(run_load_command(command, 90))
    asyncio.run(run_load_command(command, None))
    assert written.read_text(encoding="utf-8").split() == ["90", "none"]
    failing = f"{sys.executable} -c \"import sys; sys.exit('no such load: ' + sys.argv[1])\" {{load}}"
    with pytest.raises(LoadControlError, match="exited 1: no such load: 5"):
        asyncio.run(run_load_command(failing, 5))
    with pytest.raises(LoadControlError, match="could not start"):
        asyncio.run(run_load_command("/no/such/tool {load}", 5))


def test_check_says_whether_the_load_command_answers(tmp_path: Path) -> None:
    from sdcp_conformance.harness.check import _load_control

    ok = load_target(_target(tmp_path, f'load_command = "{sys.executable} -c pass {{load}}"'))
    line = _load_control(ok, None)
    assert line is not None and line.outcome == "ok" and "none` exited 0" in line.detail
    bad = load_target(_target(tmp_path, 'load_command = "/no/such/tool {load}"'))
    line = _load_control(bad, None)
    assert line is not None and line.outcome == "FAIL" and "could not start" in line.detail
    assert _load_control(load_target(_target(tmp_path, "")), None) is None


class _Router:
    async def put_status(self, status: Any) -> None:
        pass

    async def post_event(self, event: Any) -> None:
        pass


def _app(*, hook: bool, pinned: int | None = None) -> VerifierApp:
    config = VerifierConfig(base_uri="https://127.0.0.1:1/verifier/", routers=frozenset({ROUTER}), load_hook=hook,
                            pinned_load=pinned)
    from tests.reference.test_verifier_app import FakeCache, FakeModel

    return VerifierApp(config, FakeModel(), FakeCache(), _Router())  # type: ignore[arg-type]


def _put(app: VerifierApp, body: bytes, peer: str | None = ROUTER, method: str = "PUT") -> int:
    request = Request(method, f"/verifier/{LOAD_HOOK_PATH}", "", (), body, peer)
    return asyncio.run(app(request)).status


def test_the_reference_offers_the_hook_only_when_asked_and_only_to_its_router() -> None:
    app = _app(hook=True, pinned=20)
    assert app.load() == 20
    assert _put(app, b'{"load": 90}') == 204 and app.load() == 90
    assert _put(app, b'{"load": null}') == 204 and app.load() == 20  # back to what it was started with
    assert _put(app, b'{"load": 90}', peer="https://127.0.0.1:9/drafter-1/") == 403 and app.load() == 20
    assert _put(app, b'{"load": 101}') == 400 and _put(app, b"90") == 400 and _put(app, b"{}") == 400
    assert _put(app, b"", method="GET") == 405
    plain = _app(hook=False)
    assert _put(plain, b'{"load": 90}') == 404 and plain.load() == 0


@pytest.fixture
def hooked_verifier(tmp_path: Path, request: pytest.FixtureRequest) -> Any:
    """`pki init --iut verifier`, the printed `serve verifier` with --load-hook (and the test's mutant), and the
    `load_hook` line `pki init` printed added under [target]: what a vendor does with its own hook."""
    mutant = getattr(request, "param", None)
    extra = ("--load-hook", *(("--mutant", mutant) if mutant else ()))
    with separate_iut("verifier", tmp_path / "iut", tmp_path / "verifier.err", extra) as (target, base_uri, printed):
        hook_line = [line.strip() for line in printed.splitlines() if line.strip().startswith("load_hook = \"")][-1]
        assert hook_line == f'load_hook = "{base_uri}{LOAD_HOOK_PATH}"'
        text = target.read_text(encoding="utf-8").replace("[harness]", f"{hook_line}\n\n[harness]")
        target.write_text(text, encoding="utf-8")
        yield target


@pytest.mark.slow
def test_a_target_with_a_load_hook_runs_the_load_cases_against_a_separate_verifier(hooked_verifier: Path,
                                                                                  tmp_path: Path) -> None:
    checked = subprocess.run([*CLI, "check", "--target", str(hooked_verifier)], capture_output=True, text=True,
                             timeout=STEP_TIMEOUT_S)
    assert checked.returncode == 0 and "[  ok] load control: " in checked.stdout, checked.stdout + checked.stderr
    done, document = certify_target(hooked_verifier, LOAD_CASES, tmp_path / "reports", timeout_s=STEP_TIMEOUT_S * 2)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    verdicts = {r["id"]: r["verdict"] for r in document["results"] if r["run"] == "main"}
    assert verdicts == {"VER-6.5-ESC-009": "PASSED", "VER-6.5-ESC-010": "PASSED"}, verdicts
    assert not document["run"]["skipped"]


@pytest.mark.slow
@pytest.mark.parametrize("hooked_verifier", ["self-decode-despite-load"], indirect=True)
def test_through_the_hook_the_load_case_fails_a_verifier_that_self_decodes_despite_its_load(hooked_verifier: Path,
                                                                                           tmp_path: Path) -> None:
    done, document = certify_target(hooked_verifier, ["VER-6.5-ESC-009"], tmp_path / "reports",
                                    timeout_s=STEP_TIMEOUT_S * 2)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    verdicts = {r["id"]: r["verdict"] for r in document["results"] if r["run"] == "main"}
    assert verdicts == {"VER-6.5-ESC-009": "FAILED"}, verdicts
