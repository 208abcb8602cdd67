"""Finding the shipped mock models (P1-MODEL-1) by their manifest id."""

from __future__ import annotations

import functools
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sdcp_conformance.errors import InvalidArgument

ENV_VAR = "SDCP_MOCK_MODELS"
MANIFEST_FILE = "manifest.json"


PACKAGED = Path(__file__).resolve().parents[1] / "mock_models"
"""An installed wheel's copy: the build (``setup.py``) copies the checkout's ``mock_models/`` here."""

CHECKOUT = Path(__file__).resolve().parents[2] / "mock_models"
"""A source checkout's (or an editable install's) folder, the one copy the repository holds."""


def mock_models_root() -> Path:
    """D-MODEL-4: where the mock models live.

    ``$SDCP_MOCK_MODELS`` if set; otherwise the copy the installed package carries
    (``sdcp_conformance/mock_models/`` of a wheel, checked once against the manifest's sizes and
    digests); otherwise ``mock_models/`` next to the package directory (a source checkout or an
    editable install).
    """
    configured = os.environ.get(ENV_VAR)
    if configured:
        root = Path(configured)
        if not (root / MANIFEST_FILE).is_file():
            raise InvalidArgument(f"no mock model manifest at {root}; set {ENV_VAR} to a mock_models folder "
                                  "(or unset it to use the installed package's copy)")
        return root
    if (PACKAGED / MANIFEST_FILE).is_file():
        _checked(PACKAGED)
        return PACKAGED
    if (CHECKOUT / MANIFEST_FILE).is_file():
        return CHECKOUT
    raise InvalidArgument(f"no mock model manifest at {PACKAGED} (an installed wheel's copy) nor at {CHECKOUT} (a "
                          f"checkout's); reinstall sdcp-conformance, or set {ENV_VAR} to a mock_models folder")


def manifest_problems(root: Path) -> list[str]:
    """What in ``root`` differs from its manifest: missing files, sizes, and the P1-HASH-1 digests of each
    model's ``model.safetensors`` and ``tokenizer.json``. Empty when every file is the one the manifest lists."""
    raw = json.loads((root / MANIFEST_FILE).read_text(encoding="utf-8"))
    problems: list[str] = []
    if not (root / raw["greedy_prompts"]).is_file():
        problems.append(f"{raw['greedy_prompts']} is missing")
    for entry in raw["models"]:
        folder = root / entry["path"]
        for name, size in sorted(entry["bytes"].items()):
            path = folder / name
            if not path.is_file():
                problems.append(f"{entry['path']}/{name} is missing")
            elif path.stat().st_size != size:
                problems.append(f"{entry['path']}/{name} has {path.stat().st_size} bytes, not {size}")
        for name, key in (("model.safetensors", "model_sha256"), ("tokenizer.json", "tokenizer_sha256")):
            path = folder / name
            if path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest() != entry[key]:
                problems.append(f"{entry['path']}/{name} does not have the manifest's {key}")
    return problems


@functools.lru_cache(maxsize=4)
def _checked(root: Path) -> None:
    """The installed copy is read once per process and refused if it is not the manifest's (~5 MB hashed)."""
    problems = manifest_problems(root)
    if problems:
        raise InvalidArgument(f"the mock models at {root} do not match their manifest ({'; '.join(problems)}); "
                              "reinstall sdcp-conformance")


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
    "CHECKOUT",
    "ENV_VAR",
    "MANIFEST_FILE",
    "PACKAGED",
    "GreedyPrompt",
    "GreedyPrompts",
    "Manifest",
    "MockModel",
    "load_manifest",
    "manifest_problems",
    "mock_model",
    "mock_models_root",
]
