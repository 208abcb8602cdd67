"""Finding the shipped mock models (P1-MODEL-1) by their manifest id."""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sdcp_conformance.errors import InvalidArgument

ENV_VAR = "SDCP_MOCK_MODELS"
MANIFEST_FILE = "manifest.json"


def mock_models_root() -> Path:
    """D-MODEL-4: where the mock models live.

    ``$SDCP_MOCK_MODELS`` if set; otherwise ``mock_models/`` next to the
    package directory (a source checkout or an editable install). A wheel
    does not carry the checkpoints; point the variable at a checkout then.
    """
    configured = os.environ.get(ENV_VAR)
    root = Path(configured) if configured else Path(__file__).resolve().parents[2] / "mock_models"
    if not (root / MANIFEST_FILE).is_file():
        raise InvalidArgument(f"no mock model manifest at {root}; set {ENV_VAR} to the "
                              "mock_models folder of an sdcp-conformance checkout")
    return root


@dataclass(frozen=True)
class MockModel:
    """One manifest entry: a checkpoint folder and its P1-HASH-1 digests."""

    model_id: str
    role: str
    path: Path
    model_sha256: bytes
    tokenizer_sha256: bytes
    vocab_size: int
    drafts_for: str | None
    closed_form: str | None


@dataclass(frozen=True)
class GreedyPrompt:
    """A ctx prompt whose float32 greedy continuation keeps the manifest's margin at every step."""

    text: str
    tokens: tuple[int, ...]
    greedy: tuple[int, ...]


@dataclass(frozen=True)
class GreedyPrompts:
    model_id: str
    margin: float
    steps: int
    prompts: tuple[GreedyPrompt, ...]


@dataclass(frozen=True)
class Manifest:
    """``mock_models/manifest.json``: the models, the shared tokenizer digest and V."""

    root: Path
    vocab_size: int
    tokenizer_sha256: bytes
    models: dict[str, MockModel]
    greedy_prompts_file: str

    def model(self, model_id: str) -> MockModel:
        if model_id not in self.models:
            raise InvalidArgument(f"no mock model {model_id!r}; known: {sorted(self.models)}")
        return self.models[model_id]

    def drafters_for(self, target_id: str) -> list[MockModel]:
        return [m for m in self.models.values() if m.drafts_for == target_id]

    def greedy_prompts(self) -> GreedyPrompts:
        raw = json.loads((self.root / self.greedy_prompts_file).read_text(encoding="utf-8"))
        prompts = tuple(GreedyPrompt(p["text"], tuple(p["tokens"]), tuple(p["greedy"]))
                        for p in raw["prompts"])
        return GreedyPrompts(raw["model"], float(raw["margin"]), int(raw["steps"]), prompts)


def _model(root: Path, entry: dict[str, Any]) -> MockModel:
    return MockModel(
        model_id=entry["id"],
        role=entry["role"],
        path=root / entry["path"],
        model_sha256=bytes.fromhex(entry["model_sha256"]),
        tokenizer_sha256=bytes.fromhex(entry["tokenizer_sha256"]),
        vocab_size=int(entry["vocab_size"]),
        drafts_for=entry.get("drafts_for"),
        closed_form=entry.get("closed_form"),
    )


def load_manifest(root: Path | None = None) -> Manifest:
    """Read the manifest under ``root`` (default: :func:`mock_models_root`).

    Kept once read, keyed by the file's path, size and modification time: the oracles ask for a model's
    entry on every token they compute, and parsing the file each time was most of their cost.
    """
    folder = root if root is not None else mock_models_root()
    stat = (folder / MANIFEST_FILE).stat()
    return _read_manifest(folder, stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=8)
def _read_manifest(folder: Path, size: int, mtime_ns: int) -> Manifest:
    del size, mtime_ns  # part of the cache key only
    raw = json.loads((folder / MANIFEST_FILE).read_text(encoding="utf-8"))
    return Manifest(
        root=folder,
        vocab_size=int(raw["vocab_size"]),
        tokenizer_sha256=bytes.fromhex(raw["tokenizer_sha256"]),
        models={entry["id"]: _model(folder, entry) for entry in raw["models"]},
        greedy_prompts_file=raw["greedy_prompts"],
    )


def mock_model(model_id: str) -> MockModel:
    """The shipped mock model with manifest id ``model_id`` (e.g. ``"bigram"``, ``"ctx"``)."""
    return load_manifest().model(model_id)


__all__ = [
    "ENV_VAR",
    "MANIFEST_FILE",
    "GreedyPrompt",
    "GreedyPrompts",
    "Manifest",
    "MockModel",
    "load_manifest",
    "mock_model",
    "mock_models_root",
]
