"""Drafter target files: what `pki init --iut drafter` writes, and what `load_target` refuses."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import pytest

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.harness.certify import default_catalogue, models_required
from sdcp_conformance.harness.role_spec import spec_of
from sdcp_conformance.harness.runner import run_case
from sdcp_conformance.harness.suites import role_suite
from sdcp_conformance.harness.target import load_target, require_models
from sdcp_conformance.judge import Verdict


@pytest.fixture
def written(tmp_path: Path) -> Path:
    _, path, text = spec_of("drafter").iut_setup(tmp_path / "pki", {})
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
    assert target.role == "drafter" and target.models == ("bigram-draft-near", "ctx-draft-near")
    assert len(set((target.base_uri, target.router, target.cache, *target.verifiers))) == 5
    assert target.extra == {}


def test_a_known_proposal_timeout_is_kept(written: Path) -> None:
    text = written.read_text(encoding="utf-8") + "proposal_timeout_s = 4\n"
    written.write_text(text, encoding="utf-8")
    assert load_target(written).extra == {"proposal_timeout_s": 4}


@pytest.mark.parametrize(("old", "new", "message"), [
    ('models = ["bigram-draft-near", "ctx-draft-near"]', 'models = ["bigram"]', "not a draft model"),
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


CTX_CASES = {"DRF-6.3-DISCARD-003", "DRF-6.3-DISCARD-004", "DRF-6.2-OUTSTANDING-004", "DRF-P1-DRF-6-RESYNC-003",
             "DRF-P1-DRF-7-004", "DRF-P1-DRF-7-005", "DRF-6.9-NEW-DRAFTER-003"}


class _Lacking:
    """An environment whose target serves the bigram draft model only (all ``run_case`` asks before skipping)."""

    def capabilities(self) -> set[str]:
        return {"model:bigram-draft-near"}


def test_a_target_without_the_context_dependent_model_skips_its_cases_naming_it(written: Path) -> None:
    target = load_target(_rewrite(written, 'models = ["bigram-draft-near", "ctx-draft-near"]',
                                  'models = ["bigram-draft-near"]'))
    catalogue = default_catalogue("drafter")
    selected = catalogue.select([])
    assert {case.id for case in selected if "model:ctx-draft-near" in case.requires} == CTX_CASES
    require_models(target, models_required(catalogue, selected))  # optional: no usage error
    for case in selected:
        if case.id in CTX_CASES:
            result = asyncio.run(run_case(_Lacking(), case, seed=1))  # type: ignore[arg-type]
            assert result.verdict is Verdict.SKIPPED and "ctx-draft-near" in result.message, result
    without_base = dataclasses.replace(target, models=("ctx-draft-near",))
    with pytest.raises(InvalidArgument, match="bigram-draft-near"):  # the base model is no option
        require_models(without_base, models_required(catalogue, selected))
