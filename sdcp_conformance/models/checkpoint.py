"""A Hugging Face Llama checkpoint folder: its config, weights, tokenizer and P1-HASH-1 digests."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file
from tokenizers import Tokenizer

from sdcp_conformance.models.config import CONFIG_FILE, WEIGHTS_FILE, LlamaConfig, read_checkpoint_config

TOKENIZER_FILE = "tokenizer.json"


def sha256_file(path: Path) -> bytes:
    """SHA-256 of a file's bytes, read in chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.digest()


@dataclass(frozen=True)
class Checkpoint:
    """A folder holding ``config.json``, a single ``model.safetensors`` and ``tokenizer.json``."""

    path: Path
    config: LlamaConfig
    raw_config: dict[str, Any]

    @classmethod
    def open(cls, path: Path | str) -> Checkpoint:
        folder = Path(path)
        raw = read_checkpoint_config(folder)
        return cls(path=folder, config=LlamaConfig.from_hf(raw), raw_config=raw)

    @property
    def model_sha256(self) -> bytes:
        """P1-HASH-1: "``target`` and each ``drafters`` entry is the SHA-256 of the
        model's single ``model.safetensors`` file, byte for byte"."""
        return sha256_file(self.path / WEIGHTS_FILE)

    @property
    def tokenizer_sha256(self) -> bytes:
        """P1-HASH-1: "``tokenizer`` is the SHA-256 of its ``tokenizer.json``"."""
        return sha256_file(self.path / TOKENIZER_FILE)

    def tensors(self, device: torch.device | str = "cpu") -> dict[str, torch.Tensor]:
        """Every tensor of ``model.safetensors``, in its stored dtype."""
        return load_file(self.path / WEIGHTS_FILE, device=str(device))

    def tokenizer(self) -> Tokenizer:
        return Tokenizer.from_file(str(self.path / TOKENIZER_FILE))


__all__ = ["CONFIG_FILE", "TOKENIZER_FILE", "WEIGHTS_FILE", "Checkpoint", "sha256_file"]
