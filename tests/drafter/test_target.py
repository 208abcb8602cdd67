"""Drafter target files: what `pki init --iut drafter` writes, and what `load_target` refuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.harness.drafter_setup import drafter_iut_setup
from sdcp_conformance.harness.suites import role_suite
from sdcp_conformance.harness.target import load_target


@pytest.fixture
def written(tmp_path: Path) -> Path:
    _, path, text = drafter_iut_setup(tmp_path / "pki", {})
    assert "sdcp-conformance serve drafter" in text and "--cache" in text and "--router" in text
    return path


def _rewrite(path: Path, old: str, new: str) -> Path:
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new), encoding="utf-8")
    return path


def test_the_role_is_registered() -> None:
    suite = role_suite("drafter")
    assert suite.serves == "draft" and {"pki", "router", "cache", "verifiers"} <= suite.harness_keys


def test_pki_init_writes_a_valid_drafter_target(written: Path) -> None:
    target = load_target(written)
    assert target.role == "drafter" and target.models == ("bigram-draft-near",)
    assert len(set((target.base_uri, target.router, target.cache, *target.verifiers))) == 5
    assert target.extra == {}


def test_a_known_proposal_timeout_is_kept(written: Path) -> None:
    text = written.read_text(encoding="utf-8") + "proposal_timeout_s = 4\n"
    written.write_text(text, encoding="utf-8")
    assert load_target(written).extra == {"proposal_timeout_s": 4}


@pytest.mark.parametrize(("old", "new", "message"), [
    ('models = ["bigram-draft-near"]', 'models = ["bigram"]', "not a draft model"),
    ("verifiers = [", "drafters = [", "unknown key"),
    ('[harness]', '[harness]\nproposal_timeout_s = -1', "proposal_timeout_s"),
])
def test_what_a_drafter_target_may_not_say(written: Path, old: str, new: str, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        load_target(_rewrite(written, old, new))


def test_the_harness_and_the_drafter_need_distinct_uris(written: Path) -> None:
    target = load_target(written)
    with pytest.raises(InvalidArgument, match="distinct"):
        load_target(_rewrite(written, f'cache = "{target.cache}"', f'cache = "{target.router}"'))
