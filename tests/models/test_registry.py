"""Finding the mock models by manifest id."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.models import registry
from sdcp_conformance.models.registry import ENV_VAR, load_manifest, manifest_problems, mock_model, mock_models_root

from .conftest import MOCK_MODELS


def test_default_root_is_the_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert mock_models_root() == MOCK_MODELS
    model = mock_model("ctx")
    assert model.path == MOCK_MODELS / "ctx" and model.role == "target"


def test_environment_variable_overrides_the_root(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    with pytest.raises(InvalidArgument, match=ENV_VAR):
        mock_models_root()
    (tmp_path / "manifest.json").write_bytes((MOCK_MODELS / "manifest.json").read_bytes())
    assert mock_models_root() == tmp_path
    assert load_manifest().model("bigram").path == tmp_path / "bigram"


def test_unknown_model_id_is_refused() -> None:
    with pytest.raises(InvalidArgument, match="known"):
        load_manifest(MOCK_MODELS).model("gpt-5")


def test_drafters_point_at_their_targets() -> None:
    manifest = load_manifest(MOCK_MODELS)
    assert {m.model_id for m in manifest.drafters_for("ctx")} == {"ctx-draft-near", "ctx-draft-far"}
    assert {m.closed_form for m in manifest.drafters_for("bigram")} == {"bigram"}


def _installed_copy(folder: Path) -> Path:
    """What a wheel carries (``setup.py``): the manifest, the files it lists, the greedy prompts."""
    manifest = json.loads((MOCK_MODELS / "manifest.json").read_text(encoding="utf-8"))
    names = ["manifest.json", manifest["greedy_prompts"]]
    names += [f"{model['path']}/{name}" for model in manifest["models"] for name in model["bytes"]]
    for name in names:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(MOCK_MODELS / name, folder / name)
    return folder


def test_an_installed_copy_is_found_before_a_checkout_and_checked_against_the_manifest(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    copy = _installed_copy(tmp_path / "mock_models")
    monkeypatch.setattr(registry, "PACKAGED", copy)
    registry._checked.cache_clear()
    assert mock_models_root() == copy
    assert mock_model("ctx").path == copy / "ctx"
    weights = copy / "bigram" / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1  # one bit of one weight
    weights.write_bytes(bytes(data))
    registry._checked.cache_clear()
    with pytest.raises(InvalidArgument, match=r"bigram/model\.safetensors does not have the manifest's model_sha256"):
        mock_models_root()
    (copy / "ctx" / "tokenizer.json").unlink()
    assert "ctx/tokenizer.json is missing" in manifest_problems(copy)
    registry._checked.cache_clear()


def test_without_an_installed_copy_or_a_checkout_the_error_says_what_to_do(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setattr(registry, "PACKAGED", tmp_path / "installed")
    monkeypatch.setattr(registry, "CHECKOUT", tmp_path / "checkout")
    with pytest.raises(InvalidArgument, match=f"reinstall sdcp-conformance, or set {ENV_VAR}"):
        mock_models_root()


def test_the_checkout_copy_matches_its_manifest() -> None:
    assert manifest_problems(MOCK_MODELS) == []
