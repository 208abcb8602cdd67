"""Finding the mock models by manifest id."""

from __future__ import annotations

from pathlib import Path

import pytest

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.models.registry import ENV_VAR, load_manifest, mock_model, mock_models_root

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
