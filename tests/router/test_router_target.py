"""A router's target file: what `pki init --iut router` writes loads back, and a wrong one is refused in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.harness.role_spec import spec_of
from sdcp_conformance.harness.target import load_target
from sdcp_conformance.models.registry import mock_model


def test_pki_init_writes_a_router_target_and_its_configuration(tmp_path: Path) -> None:
    pki, path, text = spec_of("router").iut_setup(tmp_path, {})
    config = load_target(path)
    assert config.role == "router" and config.models == () and config.base_uri == pki.base_uris["router"]
    assert config.cache == pki.base_uris["cache"] and len(config.verifiers) == 3 and len(config.drafters) == 3
    models = config.extra["drafter_models"]
    for uri, model in zip(config.drafters, models, strict=True):
        assert f"{uri}  model {model}, SHA-256 {mock_model(model).model_sha256.hex()}" in text
    words = spec_of("router").serve_command(pki)
    assert words[:3] == ["sdcp-conformance", "serve", "router"]
    assert [words[i + 1] for i, word in enumerate(words) if word == "--verifier"] == list(config.verifiers)
    assert [words[i + 1] for i, word in enumerate(words) if word == "--drafter"] == [
        f"{uri}={model}" for uri, model in zip(config.drafters, models, strict=True)]


@pytest.mark.parametrize(("change", "message"), [
    (lambda text: text.replace('drafter_models = ["bigram-draft-near", "bigram-draft-far", "bigram-draft-near"]',
                               'drafter_models = ["bigram-draft-near"]'), "one draft mock model per drafter"),
    (lambda text: text.replace('"bigram-draft-far"', '"bigram"'), "is not a draft model"),
    (lambda text: text.replace('[target]\n', '[target]\nmodels = ["bigram"]\n'), "serves no model"),
    (lambda text: text.replace("drafter_models", "drafter_modelz"), "unknown key"),
])
def test_a_wrong_router_target_is_refused(tmp_path: Path, change: object, message: str) -> None:
    _, path, _ = spec_of("router").iut_setup(tmp_path, {})
    assert callable(change)
    path.write_text(change(path.read_text()), encoding="utf-8")
    with pytest.raises(InvalidArgument, match=message):
        load_target(path)
