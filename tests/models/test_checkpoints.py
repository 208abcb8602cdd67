"""The committed mock checkpoints: reproducible bytes, P1-HASH-1 digests, one shared tokenizer."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from tokenizers import Tokenizer

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.models.checkpoint import Checkpoint, sha256_file
from sdcp_conformance.models.config import LlamaConfig
from sdcp_conformance.models.registry import Manifest

from .conftest import MOCK_MODELS, load_script

GENERATED_SUFFIXES = {".json", ".safetensors"}


def generated_files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.suffix in GENERATED_SUFFIXES}


def test_regenerating_reproduces_the_committed_bytes(tmp_path: Path) -> None:
    load_script("generate").generate(tmp_path)
    fresh, committed = generated_files(tmp_path), generated_files(MOCK_MODELS)
    assert sorted(fresh) == sorted(committed)
    differing = [name for name in fresh if fresh[name] != committed[name]]
    assert not differing, f"regenerated files differ: {differing}"


def test_manifest_digests_are_sha256_of_the_files(manifest: Manifest) -> None:
    for model in manifest.models.values():
        weights = hashlib.sha256((model.path / "model.safetensors").read_bytes()).digest()
        tokenizer = hashlib.sha256((model.path / "tokenizer.json").read_bytes()).digest()
        assert model.model_sha256 == weights, model.model_id
        assert model.tokenizer_sha256 == tokenizer == manifest.tokenizer_sha256, model.model_id
        checkpoint = Checkpoint.open(model.path)
        assert checkpoint.model_sha256 == weights and checkpoint.tokenizer_sha256 == tokenizer


def test_every_model_has_a_distinct_weight_digest(manifest: Manifest) -> None:
    digests = [m.model_sha256 for m in manifest.models.values()]
    assert len(set(digests)) == len(digests) == 6


def test_roles_and_drafters(manifest: Manifest) -> None:
    targets = {m.model_id for m in manifest.models.values() if m.role == "target"}
    assert targets == {"bigram", "ctx"}
    for target in targets:
        drafters = manifest.drafters_for(target)
        assert len(drafters) >= 2 and all(d.role == "draft" for d in drafters)


def test_vocabulary_size_is_shared_by_config_tokenizer_and_manifest(manifest: Manifest) -> None:
    """P1-HASH-2 (V is config vocab_size) and P1-DRF-3 (drafter and target share the tokenizer)."""
    for model in manifest.models.values():
        config = json.loads((model.path / "config.json").read_text())
        tokenizer = Tokenizer.from_file(str(model.path / "tokenizer.json"))
        assert config["vocab_size"] == model.vocab_size == manifest.vocab_size == 128
        assert tokenizer.get_vocab_size(with_added_tokens=True) == 128
        assert sorted(tokenizer.get_vocab(with_added_tokens=True).values()) == list(range(128))


def test_tokenizer_encodes_and_decodes_words() -> None:
    tokenizer = Checkpoint.open(MOCK_MODELS / "ctx").tokenizer()
    ids = tokenizer.encode("the cat sat on a red stone.").ids
    # "sat" is not a word of the vocabulary.
    assert [tokenizer.id_to_token(i) for i in ids] == ["the", "cat", "<unk>", "on", "a", "red",
                                                      "stone", "."]
    assert tokenizer.decode(tokenizer.encode("a big dog runs").ids) == "a big dog"
    words = [tokenizer.token_to_id(w) for w in ("the", "sun", ".")]
    assert None not in words
    assert tokenizer.decode([w for w in words if w is not None]) == "the sun."


def test_ctx_is_a_multi_layer_gqa_llama(manifest: Manifest) -> None:
    config = Checkpoint.open(manifest.model("ctx").path).config
    assert config.num_hidden_layers >= 2 and config.kv_groups > 1
    assert Checkpoint.open(manifest.model("ctx-draft-far").path).config != config


def test_sha256_file_reads_in_chunks(tmp_path: Path) -> None:
    data = bytes(range(256)) * 10_000  # several chunks of 1 MiB
    (tmp_path / "blob").write_bytes(data)
    assert sha256_file(tmp_path / "blob") == hashlib.sha256(data).digest()


def test_checkpoint_without_weights_is_refused(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(InvalidArgument):
        Checkpoint.open(tmp_path)


@pytest.mark.parametrize("change", [
    {"rope_scaling": {"rope_type": "linear", "factor": 2.0}},
    {"rope_parameters": {"rope_type": "yarn", "rope_theta": 1e4}},
    {"attention_bias": True},
    {"hidden_act": "gelu"},
    {"num_key_value_heads": 3},
    {"model_type": "mistral"},
])
def test_config_refuses_what_the_runtime_does_not_implement(change: dict[str, object]) -> None:
    raw = json.loads((MOCK_MODELS / "ctx" / "config.json").read_text())
    with pytest.raises(InvalidArgument):
        LlamaConfig.from_hf({**raw, **change})


def test_config_reads_rope_theta_from_either_spelling() -> None:
    raw = json.loads((MOCK_MODELS / "ctx" / "config.json").read_text())
    legacy = LlamaConfig.from_hf({**raw, "rope_theta": 500000.0})
    modern = LlamaConfig.from_hf({**raw, "rope_theta": None,
                                  "rope_parameters": {"rope_type": "default", "rope_theta": 5e5}})
    assert legacy.rope_theta == modern.rope_theta == 500000.0
